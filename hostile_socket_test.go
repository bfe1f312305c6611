package retryhttp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/dial"
	"github.com/retryhttp/retryhttp/policy"
)

// These tests face the Transport, over real sockets, with servers that
// misbehave as net/http's server cannot: each connection is played by
// hand. Their deadlines are upper bounds on a hang, reached only on
// failure; no test asserts how fast anything went.

// A discarded retryable answer whose body never ends, whatever way it
// does not end, delays the retry by the drain bound only: the attempt is
// cut off, its connection closed, and the retry gets its answer.
func TestEndlessDiscardedBodyOnASocket(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		play func(net.Conn, *bufio.Reader)
	}{
		{"a length promised and never sent", playStall("HTTP/1.1 503 Busy\r\nContent-Length: 100\r\n\r\nx")},
		{"a chunked body with no last chunk", playStall("HTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n")},
		{"a chunked body trickling for ever", playTrickle("HTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked\r\n\r\n", "1\r\nx\r\n")},
		{"a body until the close, never closed", playStall("HTTP/1.1 503 Busy\r\n\r\nxxxx")},
	} {
		for _, wait := range []time.Duration{time.Millisecond, 300 * time.Millisecond} {
			t.Run(fmt.Sprintf("%s, retried after %v", tc.name, wait), func(t *testing.T) {
				t.Parallel()
				srv := startConnServer(t, playEach(tc.play, playAnswer(okReply)))
				tr := newBaseTransport(t, withWaits(retryConfig(2, 503), wait, wait))
				hangBound(t, 20*time.Second, func() {
					resp, err := tr.RoundTrip(getRequest(t, t.Context(), srv.URL()))
					if assert.NoError(t, err) {
						assert.Equal(t, 200, resp.StatusCode)
						assert.Equal(t, "ok", readBody(t, resp))
					}
					<-srv.closedByClient(0) // the discarded answer's connection is closed
				})
			})
		}
	}
}

// An answer that is no HTTP/1.1 (HTTP/0.9-style text, a status that is no
// number, a negative or doubled Content-Length, a header section past the
// base's MaxResponseHeaderBytes, which net/http counts over the 1xx
// informational responses too) ends the request with an error and no
// response, never a hang nor a panic, and a POST is never sent twice. An
// answer preceded by hundreds of 1xx responses within that limit is the
// answer.
func TestMalformedAnswerOnASocket(t *testing.T) {
	t.Parallel()
	early := strings.Repeat("HTTP/1.1 103 Early Hints\r\n\r\n", 300) // 8 KiB
	flood := strings.Repeat("HTTP/1.1 103 Early Hints\r\n\r\n", 3000)
	for _, tc := range []struct {
		name, reply string
		ok          bool
	}{
		{"HTTP/0.9 text", "hello world\n", false},
		{"a status past any code", "HTTP/1.1 999999999999 X\r\nContent-Length: 0\r\n\r\n", false},
		{"a negative status", "HTTP/1.1 -1 X\r\nContent-Length: 0\r\n\r\n", false},
		{"a negative length", "HTTP/1.1 503 X\r\nContent-Length: -5\r\n\r\n", false},
		{"two lengths", "HTTP/1.1 503 X\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx", false},
		{"headers past the limit", "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\nContent-Length: 2\r\n\r\nok", false},
		{"informational answers past the header limit", flood + okReply, false},
		{"300 informational answers first", early + okReply, true},
	} {
		for _, method := range []string{"GET", "POST"} {
			t.Run(method+" "+tc.name, func(t *testing.T) {
				t.Parallel()
				var requests sync.Map // the requests the server read, by connection
				srv := startConnServer(t, func(n int, c net.Conn, rd *bufio.Reader) {
					if readRequest(rd) {
						requests.Store(n, true)
						io.WriteString(c, tc.reply)
					}
				})
				base, _ := dial.NewBase()
				base.MaxResponseHeaderBytes = 16 << 10
				t.Cleanup(base.CloseIdleConnections)
				tr := &retryhttp.Transport{Base: base, Policy: withWaits(retryConfig(3, 503), time.Millisecond, time.Millisecond)}
				hangBound(t, 20*time.Second, func() {
					ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
					defer cancel()
					var body io.Reader
					if method == "POST" {
						body = strings.NewReader("payload")
					}
					req, err := http.NewRequestWithContext(ctx, method, srv.URL()+"/v1/items", body)
					if !assert.NoError(t, err) {
						return
					}
					resp, err := tr.RoundTrip(req)
					if tc.ok {
						if assert.NoError(t, err) {
							assert.Equal(t, "ok", readBody(t, resp))
						}
					} else {
						assert.Nil(t, resp, "a response together with an error")
						assert.Error(t, err)
					}
					assert.NoError(t, ctx.Err(), "the call waited out its deadline")
				})
				if method == "POST" {
					n := 0
					requests.Range(func(any, any) bool { n++; return true })
					assert.Equal(t, 1, n, "requests the server read")
				}
			})
		}
	}
}

// A 200 whose body never ends, however it does not end, is the caller's
// to read: only the caller's deadline bounds the reading, under every
// kind of rule (a per-attempt timeout ends with the headers, and a
// hedge's context lives until its body is closed).
func TestEndlessBodyEndsWithTheCallersDeadline(t *testing.T) {
	t.Parallel()
	perAttempt := withWaits(retryConfig(3, 503), time.Millisecond, time.Millisecond)
	perAttempt.Rules[0].Retry.PerAttemptTimeout = 10 * time.Second // the attempt's context is its own
	for _, tc := range []struct {
		name string
		cfg  *policy.Config
	}{
		{"no rule", policy.None()},
		{"retry", withWaits(retryConfig(3, 503), time.Millisecond, time.Millisecond)},
		{"retry with a per-attempt timeout", perAttempt},
		{"hedge", hedgeConfig(2, time.Second, 503)},
	} {
		for _, play := range []struct {
			name string
			play func(net.Conn, *bufio.Reader)
		}{
			{"trickling", playTrickle("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "1\r\nx\r\n")},
			{"stalled", playStall("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nx")},
		} {
			t.Run(tc.name+", "+play.name, func(t *testing.T) {
				t.Parallel()
				srv := startConnServer(t, playEach(play.play))
				tr := newBaseTransport(t, tc.cfg)
				hangBound(t, 20*time.Second, func() {
					ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
					defer cancel()
					resp, err := tr.RoundTrip(getRequest(t, ctx, srv.URL()))
					if err != nil { // a slow machine: the deadline came first
						assert.ErrorIs(t, err, context.DeadlineExceeded)
						return
					}
					_, err = io.Copy(io.Discard, resp.Body)
					assert.ErrorIs(t, err, context.DeadlineExceeded)
					assert.NoError(t, resp.Body.Close())
				})
				assert.Equal(t, 1, srv.accepted(), "connections")
			})
		}
	}
}

// A server that closes a kept-alive connection just as the next request
// arrives on it (it reads the request's first byte, then closes) may have
// acted on that request: a request that may be retried is sent again on
// a new connection and gets its answer, and a plain POST is not sent
// again: its error comes back, with no response.
func TestKeepAliveClosedOnReuse(t *testing.T) {
	t.Parallel()
	closeOnReuse := func(c net.Conn, rd *bufio.Reader) {
		if !readRequest(rd) {
			return
		}
		if _, err := io.WriteString(c, okReply); err != nil {
			return
		}
		rd.Peek(1) // the next request has come
		c.Close()
	}
	for _, tc := range []struct {
		name, method, key string
		ok                bool
	}{
		{"GET", "GET", "", true},
		{"PUT", "PUT", "", true},
		{"POST with an Idempotency-Key", "POST", "k-1", true},
		{"POST", "POST", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startConnServer(t, playEach(closeOnReuse, playAnswer(okReply)))
			tr := newBaseTransport(t, withWaits(retryConfig(3, 503), time.Millisecond, time.Millisecond))
			hangBound(t, 20*time.Second, func() {
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				for i := range 2 {
					var body io.Reader
					if tc.method != "GET" {
						body = strings.NewReader("payload")
					}
					req, err := http.NewRequestWithContext(ctx, tc.method, srv.URL()+"/v1/items", body)
					if !assert.NoError(t, err) {
						return
					}
					if tc.key != "" {
						req.Header.Set("Idempotency-Key", tc.key)
					}
					resp, err := tr.RoundTrip(req)
					if i == 0 || tc.ok {
						if assert.NoError(t, err, "request %d", i+1) {
							assert.Equal(t, "ok", readBody(t, resp))
						}
						continue
					}
					assert.Nil(t, resp, "a response together with an error")
					assert.Error(t, err)
					assert.Equal(t, 1, srv.accepted(), "connections: the POST went once")
				}
			})
		})
	}
}

// A server that sends its header section slowly, or not at all, is cut
// off at the per-attempt timeout and the retry gets the answer.
func TestSlowHeadersAreCutAtThePerAttemptTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		play func(net.Conn, *bufio.Reader)
	}{
		{"headers dribbling for ever", playTrickle("HTTP/1.1 200 OK\r\n", "X-Filler: x\r\n")},
		{"no answer at all", playStall("")},
		{"a status line and no more", playStall("HTTP/1.1 200 OK\r\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startConnServer(t, playEach(tc.play, playAnswer(okReply)))
			cfg := withWaits(retryConfig(5, 503), time.Millisecond, time.Millisecond)
			cfg.Rules[0].Retry.PerAttemptTimeout = 200 * time.Millisecond
			tr := newBaseTransport(t, cfg)
			hangBound(t, 20*time.Second, func() {
				resp, err := tr.RoundTrip(getRequest(t, t.Context(), srv.URL()))
				if assert.NoError(t, err) {
					assert.Equal(t, "ok", readBody(t, resp))
					assert.NotEmpty(t, resp.Header.Get(retryhttp.AttemptsHeader), "a retry's answer")
				}
				<-srv.closedByClient(0) // the attempt cut off is closed
			})
		})
	}
}

// plainReader hides what its reader is from net/http, which then sets
// no GetBody: the body is streamed, and replayed from the buffer.
type plainReader struct{ r io.Reader }

func (p *plainReader) Read(b []byte) (int, error) { return p.r.Read(b) }

// A server that answers "Expect: 100-continue" with a final 503 before
// asking for the body never read it: the retry sends it whole, though it
// is larger than the buffer, which it never entered.
func TestRefusalBeforeContinueLosesNoBody(t *testing.T) {
	t.Parallel()
	for _, size := range []int{10, 2 << 20} {
		for _, getBody := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d bytes, GetBody %v", size, getBody), func(t *testing.T) {
				t.Parallel()
				got := make(chan int, 1)
				refuse := func(c net.Conn, rd *bufio.Reader) {
					if _, err := http.ReadRequest(rd); err == nil {
						io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
					}
				}
				accept := func(c net.Conn, rd *bufio.Reader) {
					req, err := http.ReadRequest(rd)
					if err != nil {
						return
					}
					io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
					n, _ := io.Copy(io.Discard, req.Body)
					got <- int(n)
					io.WriteString(c, okReply)
				}
				srv := startConnServer(t, playEach(refuse, accept))
				tr := newBaseTransport(t, withWaits(retryConfig(3, 503), time.Millisecond, time.Millisecond))
				hangBound(t, 20*time.Second, func() {
					payload := strings.Repeat("p", size)
					var body io.Reader = &plainReader{strings.NewReader(payload)}
					if getBody {
						body = strings.NewReader(payload)
					}
					req, err := http.NewRequestWithContext(t.Context(), "PUT", srv.URL()+"/v1/items", body)
					if !assert.NoError(t, err) {
						return
					}
					req.Header.Set("Expect", "100-continue")
					resp, err := tr.RoundTrip(req)
					if assert.NoError(t, err) {
						assert.Equal(t, "ok", readBody(t, resp))
					}
					assert.Equal(t, size, <-got, "bytes the server read")
				})
			})
		}
	}
}
