package retryhttp_test

import (
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// codesConfig retries 503 under one rule for every request, with an error
// table read from JSON's "code" and from the X-Error header.
func codesConfig() *policy.Config {
	cfg := retryConfig(3, 503)
	cfg.Rules[0].ErrorCodes = &policy.ErrorCodes{JSON: "code", Header: "X-Error",
		Retryable: []string{"again"}, Throttled: []string{"slow_down"}, Unprocessed: []string{"busy"}, Final: []string{"no"}}
	return cfg
}

// coded is an answer of status with code as its JSON body.
func coded(status int, code string) rt.Step {
	return rt.Step{Status: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: `{"code": "` + code + `", "message": "as the API says"}`}
}

// The rule's error table judges an answer of status 400 or above after
// the caller's classifier and before the server's X-Should-Retry and the
// rule's status lists; each list is its verdict, idempotency rules and
// all; a code listed nowhere, or a success, leaves the answer to the rest.
func TestErrorCodesJudge(t *testing.T) {
	shouldNot := func(s rt.Step) rt.Step { s.Header.Set("X-Should-Retry", "false"); return s }
	tests := []struct {
		name     string
		method   string
		first    rt.Step
		classify retryhttp.Verdict
		attempts int
		paced    bool // the host's rule is paced after it
	}{
		{"retryable 400", "GET", coded(400, "again"), retryhttp.UsePolicy, 2, false},
		{"retryable 400, POST", "POST", coded(400, "again"), retryhttp.UsePolicy, 1, false},
		{"throttled 400, POST", "POST", coded(400, "slow_down"), retryhttp.UsePolicy, 2, true},
		{"unprocessed 409, POST", "POST", coded(409, "busy"), retryhttp.UsePolicy, 2, false},
		{"final 503", "GET", coded(503, "no"), retryhttp.UsePolicy, 1, false},
		{"unlisted code: the status lists", "GET", coded(503, "other"), retryhttp.UsePolicy, 2, false},
		{"unlisted code, 400", "GET", coded(400, "other"), retryhttp.UsePolicy, 1, false},
		{"before X-Should-Retry", "GET", shouldNot(coded(400, "again")), retryhttp.UsePolicy, 2, false},
		{"X-Should-Retry when unlisted", "GET", shouldNot(coded(503, "other")), retryhttp.UsePolicy, 1, false},
		{"the classifier first", "GET", coded(400, "slow_down"), retryhttp.Final, 1, false},
		{"the classifier's wait kept", "GET", coded(400, "again"), retryhttp.UsePolicy.After(3 * time.Second), 2, false},
		{"header", "POST", rt.Step{Status: 400, Header: http.Header{"X-Error": {"slow_down: later"}}}, retryhttp.UsePolicy, 2, true},
		{"never on a success", "GET", coded(200, "slow_down"), retryhttp.UsePolicy, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := script(tc.first, rt.Step{Body: "ok"})
				tr := &retryhttp.Transport{Base: srv, Policy: codesConfig(),
					Classify: func(int, *http.Response, error) retryhttp.Verdict { return tc.classify }}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), tc.method, "payload"))
				require.NoError(t, err)
				body := readAll(t, resp)
				at := arrivals(srv)
				require.Len(t, at, tc.attempts, "got %d attempts, want %d", len(at), tc.attempts)
				if tc.attempts == 1 {
					assert.Equal(t, tc.first.Body, body, "the answer handed back has its body whole")
				}
				if d, ok := waitOf(tc.classify); ok {
					within(t, at[1], d, 300*time.Millisecond, "the classifier's wait")
				}
				assert.Equal(t, tc.paced, tr.Stats().Hosts["api.test"].PaceRate > 0, "paced")
			})
		})
	}
}

// waitOf is the wait v asks for, read from its name.
func waitOf(v retryhttp.Verdict) (time.Duration, bool) {
	if v != retryhttp.UsePolicy.After(3*time.Second) {
		return 0, false
	}
	return 3 * time.Second, true
}

// A throttle by code counts as a 429 does: the host's other requests of
// the rule, first attempts included, go out at its pace.
func TestErrorCodeThrottlePacesTheHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(n int, _ *http.Request) rt.Step {
			if n == 21 {
				return coded(400, "slow_down")
			}
			return rt.Step{Body: "ok"}
		}}
		tr := &retryhttp.Transport{Base: srv, Policy: codesConfig()}
		for range 21 { // 20 requests in a second, then the throttle and its retry
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			readAll(t, resp)
			time.Sleep(50 * time.Millisecond)
		}
		rate := tr.Stats().Hosts["api.test"].PaceRate
		require.Greater(t, rate, 0.0, "the throttle paces the host")
		start := len(arrivals(srv))
		for _, err := range burst(t, tr, "/v1/items", 5, 0) {
			require.NoError(t, err)
		}
		at := arrivals(srv)[start:]
		require.Len(t, at, 5)
		assert.Greater(t, at[4]-at[0], 3*time.Duration(float64(time.Second)/rate),
			"five requests sent at once go out a send slot apart")
	})
}

// Under a hedging rule a retryable code is non-fatal: the next hedge goes
// at once; a final code ends the request.
func TestErrorCodesUnderHedging(t *testing.T) {
	for _, tc := range []struct {
		code     string
		attempts int
		status   int
	}{
		{"again", 2, 200},
		{"no", 1, 400},
	} {
		t.Run(tc.code, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := script(coded(400, tc.code), rt.Step{Body: "ok"})
				cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
					Hedge:      &policy.Hedge{MaxAttempts: 2, HedgingDelay: time.Hour},
					ErrorCodes: &policy.ErrorCodes{JSON: "code", Retryable: []string{"again"}, Final: []string{"no"}}}}}
				tr := &retryhttp.Transport{Base: srv, Policy: cfg}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				readAll(t, resp)
				assert.Equal(t, tc.status, resp.StatusCode)
				assert.Equal(t, make([]time.Duration, tc.attempts), arrivals(srv), "the next hedge at once")
			})
		})
	}
}

// A rule given for one request has its error table too, and WithoutRetries
// has none: the answer is the caller's at once.
func TestErrorCodesPerCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, srv := newScripted(policy.None(), coded(400, "again"), rt.Step{Body: "ok"})
		rule := codesConfig().Rules[0]
		rule.Name = nil
		resp, err := tr.RoundTrip(newRequest(t, retryhttp.WithPolicy(t.Context(), &rule), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, "ok", readAll(t, resp))
		assert.Len(t, arrivals(srv), 2)

		tr, srv = newScripted(codesConfig(), coded(400, "again"), rt.Step{Body: "ok"})
		resp, err = tr.RoundTrip(newRequest(t, retryhttp.WithoutRetries(t.Context()), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, 400, resp.StatusCode)
		assert.Len(t, arrivals(srv), 1)
	})
}

// An error table and a read-ahead written in JSON do what the Go form
// does: a DynamoDB throttle in a 400 is retried for a POST, and a body cut
// mid-read is retried for a GET.
func TestErrorCodesFromJSON(t *testing.T) {
	cfg, err := policy.ParseConfig([]byte(`{"methodConfig": [{
	  "name": [{}],
	  "retryPolicy": {"maxAttempts": 3, "backoff": {"fullJitter": {"initial": "1s", "max": "20s", "multiplier": 2}},
	    "retryableStatusCodes": [500, 502, 503, 504], "readAhead": 1048576},
	  "errorCodes": {"header": "X-Amzn-ErrorType", "json": "__type", "xml": "Error/Code",
	    "throttled": ["ThrottlingException", "ProvisionedThroughputExceededException", "SlowDown"]}
	}]}`))
	require.NoError(t, err)
	for _, tc := range []struct {
		method string
		first  rt.Step
	}{
		{"POST", rt.Step{Status: 400, Body: `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"}`}},
		{"GET", rt.Step{Body: strings.Repeat("x", 4096), Fault: rt.CloseMidBody, After: 100}},
	} {
		synctest.Test(t, func(t *testing.T) {
			srv := script(tc.first, rt.Step{Body: "ok"})
			tr := &retryhttp.Transport{Base: srv, Policy: cfg}
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), tc.method, "payload"))
			require.NoError(t, err)
			assert.Equal(t, "ok", readAll(t, resp))
			assert.Len(t, arrivals(srv), 2, "%s: retried", tc.method)
		})
	}
}

// Google's rate limits are data: a 403 whose reason, in the body's
// "errors" array, is a rate limit is retried, a POST too, and one with
// any other reason is handed back; the hooks see the code of each.
func TestErrorCodesInAnArray(t *testing.T) {
	google := func(reason string) rt.Step {
		return rt.Step{Status: 403, Header: http.Header{"Content-Type": {"application/json"}},
			Body: `{"error": {"code": 403, "message": "x", "errors": [{"domain": "usageLimits", "reason": "` + reason + `"}]}}`}
	}
	for reason, attempts := range map[string]int{"userRateLimitExceeded": 2, "dailyLimitExceeded": 1} {
		t.Run(reason, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := retryConfig(3, 503)
				cfg.Rules[0].ErrorCodes = &policy.ErrorCodes{JSON: "error.errors.reason",
					Unprocessed: []string{"userRateLimitExceeded", "rateLimitExceeded", "quotaExceeded"}}
				tr, srv := newScripted(cfg, google(reason), rt.Step{})
				var read []string
				tr.Hooks = &retrytrace.Hooks{AttemptDone: func(a retrytrace.AttemptDoneInfo) { read = append(read, a.ErrorCode) }}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "POST", "x"))
				require.NoError(t, err)
				body := readAll(t, resp)
				srv.WantAttempts(t, attempts)
				if attempts == 1 {
					assert.Equal(t, 403, resp.StatusCode)
					assert.Contains(t, body, reason, "the body whole for the caller")
					assert.Equal(t, []string{reason}, read, "the code read, listed or not, for the hooks")
				} else {
					assert.Equal(t, 200, resp.StatusCode)
					assert.Equal(t, []string{reason, ""}, read, "a success reads no code")
				}
			})
		})
	}
}

// The code the hooks see is cut to 256 bytes: a server cannot fill logs
// and spans with its body.
func TestErrorCodeForTheHooksIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := codesConfig()
		long := strings.Repeat("x", 10_000)
		tr, _ := newScripted(cfg, coded(400, long))
		var read []string
		tr.Hooks = &retrytrace.Hooks{AttemptDone: func(a retrytrace.AttemptDoneInfo) { read = append(read, a.ErrorCode) }}
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Len(t, readAll(t, resp), len(`{"code": "", "message": "as the API says"}`)+len(long), "the body whole")
		require.Len(t, read, 1)
		assert.LessOrEqual(t, len(read[0]), 256)
		assert.True(t, strings.HasPrefix(read[0], "xxx") && strings.HasSuffix(read[0], "…"), "cut, and marked so")
	})
}
