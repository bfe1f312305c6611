package retryhttp_test

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
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

// The SDK cases that README.md, docs/sdk.md, docs/configuration.md and
// docs/rate-limits.md promise, each written as their reader would write
// it, from the documented JSON or Go, and run end to end against the
// users' test kit in virtual time.

// mustParse reads a JSON config the docs show.
func mustParse(t *testing.T, js string) *policy.Config {
	t.Helper()
	cfg, err := policy.ParseConfig([]byte(js))
	require.NoError(t, err)
	return cfg
}

// sendTo sends method to url through tr and returns the status and body.
func sendTo(t *testing.T, tr *retryhttp.Transport, ctx context.Context, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	return resp.StatusCode, readAll(t, resp)
}

// Google's Core Reporting rule as JSON alone: its rate-limit reasons as
// error codes, its schedule as {"googleApi": {}} with maxAttempts 6. A
// 403 that says userRateLimitExceeded is retried on 2^n s + U[0, 1 s],
// for a POST too; a 403 with another reason is final.
func TestSDKGoogleCoreReportingAsJSON(t *testing.T) {
	const js = `{"methodConfig": [{
		"name": [{"host": "www.googleapis.com", "path": "/analytics/v3/"}],
		"retryPolicy": {"maxAttempts": 6, "backoff": {"googleApi": {}}, "retryableStatusCodes": [500, 503]},
		"errorCodes": {"json": "error.errors.reason",
			"unprocessed": ["userRateLimitExceeded", "rateLimitExceeded", "quotaExceeded"]}
	}]}`
	const url = "https://www.googleapis.com/analytics/v3/data/ga"
	for _, tc := range []struct {
		method, reason string
		want           int
	}{
		{"GET", "userRateLimitExceeded", 6},
		{"POST", "quotaExceeded", 6},
		{"GET", "userRateLimitExceededUnreg", 1},
		{"GET", "insufficientPermissions", 1},
	} {
		t.Run(tc.method+" "+tc.reason, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				body := googleError(403, tc.reason)
				tr, srv := newScripted(mustParse(t, js), rt.Step{Status: 403, Body: body})
				var log hookLog
				tr.Hooks = log.hooks("")
				start := time.Now()
				status, got := sendTo(t, tr, t.Context(), tc.method, url)
				assert.Equal(t, 403, status)
				assert.Equal(t, body, got, "the body comes back whole")
				srv.WantAttempts(t, tc.want)
				for n, w := range log.waits() {
					lo := time.Second << n
					assert.True(t, w.Delay >= lo && w.Delay <= lo+time.Second, "wait %d: got %v, want [%v, %v]", n, w.Delay, lo, lo+time.Second)
				}
				if tc.want == 6 {
					assert.GreaterOrEqual(t, time.Since(start), 31*time.Second, "1+2+4+8+16 s at least")
				}
			})
		})
	}
}

// GitHub's primary quota as JSON alone: a serverDelayHeaders entry with
// "remaining". A 429 whose X-RateLimit-Remaining reads 0 waits for the
// X-RateLimit-Reset it names, in Unix seconds; a 200 that spends the
// quota holds the host's next request until the reset; a reset beside a
// quota not yet spent counts for nothing.
func TestSDKGitHubQuotaAsJSON(t *testing.T) {
	const js = `{"methodConfig": [{"name": [{"host": "api.github.com"}],
		"retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s", "maxBackoff": "8s", "backoffMultiplier": 2,
			"retryableStatusCodes": [429, 502]}}],
		"serverDelayHeaders": [{"name": "X-RateLimit-Reset", "format": "unixSeconds", "remaining": "X-RateLimit-Remaining"}],
		"maxServerDelay": "1h"}`
	const url = "https://api.github.com/repos/o/r"
	quota := func(status int, remaining string, in time.Duration) rt.Step {
		return rt.Step{Status: status, Header: http.Header{
			"X-RateLimit-Remaining": {remaining},
			"X-RateLimit-Reset":     {strconv.FormatInt(time.Now().Add(in).Unix(), 10)},
		}}
	}
	t.Run("429 spent waits for the reset", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr, srv := newScripted(mustParse(t, js), quota(429, "0", 40*time.Second), rt.Step{Status: 200})
			status, _ := sendTo(t, tr, t.Context(), "GET", url)
			assert.Equal(t, 200, status)
			at := arrivals(srv)
			require.Len(t, at, 2)
			assert.True(t, at[1] >= 40*time.Second && at[1] <= 45*time.Second, "got the retry at %v, want 40 s on", at[1])
		})
	})
	t.Run("a 200 that spends the quota holds the host", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr, srv := newScripted(mustParse(t, js), quota(200, "0", 30*time.Minute), rt.Step{Status: 200})
			status, _ := sendTo(t, tr, t.Context(), "GET", url)
			assert.Equal(t, 200, status, "the answer itself is a success")
			status, _ = sendTo(t, tr, t.Context(), "GET", url)
			assert.Equal(t, 200, status)
			at := arrivals(srv)
			require.Len(t, at, 2)
			assert.GreaterOrEqual(t, at[1], 30*time.Minute, "got the next request at %v, want it held until the reset", at[1])
			assert.EqualValues(t, 1, tr.Stats().Total.HoldsSet)
		})
	})
	t.Run("a quota left is no delay", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr, srv := newScripted(mustParse(t, js), quota(502, "10", 30*time.Minute), rt.Step{Status: 200})
			status, _ := sendTo(t, tr, t.Context(), "GET", url)
			assert.Equal(t, 200, status)
			at := arrivals(srv)
			require.Len(t, at, 2)
			assert.Less(t, at[1], 2*time.Second, "got the retry at %v, want the backoff's wait", at[1])
		})
	})
}

// AWS's ThrottlingException in a 400 body is a throttle two ways: a
// Classify that returns Throttled, and the same as data in ErrorCodes. A
// POST is retried either way, and the host is paced.
func TestSDKThrottlingExceptionInA400(t *testing.T) {
	const body = `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate exceeded"}`
	classify := func(_ int, resp *http.Response, err error) retryhttp.Verdict {
		if err == nil && resp.StatusCode == 400 {
			if b, _ := retryhttp.PeekBody(resp, 4<<10); bytes.Contains(b, []byte("ThrottlingException")) {
				return retryhttp.Throttled
			}
		}
		return retryhttp.UsePolicy
	}
	rule := func(codes *policy.ErrorCodes) *policy.Config {
		return &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}}, ErrorCodes: codes,
			Retry: &policy.Retry{MaxAttempts: 3, Backoff: policy.Exponential{Initial: 100 * time.Millisecond, Multiplier: 2},
				RetryableStatusCodes: []int{500, 503}}}}}
	}
	for name, tr := range map[string]*retryhttp.Transport{
		"Classify":   {Policy: rule(nil), Classify: classify},
		"ErrorCodes": {Policy: rule(&policy.ErrorCodes{JSON: "__type", Throttled: []string{"ThrottlingException"}})},
		"JSON": {Policy: mustParse(t, `{"methodConfig": [{"name": [{}],
			"retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [503]},
			"errorCodes": {"json": "__type", "throttled": ["ThrottlingException"]}}]}`)},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := script(rt.Step{Status: 400, Body: body}, rt.Step{Status: 200, Body: "{}"})
				tr.Base = srv
				status, _ := sendTo(t, tr, t.Context(), "POST", "https://dynamodb.test/")
				assert.Equal(t, 200, status)
				srv.WantAttempts(t, 2)
				assert.Positive(t, tr.Stats().Hosts["dynamodb.test"].PaceRate, "a throttle paces the host")
			})
		})
	}
}

// A per-call rule is checked as a Config's rule is: an invalid one fails
// the request at once, nothing sent, its body closed, with an error that
// names the field and the value and matches policy.ErrInvalid; a valid
// one governs the request in place of the matching rule.
func TestSDKWithPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, srv := newScripted(policy.None(), rt.Step{Status: 503}, rt.Step{Status: 200})
		bad := &policy.Rule{Retry: &policy.Retry{MaxAttempts: 1, RetryableStatusCodes: []int{503}}}
		req, err := http.NewRequestWithContext(retryhttp.WithPolicy(t.Context(), bad), "POST", "https://api.test/", strings.NewReader("x"))
		require.NoError(t, err)
		closes := &closeCounter{ReadCloser: req.Body, n: new(atomic.Int64)}
		req.Body = closes
		resp, err := tr.RoundTrip(req)
		require.Nil(t, resp)
		require.ErrorIs(t, err, policy.ErrInvalid)
		var fe *policy.FieldError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, "Retry.MaxAttempts", fe.Field)
		assert.Equal(t, "1", fe.Value)
		assert.Equal(t, "retryhttp: invalid per-call rule: policy: Retry.MaxAttempts: 1: must be at least 2", err.Error())
		assert.EqualValues(t, 1, closes.n.Load(), "the body is closed once")
		srv.WantAttempts(t, 0)

		good := &policy.Rule{Retry: &policy.Retry{MaxAttempts: 2, Backoff: policy.Table{Steps: []time.Duration{time.Second}},
			RetryableStatusCodes: []int{503}}}
		status, _ := sendTo(t, tr, retryhttp.WithPolicy(t.Context(), good), "GET", "https://api.test/")
		assert.Equal(t, 200, status, "the per-call rule retries what policy.None() would not")
	})
}

// Prepare signs each attempt afresh: each attempt is a copy of its own,
// with headers of its own, and the caller's request is never modified.
func TestSDKPrepareSignsEachAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, srv := newScripted(retryConfig(3, 503), rt.Step{Status: 503}, rt.Step{Status: 503}, rt.Step{Status: 200})
		var seen []*http.Request
		tr.Prepare = func(attempt int, req *http.Request) error {
			for _, s := range seen {
				require.NotSame(t, s, req, "attempt %d: a request of its own", attempt)
			}
			require.Empty(t, req.Header.Get("Authorization"), "attempt %d: a signature left from another attempt", attempt)
			seen = append(seen, req)
			req.Header.Set("Authorization", "sig-"+strconv.Itoa(attempt))
			req.Header.Set("Amz-Sdk-Request", "attempt="+strconv.Itoa(attempt)+"; max=3")
			return nil
		}
		req := newRequest(t, t.Context(), "PUT", "payload")
		req.Header.Set("Content-Type", "text/plain")
		before := req.Header.Clone()
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Same(t, req, resp.Request, "the response names the caller's request")
		readAll(t, resp)
		assert.Equal(t, before, req.Header, "the caller's headers are untouched")
		for _, s := range seen {
			assert.NotSame(t, req, s)
		}
		srv.WantHeader(t, "Authorization", "sig-1", "sig-2", "sig-3")
		srv.WantHeader(t, "Amz-Sdk-Request", "attempt=1; max=3", "attempt=2; max=3", "attempt=3; max=3")
		srv.WantBody(t, "payload")
	})
}
