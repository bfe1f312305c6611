package retryhttp_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// within asserts that got is in [lo, lo+spread].
func within(t *testing.T, got, lo, spread time.Duration, msgAndArgs ...any) {
	t.Helper()
	assert.GreaterOrEqual(t, got, lo, msgAndArgs...)
	assert.LessOrEqual(t, got, lo+spread, msgAndArgs...)
}

// GitHub's documented rules, as the README's rule and classifier: three
// secondary limits in a row wait 60 s, 120 s and 240 s; a spent primary
// quota waits for its reset; a 502 with quota left is retried on the
// backoff, its reset header ignored; a 403 that is no rate limit is final.
func TestGitHubRule(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []string
		waits   []time.Duration // each wait before a retry, jittered up by at most a second
		status  int
	}{
		{"three secondary limits", []string{"secondary", "secondary", "secondary", "ok"},
			[]time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute}, 200},
		{"Retry-After", []string{"retry-after", "ok"}, []time.Duration{30 * time.Second}, 200},
		{"primary quota spent", []string{"primary", "ok"}, []time.Duration{20 * time.Second}, 200},
		{"502 with quota left", []string{"502", "ok"}, []time.Duration{time.Second}, 200},
		{"forbidden", []string{"forbidden"}, nil, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(n int, _ *http.Request) rt.Step {
					return gitHubAnswer(tc.answers[min(n, len(tc.answers))-1], time.Now()) // n counts from 1
				}}
				tr := &retryhttp.Transport{Base: srv, Policy: gitHubConfig(), Classify: gitHubClassify}
				req, err := http.NewRequestWithContext(t.Context(), "GET", "https://api.github.com/user", nil)
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				readAll(t, resp)
				assert.Equal(t, tc.status, resp.StatusCode)
				at := arrivals(srv)
				require.Len(t, at, len(tc.waits)+1)
				for i, w := range tc.waits {
					within(t, at[i+1]-at[i], w, time.Second, "wait %d", i+1)
				}
			})
		})
	}
}

// 20 calls started while a host is held by a Retry-After of 10 s send
// nothing before the hold ends, and then one request each, spread over a
// second; the calls whose deadline ends first fail at once with ErrHeld,
// having sent nothing, their bodies closed.
func TestHoldGathersTheCallsOfItsHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		first := true
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
			mu.Lock()
			defer mu.Unlock()
			if first {
				first = false
				return rt.Step{Status: 429, Header: http.Header{"Retry-After": {"10"}}}
			}
			return rt.Step{Body: "ok"}
		}}
		tr := &retryhttp.Transport{Base: srv} // policy.Default holds hosts
		start := time.Now()
		var wg sync.WaitGroup
		wg.Go(func() { // the call that meets the limit, and retries after it
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			if assert.NoError(t, err) {
				assert.Equal(t, "ok", readAll(t, resp))
			}
		})
		time.Sleep(time.Second)
		for i := range 20 {
			wg.Go(func() {
				ctx := t.Context()
				if i%4 == 0 { // 5 calls cannot wait 9 more seconds
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
					defer cancel()
				}
				req := newRequest(t, ctx, "PUT", "payload")
				body := &trackedBody{Reader: strings.NewReader("payload")}
				req.Body = body
				called := time.Now()
				resp, err := tr.RoundTrip(req)
				if i%4 != 0 {
					if assert.NoError(t, err) {
						assert.Equal(t, "ok", readAll(t, resp))
					}
					return
				}
				assert.Equal(t, called, time.Now(), "a call that cannot wait fails at once")
				require.ErrorIs(t, err, retryhttp.ErrHeld)
				require.ErrorIs(t, err, retryhttp.ErrNoResponse)
				var held *retryhttp.HoldError
				require.ErrorAs(t, err, &held)
				assert.Equal(t, "api.test", held.Host)
				assert.Equal(t, 9*time.Second, held.Remaining)
				assert.Equal(t, 429, held.Status)
				var rerr *retryhttp.Error
				require.ErrorAs(t, err, &rerr)
				assert.Zero(t, rerr.Attempts, "nothing was sent")
				assert.Equal(t, int64(1), body.closes.Load(), "the body is closed once")
			})
		}
		wg.Wait()
		at := arrivals(srv)
		require.Len(t, at, 1+1+15, "the limit, its retry, and one request for each call that could wait")
		for _, a := range at[1:] {
			within(t, a, 10*time.Second, time.Second, "nothing reaches the host before the hold ends; then within a tenth of it")
		}
		assert.Greater(t, at[len(at)-1]-at[1], time.Duration(0), "the calls that waited are spread, not sent in one instant")
		st := tr.Stats().Total
		assert.Equal(t, uint64(1), st.HoldsSet)
		assert.Equal(t, uint64(15), st.HoldWaits)
		assert.Equal(t, uint64(5), st.HoldRefusals)
		_ = start
	})
}

// A success that says the quota is spent (the IETF RateLimit field with
// r=0) holds the next call until the quota's reset.
func TestRateLimitFieldHoldsTheNextCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, srv := newScripted(policy.Default(),
			rt.Step{Body: "ok", Header: http.Header{"Ratelimit": {`"default";r=0;t=30`}}},
			rt.Step{Body: "ok"})
		for range 2 {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			assert.Equal(t, 200, resp.StatusCode)
			readAll(t, resp)
		}
		at := arrivals(srv)
		require.Len(t, at, 2)
		within(t, at[1], 30*time.Second, time.Second, "the second call waits for the reset")
	})
}

// The zero Transport answers rate limits as a person would: a 429 with
// no delay signal is not retried sooner than a second; retry-after-ms
// sets the wait; X-Should-Retry: false is never retried, and true is
// retried for any method.
func TestZeroTransportRateLimits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		method   string
		first    rt.Step
		attempts int
		wait     time.Duration // before the retry: a backoff jittered by ±20%, a server's delay up by a tenth
	}{
		{"429 without a delay", "GET", rt.Step{Status: 429}, 2, time.Second},
		{"429 without a delay, POST", "POST", rt.Step{Status: 429}, 2, time.Second},
		{"retry-after-ms", "GET", rt.Step{Status: 429, Header: http.Header{"Retry-After-Ms": {"1500"}}}, 2, 1500 * time.Millisecond},
		{"x-should-retry: false", "GET", rt.Step{Status: 503, Header: http.Header{"X-Should-Retry": {"false"}}}, 1, 0},
		{"x-should-retry: true", "POST", rt.Step{Status: 400, Header: http.Header{"X-Should-Retry": {"true"}}}, 2, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := script(tc.first, rt.Step{Body: "ok"})
				tr := &retryhttp.Transport{Base: srv}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), tc.method, "payload"))
				require.NoError(t, err)
				readAll(t, resp)
				at := arrivals(srv)
				require.Len(t, at, tc.attempts)
				if tc.attempts == 2 {
					within(t, at[1], tc.wait-tc.wait/5, 2*tc.wait/5, "the retry's wait")
				}
				if tc.first.Status == 429 {
					assert.GreaterOrEqual(t, at[1], tc.wait, "a rate limit is never retried sooner than asked")
				}
			})
		})
	}
}

// An LLM API's spent quota is configuration, not code: the README's rule
// waits the 6 minutes x-ratelimit-reset-requests names.
func TestLLMQuotaIsConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Status: 429, Header: http.Header{"X-Ratelimit-Remaining-Requests": {"0"},
			"X-Ratelimit-Reset-Requests": {"6m0s"}}}, rt.Step{Body: "ok"})
		tr := &retryhttp.Transport{Base: srv, Policy: llmConfig()}
		req, err := http.NewRequestWithContext(t.Context(), "POST", "https://api.openai.com/v1/responses", strings.NewReader("{}"))
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, "ok", readAll(t, resp))
		at := arrivals(srv)
		require.Len(t, at, 2)
		within(t, at[1], 6*time.Minute, time.Second)
	})
}

// A request sent WithoutRetries is still held: it would meet the same
// refusal. Under policy.None nothing holds a host.
func TestHoldsAndTheSwitches(t *testing.T) {
	limit := rt.Step{Status: 503, Header: http.Header{"Retry-After": {"5"}}}
	synctest.Test(t, func(t *testing.T) {
		tr, srv := newScripted(policy.Default(), limit, rt.Step{Body: "ok"})
		resp, err := tr.RoundTrip(newRequest(t, retryhttp.WithoutRetries(t.Context()), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode)
		readAll(t, resp)
		resp, err = tr.RoundTrip(newRequest(t, retryhttp.WithoutRetries(t.Context()), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		within(t, arrivals(srv)[1], 5*time.Second, 500*time.Millisecond, "the second request waits out the hold")
	})
	synctest.Test(t, func(t *testing.T) {
		tr, srv := newScripted(policy.None(), limit, rt.Step{Body: "ok"})
		for range 2 {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			readAll(t, resp)
		}
		assert.Equal(t, []time.Duration{0, 0}, arrivals(srv), "no hold without policy.Hold")
	})
}

// A hold past the request's deadline fails a request with nothing sent;
// the hold's error reads as such.
func TestHoldErrorReads(t *testing.T) {
	err := &retryhttp.Error{Err: &retryhttp.HoldError{Host: "api.test:443", Remaining: 1500 * time.Millisecond, Status: 429}}
	assert.True(t, errors.Is(err, retryhttp.ErrHeld))
	assert.Equal(t, "retryhttp: not sent: host api.test:443 held for another 1.5s after a 429 (retryhttp: host held)", err.Error())
}

// An Error a caller builds without a cause reads, whatever its count.
func TestErrorWithoutACauseReads(t *testing.T) {
	assert.Equal(t, "retryhttp: not sent: <nil>", (&retryhttp.Error{}).Error())
	assert.Equal(t, "retryhttp: no response after 2 attempt(s): <nil>", (&retryhttp.Error{Attempts: 2}).Error())
	assert.False(t, (&retryhttp.Error{}).Timeout())
}
