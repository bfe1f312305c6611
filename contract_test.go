package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }

// countingServer starts a server of h, over TLS when tls is set, closed
// at the end of the test, that counts the connections it accepts in
// conns, and logs nothing.
func countingServer(t *testing.T, h http.Handler, tls bool) (srv *httptest.Server, conns *atomic.Int64) {
	conns = new(atomic.Int64)
	srv = httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Config.ErrorLog = quietLog()
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, conns
}

// trackedBody counts how often the caller's body is closed.
type trackedBody struct {
	io.Reader
	closes atomic.Int64
}

func (b *trackedBody) Close() error { b.closes.Add(1); return nil }

func TestRequestIsNeverModified(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, s := newScripted(retryConfig(3, 503), rt.Step{Status: 503}, rt.Step{})
		req := newRequest(t, t.Context(), "PUT", "payload")
		req.Header.Set("A", "1")
		before := req.Header.Clone()
		ctx, body, u := req.Context(), req.Body, *req.URL
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, before, req.Header)
		assert.Equal(t, ctx, req.Context())
		assert.Equal(t, body, req.Body)
		assert.Equal(t, u, *req.URL)
		s.WantHeader(t, retryhttp.AttemptsHeader, "", "1")
	})
}

func TestCallerBodyIsAlwaysClosed(t *testing.T) {
	cases := map[string]func(t *testing.T, req *http.Request) *retryhttp.Transport{
		"success": func(t *testing.T, _ *http.Request) *retryhttp.Transport {
			tr, _ := newScripted(retryConfig(3, 503), rt.Step{})
			return tr
		},
		"error": func(t *testing.T, _ *http.Request) *retryhttp.Transport {
			tr, _ := newCalls(retryConfig(3, 503), fail(errors.New("boom")))
			return tr
		},
		"bad URL": func(t *testing.T, req *http.Request) *retryhttp.Transport {
			req.URL = nil
			return &retryhttp.Transport{}
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			body := &trackedBody{Reader: strings.NewReader("x")}
			req := &http.Request{Method: "POST", URL: &url.URL{Scheme: "https", Host: "api.test", Path: "/"},
				Header: http.Header{}, Body: body, ContentLength: 1}
			tr := setup(t, req)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				readAll(t, resp)
			} else {
				assert.Nil(t, resp, "got a response together with an error")
			}
			assert.Equal(t, int64(1), body.closes.Load())
		})
	}
}

// A discarded response whose body never ends (a server trickling bytes
// for a minute, within the length a drain reads) delays the caller by the
// drain bound only: the attempt is cut off and the retry goes ahead.
func TestEndlessDiscardedBodyIsCutOff(t *testing.T) {
	srv := script(
		rt.Step{Status: 503, Body: strings.Repeat("x", 60<<10), Trickle: rt.Rate{Every: time.Millisecond}},
		rt.Step{Body: "ok"})
	ts := srv.Start(t)
	cfg := retryConfig(2, 503)
	withWaits(cfg, time.Millisecond, time.Second)
	tr := &retryhttp.Transport{Base: freshBase(t), Policy: cfg}
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, err := http.NewRequestWithContext(t.Context(), "GET", ts.URL, nil)
		if !assert.NoError(t, err) {
			return
		}
		resp, err := tr.RoundTrip(req)
		if assert.NoError(t, err) {
			assert.Equal(t, "ok", readAll(t, resp))
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // reached only on failure
		t.Fatal("the caller waited for an endless discarded body")
	}
	// The bound is reached only on failure.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, srv.Wait(ctx), "the first attempt was never cut off")
	assert.Equal(t, []bool{true, false}, cancelled(srv), "the server saw the first attempt end")
}

// Hedges running side by side leave the caller's request as it was: its
// header map (which hedges must not share, or the race detector sees
// them write it), URL, Body, GetBody and context; the answer is the
// caller's request's, and counts the attempts sent before it.
func TestRequestIsNeverModifiedByHedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := numbered(rt.Step{Delay: time.Second}, rt.Step{Delay: time.Second}, rt.Step{Delay: 10 * time.Millisecond})
		tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(3, 50*time.Millisecond, 503)}
		req := newRequest(t, t.Context(), "PUT", "payload")
		req.Header.Set("A", "1")
		header, before := req.Header, req.Header.Clone()
		ctx, body, u, host, length := req.Context(), req.Body, *req.URL, req.Host, req.ContentLength
		require.NotNil(t, req.GetBody)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, "attempt 3", readAll(t, resp))
		assert.Same(t, req, resp.Request)
		assert.Equal(t, "2", resp.Header.Get(retryhttp.AttemptsHeader), "two attempts were sent before the one that answered")
		assert.Equal(t, before, header, "the header map is untouched")
		assert.Equal(t, before, req.Header)
		assert.Equal(t, ctx, req.Context())
		assert.Equal(t, body, req.Body)
		assert.NotNil(t, req.GetBody)
		assert.Equal(t, u, *req.URL)
		assert.Equal(t, host, req.Host)
		assert.Equal(t, length, req.ContentLength)
		srv.WantHeader(t, retryhttp.AttemptsHeader, "", "1", "2")
		srv.WantBody(t, "payload")
	})
}

// A request refused before anything is sent has its body closed once,
// and gets an error alone: a caller whose context ended before
// RoundTrip, a Transport whose policy is invalid.
func TestCallerBodyIsClosedWhenNothingIsSent(t *testing.T) {
	cases := map[string]struct {
		cfg  *policy.Config
		ctx  func(t *testing.T) context.Context
		want error
	}{
		"context ended": {retryConfig(3, 503), func(t *testing.T) context.Context {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return ctx
		}, context.Canceled},
		"invalid policy": {retryConfig(1, 503), func(t *testing.T) context.Context { return t.Context() }, policy.ErrInvalid},
		"invalid per-call rule": {retryConfig(3, 503), func(t *testing.T) context.Context {
			return retryhttp.WithPolicy(t.Context(), &policy.Rule{Retry: &policy.Retry{MaxAttempts: 3}})
		}, policy.ErrInvalid},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, s := newScripted(tc.cfg, rt.Step{})
				for _, getBody := range []bool{false, true} {
					req := newRequest(t, tc.ctx(t), "PUT", "payload")
					body := &trackedBody{Reader: strings.NewReader("payload")}
					req.Body = body
					if !getBody {
						req.GetBody = nil
					}
					resp, err := tr.RoundTrip(req)
					assert.Nil(t, resp, "got a response together with an error")
					require.ErrorIs(t, err, tc.want)
					synctest.Wait()
					assert.Equal(t, int64(1), body.closes.Load(), "GetBody %v: the body is closed once", getBody)
				}
				assert.Zero(t, s.Count(), "nothing reached the server")
			})
		})
	}
}

// The answer's attempt runs under a context of its own, which lives on
// after RoundTrip for as long as the caller reads its body, past the
// per-attempt timeout too, and ends when the body is closed; an attempt
// that lost ends at once.
func TestAnAttemptsContextEndsWithItsBody(t *testing.T) {
	timed := retryConfig(3, 503)
	timed.Rules[0].Retry.PerAttemptTimeout = time.Second
	cases := []struct {
		name   string
		cfg    *policy.Config
		steps  []rt.Step
		winner int // the attempt that answers; the others lose
	}{
		{"a hedge", hedgeConfig(2, 50*time.Millisecond, 503), []rt.Step{{Delay: time.Minute}, {Delay: 10 * time.Millisecond}}, 2},
		{"a retry under a per-attempt timeout", timed, []rt.Step{{Status: 503}, {}}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := script(tc.steps...)
				var mu sync.Mutex
				var ctxs []context.Context
				tr, _ := newCalls(tc.cfg, func(req *http.Request) (*http.Response, error) {
					mu.Lock()
					ctxs = append(ctxs, req.Context())
					mu.Unlock()
					return srv.RoundTrip(req)
				})
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				time.Sleep(2 * time.Second) // past the per-attempt timeout
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				require.Len(t, ctxs, 2)
				for i, ctx := range ctxs {
					if i+1 == tc.winner {
						assert.NoError(t, ctx.Err(), "the answer's context lives while its body is open")
					} else {
						assert.Error(t, ctx.Err(), "attempt %d's context ended", i+1)
					}
				}
				readAll(t, resp)
				assert.Error(t, ctxs[tc.winner-1].Err(), "closing the body ends the answer's context")
				assert.NoError(t, t.Context().Err(), "the caller's own context is left alone")
			})
		})
	}
}

// A discarded answer is drained to its end, so that its connection can
// serve the next attempt, when it is short; one declared longer than the
// drain bound (64 KiB) is closed instead, read no further than the
// bound, and its connection with it. What the Transport read of each answer is counted under it, over a
// real socket: whether net/http has put a drained connection back in its
// pool by the time the next attempt asks is a race this test leaves out.
func TestDiscardedAnswerIsDrainedWithinItsBound(t *testing.T) {
	for _, tc := range []struct {
		name    string
		size    int
		drained bool
		conns   int64 // the server accepted, when the count is sure
	}{
		{"short: drained", 1 << 10, true, 0},
		{"long: closed", 200 << 10, false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			ts, conns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) < 3 {
					w.Header().Set("Content-Length", strconv.Itoa(tc.size))
					w.WriteHeader(503)
					io.WriteString(w, strings.Repeat("x", tc.size))
					return
				}
				io.WriteString(w, "ok")
			}), false)
			var mu sync.Mutex
			var bodies []*countedBody
			base := freshBase(t)
			counting := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				resp, err := base.RoundTrip(req)
				if err == nil {
					b := &countedBody{rc: resp.Body}
					resp.Body = b
					mu.Lock()
					bodies = append(bodies, b)
					mu.Unlock()
				}
				return resp, err
			})
			tr := &retryhttp.Transport{Base: counting, Policy: withWaits(retryConfig(3, 503), time.Millisecond, time.Millisecond)}
			req, err := http.NewRequestWithContext(t.Context(), "GET", ts.URL, nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			assert.Equal(t, "ok", readAll(t, resp))
			assert.Equal(t, int64(3), n.Load())
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, bodies, 3)
			for i, b := range bodies[:2] {
				b.mu.Lock()
				if tc.drained {
					assert.Equal(t, int64(tc.size), b.read, "answer %d read whole", i+1)
					assert.True(t, b.eof, "answer %d read to its end", i+1)
				} else {
					// Kept through the wait, it is read ahead up to the
					// bound, and no further.
					assert.LessOrEqual(t, b.read, int64(64<<10+1), "answer %d read", i+1)
					assert.False(t, b.eof, "answer %d read to its end", i+1)
				}
				assert.True(t, b.closed, "answer %d closed", i+1)
				b.mu.Unlock()
			}
			if tc.conns > 0 {
				assert.Equal(t, tc.conns, conns.Load(), "connections the server accepted")
			}
		})
	}
}

// countedBody counts what is read of a response body, and whether it was
// read to its end and closed.
type countedBody struct {
	rc     io.ReadCloser
	mu     sync.Mutex
	read   int64
	eof    bool
	closed bool
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.mu.Lock()
	b.read += int64(n)
	b.eof = b.eof || err == io.EOF
	b.mu.Unlock()
	return n, err
}

func (b *countedBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return b.rc.Close()
}
