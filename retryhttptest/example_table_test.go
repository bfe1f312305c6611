package retryhttptest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// items is an SDK client for a fictional items API, built on retryhttp:
// the code under test.
type items struct {
	client *http.Client
}

// newItems returns a client whose requests go through base (nil in
// production: retryhttp's own). Retries wait backoff, doubling: tests on
// the wall clock pass a short one, tests in a synctest bubble the real
// one.
func newItems(base http.RoundTripper, backoff time.Duration) *items {
	cfg := &policy.Config{Rules: []policy.Rule{{
		Name: []policy.Name{{}},
		Retry: &policy.Retry{
			MaxAttempts:          3,
			Backoff:              policy.Exponential{Initial: backoff, Max: 4 * backoff, Multiplier: 2},
			RetryableStatusCodes: []int{429, 500, 502, 503, 504},
		},
	}}}
	tr := &retryhttp.Transport{Base: base, Policy: cfg, Classify: rateLimited}
	return &items{client: &http.Client{Transport: tr}}
}

// rateLimited is the API's rule for a 403: retried, whatever the method,
// when its JSON error reason is a rate limit, named exactly; final
// otherwise.
func rateLimited(_ int, resp *http.Response, err error) retryhttp.Verdict {
	if err != nil || resp.StatusCode != http.StatusForbidden {
		return retryhttp.UsePolicy
	}
	body, _ := retryhttp.PeekBody(resp, 4<<10)
	var e struct {
		Error struct{ Errors []struct{ Reason string } }
	}
	if json.Unmarshal(body, &e) == nil && len(e.Error.Errors) > 0 {
		switch e.Error.Errors[0].Reason {
		case "userRateLimitExceeded", "rateLimitExceeded", "quotaExceeded":
			return retryhttp.RetryableUnprocessed
		}
	}
	return retryhttp.Final
}

// get fetches an item.
func (c *items) get(ctx context.Context, id string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "https://api.example.com/v1/items/"+id, nil)
	if err != nil {
		return "", err
	}
	return c.do(req)
}

// create makes an item: a POST, which must not be sent twice.
func (c *items) create(ctx context.Context, item string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", "https://api.example.com/v1/items", strings.NewReader(item))
	if err != nil {
		return "", err
	}
	return c.do(req)
}

func (c *items) do(req *http.Request) (string, error) {
	resp, err := c.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("items: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return "", fmt.Errorf("items: reading %s: %w", req.URL.Path, err)
	case resp.StatusCode >= 300:
		return "", fmt.Errorf("items: %s", resp.Status)
	}
	return string(body), nil
}

// A table of the SDK's retry behaviour against a scripted server: each
// case is a script, a call, and what the caller and the server should
// see. It runs in memory on the wall clock with short waits, in a few
// milliseconds; in a test, the same table runs inside synctest.Test with
// the SDK's real waits, in virtual time, and checks the server's records
// with srv.WantAttempts(t, n) and the like.
func Example_retryTable() {
	const item = `{"id":"7"}`
	pushback := func(ms string) http.Header { return http.Header{"X-Retry-Pushback-Ms": {ms}} }
	forbidden := func(reason string) retryhttptest.Step {
		return retryhttptest.Step{Status: 403, Body: `{"error":{"errors":[{"reason":"` + reason + `"}],"code":403}}`}
	}
	retryAfter := func(s string) http.Header { return http.Header{"Retry-After": {s}} }
	cases := []struct {
		name     string
		post     bool // create, not get
		script   []retryhttptest.Step
		want     string // the result, or the error
		attempts int
	}{
		{"always 503", false, []retryhttptest.Step{{Status: 503}},
			"items: 503 Service Unavailable", 3},
		{"404 is final", false, []retryhttptest.Step{{Status: 404}, {Body: item}},
			"items: 404 Not Found", 1},
		{"429, Retry-After: 0", false,
			[]retryhttptest.Step{{Status: 429, Header: retryAfter("0")}, {Body: item}}, item, 2},
		{"429, Retry-After: an hour", false,
			[]retryhttptest.Step{{Status: 429, Header: retryAfter("3600")}, {Body: item}},
			"items: 429 Too Many Requests", 1},
		{"pushback 5 ms", false,
			[]retryhttptest.Step{{Status: 503, Header: pushback("5")}, {Body: item}}, item, 2},
		{"reset before the answer", false,
			[]retryhttptest.Step{{Fault: retryhttptest.Reset}, {Body: item}}, item, 2},
		{"reset mid-body", false,
			[]retryhttptest.Step{{Body: item, Fault: retryhttptest.ResetMidBody, After: 4}},
			"items: reading /v1/items/7: read tcp api.example.com:443: read: connection reset by peer", 1},
		{"POST: 503 is not retried", true,
			[]retryhttptest.Step{{Status: 503}, {Status: 201, Body: item}},
			"items: 503 Service Unavailable", 1},
		{"POST: 403 rate limit", true,
			[]retryhttptest.Step{forbidden("userRateLimitExceeded"), {Status: 201, Body: item}}, item, 2},
		{"403 ...ExceededUnreg", false,
			[]retryhttptest.Step{forbidden("userRateLimitExceededUnreg"), {Body: item}},
			"items: 403 Forbidden", 1},
	}
	for _, tc := range cases {
		srv := &retryhttptest.Server{Script: tc.script}
		sdk := newItems(srv, time.Millisecond)
		var got string
		var err error
		if tc.post {
			got, err = sdk.create(context.Background(), item)
		} else {
			got, err = sdk.get(context.Background(), "7")
		}
		if err != nil {
			got = err.Error()
		}
		fmt.Printf("%-26s %d attempt(s): %s\n", tc.name, srv.Count(), got)
		if got != tc.want || srv.Count() != tc.attempts {
			fmt.Printf("%-26s want %d attempt(s): %s\n", "", tc.attempts, tc.want)
		}
	}
	// Output:
	// always 503                 3 attempt(s): items: 503 Service Unavailable
	// 404 is final               1 attempt(s): items: 404 Not Found
	// 429, Retry-After: 0        2 attempt(s): {"id":"7"}
	// 429, Retry-After: an hour  1 attempt(s): items: 429 Too Many Requests
	// pushback 5 ms              2 attempt(s): {"id":"7"}
	// reset before the answer    2 attempt(s): {"id":"7"}
	// reset mid-body             1 attempt(s): items: reading /v1/items/7: read tcp api.example.com:443: read: connection reset by peer
	// POST: 503 is not retried   1 attempt(s): items: 503 Service Unavailable
	// POST: 403 rate limit       2 attempt(s): {"id":"7"}
	// 403 ...ExceededUnreg       1 attempt(s): items: 403 Forbidden
}
