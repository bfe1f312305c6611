package retryhttp_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// corePolicy is Core Reporting's schedule: 2^n s + U[0, 1000 ms],
// n = 0..4, then stop.
func corePolicy() *policy.Config {
	return &policy.Config{Rules: []policy.Rule{{
		Name: []policy.Name{{}},
		Retry: &policy.Retry{MaxAttempts: 6, Backoff: policy.GoogleAPI{},
			RetryableStatusCodes: []int{500, 503}},
	}}}
}

func googleError(code int, reason string) string {
	return `{"error":{"errors":[{"domain":"usageLimits","reason":"` + reason + `"}],"code":` + strconv.Itoa(code) + `}}`
}

// The Core Reporting rule waits [1 s, 2 s], [2 s, 3 s] ... [16 s, 17 s]
// between attempts and stops after 6; it retries a 503 once only and
// never retries a 403 whose reason merely contains a retryable one.
func TestGoogleCoreReportingRule(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		reason string
		want   int
	}{
		{"userRateLimitExceeded", 403, "userRateLimitExceeded", 6},
		{"rateLimitExceeded", 403, "rateLimitExceeded", 6},
		{"quotaExceeded", 403, "quotaExceeded", 6},
		{"insufficientPermissions", 403, "insufficientPermissions", 1},
		{"dailyLimitExceeded", 403, "dailyLimitExceeded", 1},
		{"userRateLimitExceededUnreg", 403, "userRateLimitExceededUnreg", 1},
		{"backendError", 503, "backendError", 2},
		{"internalServerError", 500, "internalServerError", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, s := newScripted(corePolicy(), rt.Step{Status: tc.status, Body: googleError(tc.status, tc.reason)})
				tr.Classify = coreReporting
				var log hookLog
				tr.Hooks = log.hooks("")
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				assert.Equal(t, googleError(tc.status, tc.reason), readAll(t, resp), "the last answer comes back whole")
				s.WantAttempts(t, tc.want)
				waits := log.waits()
				require.Len(t, waits, tc.want-1)
				var total time.Duration
				for n, w := range waits {
					lo := time.Duration(1<<n) * time.Second
					assert.GreaterOrEqual(t, w.Delay, lo, "wait %d", n)
					assert.LessOrEqual(t, w.Delay, lo+time.Second, "wait %d", n)
					total += w.Delay
				}
				assert.Equal(t, total, time.Since(start), "the waits are all the time taken")
			})
		})
	}
}

// A per-call rule replaces the matching one for one request; WithoutRetries
// sends once and wins over WithPolicy; an invalid per-call rule fails
// RoundTrip at once with the body closed.
func TestPerCallOptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, s := newScripted(retryConfig(3, 503), rt.Step{Status: 503})
		send := func(ctx context.Context) (*http.Response, error) {
			return tr.RoundTrip(newRequest(t, ctx, "GET", ""))
		}
		once := &policy.Rule{Retry: &policy.Retry{MaxAttempts: 2, RetryableStatusCodes: []int{503},
			Backoff: policy.Table{Steps: []time.Duration{time.Millisecond}}}}
		for _, tc := range []struct {
			name string
			ctx  context.Context
			want int
		}{
			{"the policy", t.Context(), 3},
			{"WithPolicy", retryhttp.WithPolicy(t.Context(), once), 2},
			{"WithoutRetries", retryhttp.WithoutRetries(t.Context()), 1},
			{"WithoutRetries wins", retryhttp.WithPolicy(retryhttp.WithoutRetries(t.Context()), once), 1},
			{"nil rule: the policy again", retryhttp.WithPolicy(retryhttp.WithPolicy(t.Context(), once), nil), 3},
		} {
			before := s.Count()
			resp, err := send(tc.ctx)
			require.NoError(t, err, tc.name)
			readAll(t, resp)
			assert.Equal(t, tc.want, s.Count()-before, "%s: attempts", tc.name)
		}
		assert.Equal(t, uint64(1), tr.Stats().Rules["(per-call)"].Requests)

		bad := &policy.Rule{Retry: &policy.Retry{MaxAttempts: 1}}
		req := newRequest(t, retryhttp.WithPolicy(t.Context(), bad), "PUT", "")
		body := &trackedBody{Reader: io.LimitReader(nil, 0)}
		req.Body = body
		before := s.Count()
		_, err := tr.RoundTrip(req)
		require.ErrorIs(t, err, policy.ErrInvalid)
		assert.Contains(t, err.Error(), "Retry.MaxAttempts: 1")
		assert.Equal(t, int64(1), body.closes.Load(), "the body is closed")
		assert.Equal(t, before, s.Count(), "nothing was sent")
	})
}

// policy.None turns retries off for a whole Transport: only an attempt
// that never reached the server is resent.
func TestPolicyNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Status: 503}, rt.Step{})
		tr, base := newCalls(policy.None(), refuse, srv.RoundTrip)
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, 2, base.count(), "the refused attempt was resent, the 503 was not retried")
	})
}

// A delay header the policy names sets the wait as Retry-After does, and
// is capped the same way.
func TestDelayHeadersSetTheWait(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value string
		want  int           // attempts
		wait  time.Duration // before the retry
	}{
		{"obeyed", "7", 2, 7 * time.Second},
		{"over maxServerDelay", "600", 1, 0},
		{"garbage: backoff", "soon", 2, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := retryConfig(3, 503)
				cfg.DelayHeaders = []policy.DelayHeader{{Name: "ratelimit-reset", Format: policy.DelaySeconds}}
				h := http.Header{"Ratelimit-Reset": {tc.value}}
				tr, s := newScripted(cfg, rt.Step{Status: 503, Header: h}, rt.Step{})
				var log hookLog
				tr.Hooks = log.hooks("")
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				readAll(t, resp)
				s.WantAttempts(t, tc.want)
				waits := log.waits()
				if tc.want == 1 {
					assert.Empty(t, waits)
					return
				}
				require.Len(t, waits, 1)
				assert.GreaterOrEqual(t, waits[0].Delay, tc.wait)
				assert.LessOrEqual(t, waits[0].Delay, tc.wait+tc.wait/5)
			})
		})
	}
}

// WithoutRetries wins over WithPolicy, even over an invalid per-call rule:
// the request is sent once.
func TestWithoutRetriesWinsOverAnInvalidRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, srv := newScripted(retryConfig(3, 503), rt.Step{Status: 503})
		ctx := retryhttp.WithoutRetries(retryhttp.WithPolicy(t.Context(), &policy.Rule{Retry: &policy.Retry{MaxAttempts: 1}}))
		resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		srv.WantAttempts(t, 1)
	})
}
