package retryhttp_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp"
)

// A server delay too long to wait for (a year, a number past any
// duration, a date in year 9999), however it is spelt, sends a 429 or 503
// back at once, after one attempt, whatever the caller's deadline left;
// the hold it sets, capped at maxServerDelay, refuses the next request at
// once, nothing sent. Had the Transport slept on it, the deadline would
// have ended the call instead.
func TestServerDelayTooLongOnASocket(t *testing.T) {
	t.Parallel()
	for _, header := range []string{
		"Retry-After: 31536000",
		"Retry-After: 99999999999999999999",
		"Retry-After: Fri, 31 Dec 9999 23:59:59 GMT",
		"Retry-After: Fri, 31 Dec 9999 23:59:59 GMT\r\nDate: Sat, 01 Jan 0000 00:00:00 GMT",
		"Retry-After: 31536000\r\nRetry-After: 0",
		"Retry-After-Ms: 99999999999999999999",
		"X-Retry-Pushback-Ms: 99999999999999999999",
		`RateLimit: "a";r=0;t=31536000`,
		"Retry-After: 31536000\r\nX-Should-Retry: true",
	} {
		for _, status := range []string{"429 Too Many Requests", "503 Service Unavailable"} {
			t.Run(status[:3]+" "+header, func(t *testing.T) {
				t.Parallel()
				srv := startConnServer(t, playEach(playAnswer("HTTP/1.1 "+status+"\r\n"+header+"\r\nContent-Length: 4\r\n\r\nbusy")))
				tr := newBaseTransport(t, withWaits(retryConfig(3, 429, 503), time.Millisecond, time.Millisecond))
				var log hookLog
				tr.Hooks = log.hooks("")
				hangBound(t, 20*time.Second, func() {
					ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
					defer cancel()
					resp, err := tr.RoundTrip(getRequest(t, ctx, srv.URL()))
					if assert.NoError(t, err) {
						assert.Equal(t, status[:3], resp.Status[:3])
						assert.Equal(t, "busy", readBody(t, resp))
					}
					assert.NoError(t, ctx.Err(), "the call waited out its deadline")
					assert.Equal(t, []string{"start 1 hedge=false"}, log.lines("start"))

					resp, err = tr.RoundTrip(getRequest(t, ctx, srv.URL()))
					assert.Nil(t, resp)
					assert.ErrorIs(t, err, retryhttp.ErrHeld)
					assert.NoError(t, ctx.Err(), "the held call waited out its deadline")
					assert.Equal(t, []string{"start 1 hedge=false"}, log.lines("start"), "nothing more sent")
				})
			})
		}
	}
}

// Delay headers that mean nothing (garbage, NaN, 1e400, negative, a date
// in year 0, a Date header far off, conflicting copies) never stop a
// retry nor make it wait past what the rule says: a 503 carrying them is
// retried on the rule's backoff, a millisecond here, and the last one
// comes back, all well within the deadline; a pushback that is not a
// number stops the retry (A6), and so does nothing else.
func TestServerDelayGarbageOnASocket(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		header   string
		attempts int
	}{
		{"Retry-After: soon", 3},
		{"Retry-After: -5", 3},
		{"Retry-After: NaN", 3},
		{"Retry-After: 1e400", 3},
		{"Retry-After: Sat, 01 Jan 0000 00:00:00 GMT", 3},
		{"Retry-After: 0\r\nDate: Fri, 31 Dec 9999 23:59:59 GMT", 3},
		{"Retry-After-Ms: 1e400", 3},
		{"Retry-After-Ms: NaN", 3},
		{"Retry-After-Ms: -1", 3},
		{`RateLimit: "a";r=0;t=99999999999999999999`, 3}, // past a Structured Field integer: malformed
		{`RateLimit: "a";r=0;t=-1`, 3},
		{"RateLimit: garbage;;;===", 3},
		{`RateLimit-Policy: "a";q=0;w=0`, 3},
		{"X-Should-Retry: maybe", 3},
		{"X-Should-Retry: true\r\nX-Should-Retry: false", 3},
		{"X-Retry-Pushback-Ms: NaN", 1},
		{"X-Retry-Pushback-Ms: 1e400", 1},
		{"X-Retry-Pushback-Ms: -1\r\nX-Retry-Pushback-Ms: 1", 1},
	} {
		t.Run(tc.header, func(t *testing.T) {
			t.Parallel()
			srv := startConnServer(t, playEach(playAnswer("HTTP/1.1 503 Service Unavailable\r\n"+tc.header+"\r\nContent-Length: 4\r\n\r\nbusy")))
			tr := newBaseTransport(t, withWaits(retryConfig(3, 503), time.Millisecond, time.Millisecond))
			var log hookLog
			tr.Hooks = log.hooks("")
			hangBound(t, 20*time.Second, func() {
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				resp, err := tr.RoundTrip(getRequest(t, ctx, srv.URL()))
				if assert.NoError(t, err) {
					assert.Equal(t, 503, resp.StatusCode)
					assert.Equal(t, "busy", readBody(t, resp))
				}
				assert.Len(t, log.lines("start"), tc.attempts, "attempts")
			})
		})
	}
}
