package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
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

func TestRetriesUntilSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Status: 503}, rt.Step{Status: 503}, rt.Step{Body: "ok"})
		tr, base := newCalls(retryConfig(4, 503), srv.RoundTrip)
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "ok", readAll(t, resp))
		// The first attempt carries no header.
		srv.WantHeader(t, retryhttp.AttemptsHeader, "", "1", "2")
		assert.Equal(t, "2", resp.Header.Get(retryhttp.AttemptsHeader))
		assert.Equal(t, int64(3), base.closed.Load(), "discarded bodies and the returned one are closed")
		// Waits of 100ms and 200ms, each without jitter.
		assert.Equal(t, 300*time.Millisecond, time.Since(start))
	})
}

func TestFirstAnswerHasNoAttemptsHeader(t *testing.T) {
	tr, _ := newScripted(retryConfig(3, 503), rt.Step{})
	resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
	require.NoError(t, err)
	readAll(t, resp)
	_, ok := resp.Header[retryhttp.AttemptsHeader]
	assert.False(t, ok, "got X-Retry-Attempts on a first-attempt answer")
}

func TestLastResponseComesBackWithNilError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Status: 503, Body: "busy"})
		tr, base := newCalls(retryConfig(3, 503), srv.RoundTrip)
		req := newRequest(t, t.Context(), "GET", "")
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode)
		assert.Same(t, req, resp.Request)
		assert.Equal(t, "busy", readAll(t, resp))
		srv.WantAttempts(t, 3)
		assert.Equal(t, "2", resp.Header.Get(retryhttp.AttemptsHeader))
		assert.Equal(t, int64(3), base.closed.Load())
	})
}

func TestStatusNotListedIsNotRetried(t *testing.T) {
	for _, code := range []int{200, 301, 400, 404, 500} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			tr, s := newScripted(retryConfig(3, 503, 301), rt.Step{Status: code})
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			readAll(t, resp)
			assert.Equal(t, code, resp.StatusCode)
			assert.Equal(t, 1, s.Count(), "a redirect or unlisted status is never retried")
		})
	}
}

func TestIdempotencyRules(t *testing.T) {
	cases := []struct {
		name   string
		method string
		header string
		status int
		nonIdm bool
		want   int // attempts
	}{
		{"GET", "GET", "", 503, false, 3},
		{"HEAD", "HEAD", "", 503, false, 3},
		{"OPTIONS", "OPTIONS", "", 503, false, 3},
		{"TRACE", "TRACE", "", 503, false, 3},
		{"PUT", "PUT", "", 503, false, 3},
		{"DELETE", "DELETE", "", 503, false, 3},
		{"POST", "POST", "", 503, false, 1},
		{"PATCH", "PATCH", "", 503, false, 1},
		{"POST 429", "POST", "", 429, false, 3},
		{"POST with Idempotency-Key", "POST", "Idempotency-Key", 503, false, 3},
		{"POST with X-Idempotency-Key", "POST", "X-Idempotency-Key", 503, false, 3},
		{"POST with retryNonIdempotent", "POST", "", 503, true, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := retryConfig(3, 429, 503)
				cfg.Rules[0].Retry.RetryNonIdempotent = tc.nonIdm
				tr, s := newScripted(cfg, rt.Step{Status: tc.status})
				req := newRequest(t, t.Context(), tc.method, "payload")
				if tc.header != "" {
					req.Header.Set(tc.header, "k-1")
				}
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				readAll(t, resp)
				s.WantAttempts(t, tc.want)
				s.WantBody(t, "payload")
			})
		})
	}
}

func TestNoWaitPastTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := retryConfig(5, 503)
		withWaits(cfg, time.Second, time.Second)
		tr, s := newScripted(cfg, rt.Step{Status: 503})
		ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
		defer cancel()
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, 503, resp.StatusCode)
		// One wait of 1s fits; the second would end at 2s, past 1.5s, so
		// the second answer comes back at once.
		s.WantAttempts(t, 2)
		assert.Equal(t, time.Second, time.Since(start))
	})
}

func TestCallerCancellationDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := retryConfig(5, 503)
		withWaits(cfg, 10*time.Second, 10*time.Second)
		tr, s := newScripted(cfg, rt.Step{Status: 503})
		ctx, cancel := context.WithCancelCause(t.Context())
		why := errors.New("user gave up")
		time.AfterFunc(time.Second, func() { cancel(why) })
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
		assert.Nil(t, resp)
		require.Error(t, err)
		assert.ErrorIs(t, err, why)
		var rerr *retryhttp.Error
		require.ErrorAs(t, err, &rerr)
		assert.Equal(t, 1, rerr.Attempts)
		s.WantAttempts(t, 1)
		assert.Equal(t, time.Second, time.Since(start))
	})
}

func TestPerAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := retryConfig(3, 503)
		cfg.Rules[0].Retry.PerAttemptTimeout = 2 * time.Second
		srv := script(rt.Step{Fault: rt.Hang})
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		assert.Nil(t, resp)
		var rerr *retryhttp.Error
		require.ErrorAs(t, err, &rerr)
		assert.Equal(t, 3, rerr.Attempts)
		assert.True(t, rerr.Timeout(), "got Timeout() false for a per-attempt timeout")
		// Three attempts of 2s with waits of 100ms and 200ms between.
		srv.WantArrivals(t, 0, 2100*time.Millisecond, 4300*time.Millisecond)
		assert.Equal(t, 6300*time.Millisecond, time.Since(start))
	})
}

func TestCallerDeadlineBoundsTheChain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := retryConfig(10, 503)
		cfg.Rules[0].Retry.PerAttemptTimeout = 2 * time.Second
		srv := script(rt.Step{Fault: rt.Hang})
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		start := time.Now()
		_, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 3*time.Second, time.Since(start))
		srv.WantAttempts(t, 2)
	})
}

// Stats, CloseIdleConnections and ResetBackoff first and the hooks set
// after loses no hook: none is a first use.
func TestHooksSetAfterStatsAreCalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, _ := newScripted(retryConfig(2, 503), rt.Step{Status: 503}, rt.Step{})
		assert.Empty(t, tr.Stats().Hosts)
		tr.CloseIdleConnections()
		tr.ResetBackoff("api.test:443")
		var log hookLog
		tr.Hooks = log.hooks("")
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Len(t, log.lines("start"), 2, "the hooks set after Stats are called")
		assert.Len(t, log.waits(), 1)
	})
}

// A field that the Transport reads once, set after its first request, is
// not silently ignored: requests fail with an error naming it, and the
// request's body is closed.
func TestFieldSetAfterFirstUseIsNamed(t *testing.T) {
	for _, tc := range []struct {
		field string
		set   func(*retryhttp.Transport)
	}{
		{"Policy", func(tr *retryhttp.Transport) { tr.Policy = policy.None() }},
		{"Buffer", func(tr *retryhttp.Transport) { tr.Buffer.PerRequest = 1 }},
		{"OmitAttemptsHeader", func(tr *retryhttp.Transport) { tr.OmitAttemptsHeader = true }},
		{"Base", func(tr *retryhttp.Transport) { tr.Base = script(rt.Step{}) }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			tr, _ := newScripted(nil, rt.Step{})
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			readAll(t, resp)
			tc.set(tr)
			req := newRequest(t, t.Context(), "PUT", "payload")
			body := &trackedBody{Reader: strings.NewReader("payload")}
			req.Body = body
			_, err = tr.RoundTrip(req)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "Transport."+tc.field+" changed after")
			assert.Equal(t, int64(1), body.closes.Load(), "the body is closed")
			if tc.field == "Policy" {
				assert.Contains(t, err.Error(), "SetPolicy")
				require.NoError(t, tr.SetPolicy(policy.None()), "as the error says")
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err, "SetPolicy says what the policy is: the field is no longer a change")
				readAll(t, resp)
			}
		})
	}
}

// The per-attempt timeout ends with the response headers: a body that
// trickles on long after it is read whole, by an attempt sent once.
func TestPerAttemptTimeoutEndsWithTheHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := retryConfig(3, 503)
		cfg.Rules[0].Retry.PerAttemptTimeout = 500 * time.Millisecond
		srv := script(rt.Step{Delay: 400 * time.Millisecond, Body: "0123456789", Trickle: rt.Rate{Every: time.Second}})
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, 400*time.Millisecond, time.Since(start))
		assert.Equal(t, "0123456789", readAll(t, resp))
		assert.Equal(t, 10400*time.Millisecond, time.Since(start))
		srv.WantAttempts(t, 1)
		assert.Equal(t, []bool{false}, cancelled(srv))
	})
}

// A redirect is handed back, never retried nor hedged, even when its
// status is listed.
func TestRedirectsAreNeverRetried(t *testing.T) {
	for _, code := range []int{300, 301, 302, 303, 304, 307, 308} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				for _, cfg := range []*policy.Config{retryConfig(3, code), hedgeConfig(3, time.Second, code)} {
					tr, s := newScripted(cfg, rt.Step{Status: code, Header: hdr("Location", "/elsewhere")})
					resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
					require.NoError(t, err)
					readAll(t, resp)
					assert.Equal(t, code, resp.StatusCode)
					assert.Equal(t, 1, s.Count())
				}
			})
		})
	}
}

// An idempotency key marks a request safe to send twice as net/http reads
// it: the header present, whatever its value, even none (net/http's way
// to mark a request idempotent without sending the header).
func TestIdempotencyKeyAsNetHTTPReadsIt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header http.Header
		want   int // attempts
	}{
		{"no value", http.Header{"Idempotency-Key": nil}, 3},
		{"an empty value", http.Header{"X-Idempotency-Key": {""}}, 3},
		{"another header", http.Header{"Idempotency": {"k-1"}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, s := newScripted(retryConfig(3, 503), rt.Step{Status: 503})
				req := newRequest(t, t.Context(), "POST", "payload")
				req.Header = tc.header
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				readAll(t, resp)
				s.WantAttempts(t, tc.want)
				s.WantBody(t, "payload")
			})
		})
	}
}

// TestNothingSentForACallerGoneBeforeRoundTrip sends a POST whose
// context ended before RoundTrip, under a retry and a hedging rule: no
// attempt is sent or counted (Error.Attempts 0, "not sent"), the cause is
// the context's, and the caller's body is closed once.
func TestNothingSentForACallerGoneBeforeRoundTrip(t *testing.T) {
	for name, cfg := range map[string]*policy.Config{"retry": retryConfig(3, 503), "hedging": hedgeConfig(3, time.Second, 503)} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, s := newScripted(cfg, rt.Step{Status: 503})
				ctx, cancel := context.WithCancelCause(t.Context())
				why := errors.New("user gave up")
				cancel(why)
				var closes atomic.Int64
				req := newRequest(t, ctx, "POST", "")
				req.Body = &closeCounter{ReadCloser: io.NopCloser(strings.NewReader("payload")), n: &closes}
				resp, err := tr.RoundTrip(req)
				assert.Nil(t, resp)
				assert.ErrorIs(t, err, why)
				var rerr *retryhttp.Error
				require.ErrorAs(t, err, &rerr)
				assert.Zero(t, rerr.Attempts, "got attempts counted for a request never sent")
				assert.Contains(t, err.Error(), "not sent")
				s.WantAttempts(t, 0)
				assert.Equal(t, int64(1), closes.Load(), "caller's body closes")
			})
		})
	}
}
