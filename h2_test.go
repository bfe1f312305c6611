package retryhttp_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// What an HTTP/2 server's RST_STREAM and GOAWAY frames mean for a request,
// over a real connection to the hand-written h2Server. A GOAWAY tells the
// client which streams the server may have processed: those up to its
// last stream ID (RFC 9113 section 6.8).

// streamedPut returns a PUT whose body is a stream: no GetBody, so that
// net/http cannot send it again on its own.
func streamedPut(t *testing.T, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "PUT", url, io.NopCloser(strings.NewReader(body)))
	require.NoError(t, err)
	require.Nil(t, req.GetBody)
	return req
}

// goAwayBeforeTheStream is a connection whose server shuts down
// gracefully as a request's headers arrive, before taking its stream: a
// GOAWAY whose last stream ID is 0.
func goAwayBeforeTheStream(c *h2Conn) {
	if _, _, ok := c.headers(); ok && c.goAway(0, h2NoError, "") {
		c.drain()
	}
}

// answer is a connection that answers one request with 200 "ok" and
// sends the request's body to got, when got is not nil.
func answer(got chan<- string) func(*h2Conn) {
	return func(c *h2Conn) {
		stream, body, ok := c.request()
		if !ok {
			return
		}
		if got != nil {
			got <- string(body)
		}
		if c.respond(stream, 200, "ok") {
			c.drain()
		}
	}
}

// doneLines returns the outcome of each attempt the hooks saw: "done",
// the attempt's number and its outcome.
func doneLines(l *hookLog) []string {
	var out []string
	for _, line := range l.lines("done") {
		f := strings.Fields(line)
		out = append(out, strings.Join(f[:3], " "))
	}
	return out
}

// A stream above a graceful GOAWAY's last stream ID was never processed:
// a PUT with a streamed body, which net/http will not send again, is sent
// again at once on a new connection, and gets that connection's answer.
func TestGoAwayAboveAStreamedPutGetsTheRetrysAnswer(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	srv := startH2Server(t, goAwayBeforeTheStream, answer(got))
	var log hookLog
	tr := &retryhttp.Transport{Base: h2cTransport(t), Policy: retryConfig(3, 503), Hooks: log.hooks("")}
	resp, err := tr.RoundTrip(streamedPut(t, srv.URL()+"/v1/items", "payload"))
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "ok", readAll(t, resp))
	assert.Equal(t, "payload", <-got, "the second connection got the whole body")
	assert.Equal(t, []string{"done 1 never-sent", "done 1 success"}, doneLines(&log),
		"a resend of attempt 1, spending no attempt")
	assert.Empty(t, log.waits(), "sent again at once")
	assert.Equal(t, 2, srv.accepted())
}

// Under hedging, a hedge that meets a graceful GOAWAY above its stream is
// sent again as well, instead of ending the request.
func TestGoAwayAboveAHedgeIsSentAgain(t *testing.T) {
	t.Parallel()
	srv := startH2Server(t, goAwayBeforeTheStream, answer(nil))
	var log hookLog
	// A delay no run reaches: the resend answers first.
	tr := &retryhttp.Transport{Base: h2cTransport(t), Policy: hedgeConfig(2, time.Hour, 503), Hooks: log.hooks("")}
	resp, err := tr.RoundTrip(streamedPut(t, srv.URL()+"/v1/items", "payload"))
	require.NoError(t, err)
	assert.Equal(t, "ok", readAll(t, resp))
	assert.Equal(t, []string{"done 1 never-sent", "done 1 success"}, doneLines(&log))
}

// A stream the server refused (RST_STREAM with REFUSED_STREAM) was not
// processed either: a PUT with a streamed body is sent again at once, on
// the same connection, which the refusal leaves open.
func TestRefusedStreamOfAStreamedPutIsSentAgain(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	refuseThenAnswer := func(c *h2Conn) {
		stream, _, ok := c.headers()
		if !ok || !c.reset(stream, h2RefusedStream) {
			return
		}
		// Skip what the client still sends on the refused stream.
		for {
			f, err := c.read()
			if err != nil {
				t.Errorf("h2Server: %v before the request was sent again", err)
				return
			}
			if f.typ == h2Headers && f.stream != stream {
				c.unread(f)
				break
			}
		}
		answer(got)(c)
	}
	srv := startH2Server(t, refuseThenAnswer)
	var log hookLog
	tr := &retryhttp.Transport{Base: h2cTransport(t), Policy: retryConfig(3, 503), Hooks: log.hooks("")}
	resp, err := tr.RoundTrip(streamedPut(t, srv.URL()+"/v1/items", "payload"))
	require.NoError(t, err)
	assert.Equal(t, "ok", readAll(t, resp))
	assert.Equal(t, "payload", <-got)
	assert.Equal(t, []string{"done 1 never-sent", "done 1 success"}, doneLines(&log))
	assert.Equal(t, 1, srv.accepted())
}

// A GOAWAY with ENHANCE_YOUR_CALM on a connection's first stream is a rate
// limit, whether or not the server took the stream: the request is retried
// after the rule's backoff, as after a lost connection, never resent at
// once.
func TestGoAwayEnhanceYourCalmIsRetriedWithBackoff(t *testing.T) {
	t.Parallel()
	for _, last := range []uint32{0, 1} {
		t.Run(fmt.Sprintf("last stream %d", last), func(t *testing.T) {
			t.Parallel()
			calm := func(c *h2Conn) {
				if _, _, ok := c.request(); ok && c.goAway(last, h2EnhanceYourCalm, "slow down") {
					c.hangUp()
				}
			}
			srv := startH2Server(t, calm, answer(nil))
			var log hookLog
			cfg := withWaits(retryConfig(3, 503), time.Millisecond, time.Millisecond)
			tr := &retryhttp.Transport{Base: h2cTransport(t), Policy: cfg, Hooks: log.hooks("")}
			req, err := http.NewRequestWithContext(t.Context(), "GET", srv.URL()+"/v1/items", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			assert.Equal(t, "ok", readAll(t, resp))
			assert.Equal(t, []string{"done 1 network", "done 2 success"}, doneLines(&log))
			waits := log.waits()
			require.Len(t, waits, 1)
			assert.Equal(t, retrytrace.WaitBackoff, waits[0].Reason, "got a wait for %s, want one for backoff", waits[0].Reason)
			assert.Equal(t, 2, srv.accepted())
		})
	}
}

// A GOAWAY with PROTOCOL_ERROR says the client broke the protocol: a new
// connection would meet the same answer, so the request fails at once.
func TestGoAwayProtocolErrorIsNotRetried(t *testing.T) {
	t.Parallel()
	for _, last := range []uint32{0, 1} {
		t.Run(fmt.Sprintf("last stream %d", last), func(t *testing.T) {
			t.Parallel()
			broken := func(c *h2Conn) {
				if _, _, ok := c.request(); ok && c.goAway(last, h2ProtocolError, "") {
					c.hangUp()
				}
			}
			srv := startH2Server(t, broken, answer(nil))
			var log hookLog
			cfg := withWaits(retryConfig(3, 503), time.Millisecond, time.Millisecond)
			tr := &retryhttp.Transport{Base: h2cTransport(t), Policy: cfg, Hooks: log.hooks("")}
			req, err := http.NewRequestWithContext(t.Context(), "GET", srv.URL()+"/v1/items", nil)
			require.NoError(t, err)
			_, err = tr.RoundTrip(req)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "PROTOCOL_ERROR")
			assert.Equal(t, []string{"done 1 fatal"}, doneLines(&log))
			assert.Equal(t, 1, srv.accepted())
		})
	}
}
