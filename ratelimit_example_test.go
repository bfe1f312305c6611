package retryhttp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// gitHubConfig is GitHub's documented rate-limit rules as one rule: the
// reset of a spent primary quota is a delay header that counts only when
// X-RateLimit-Remaining reads 0 (GitHub sends both on every response),
// and then holds the host; errors are retried on a backoff; a wait of up
// to an hour is kept, as a primary quota resets within the hour.
func gitHubConfig() *policy.Config {
	return &policy.Config{
		Rules: []policy.Rule{{
			Name: []policy.Name{{Host: "api.github.com"}},
			Retry: &policy.Retry{
				MaxAttempts:          4,
				Backoff:              policy.Exponential{Initial: time.Second, Max: 8 * time.Second, Multiplier: 2},
				RetryableStatusCodes: []int{500, 502, 503, 504},
			},
		}},
		DelayHeaders: []policy.DelayHeader{{Name: "X-RateLimit-Reset", Format: policy.DelayUnixSeconds,
			Remaining: "X-RateLimit-Remaining"}},
		MaxServerDelay: time.Hour,
		Hold:           &policy.Hold{},
		Throttle:       &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1},
	}
}

// gitHubClassify is GitHub's secondary rate limit: a 403 or 429 that
// says so. Obey Retry-After; else, if the quota is spent, wait for its
// reset; else wait a minute, longer each time. A 403 that is no rate
// limit is final.
func gitHubClassify(attempt int, resp *http.Response, err error) retryhttp.Verdict {
	if err != nil || resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests {
		return retryhttp.UsePolicy
	}
	if resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-RateLimit-Remaining") == "0" {
		return retryhttp.RetryableUnprocessed // the server's delay headers set the wait
	}
	body, _ := retryhttp.PeekBody(resp, 4<<10)
	if bytes.Contains(bytes.ToLower(body), []byte("secondary rate limit")) {
		return retryhttp.RetryableUnprocessed.After(time.Minute << (attempt - 1))
	}
	return retryhttp.Final
}

// gitHubAnswer is what an in-memory GitHub answers to kind: "secondary"
// (a secondary limit without headers), "retry-after" (one with
// Retry-After: 30), "primary" (a spent quota that resets in 20 s), "502"
// (a 502 with 4999 requests left, reset in 30 min), "forbidden" (no rate
// limit) or "ok"; every answer carries GitHub's rate headers and a Date.
func gitHubAnswer(kind string, now time.Time) retryhttptest.Step {
	h := http.Header{"Date": {now.UTC().Format(http.TimeFormat)},
		"X-Ratelimit-Remaining": {"4999"}, "X-Ratelimit-Reset": {strconv.FormatInt(now.Add(30*time.Minute).Unix(), 10)}}
	switch kind {
	case "secondary":
		return retryhttptest.Step{Status: 403, Header: h, Body: `{"message":"You have exceeded a secondary rate limit."}`}
	case "retry-after":
		h.Set("Retry-After", "30")
		return retryhttptest.Step{Status: 429, Header: h, Body: `{"message":"You have exceeded a secondary rate limit."}`}
	case "primary":
		h.Set("X-Ratelimit-Remaining", "0")
		h.Set("X-Ratelimit-Reset", strconv.FormatInt(now.Add(20*time.Second).Unix(), 10))
		return retryhttptest.Step{Status: 403, Header: h, Body: `{"message":"API rate limit exceeded."}`}
	case "502":
		return retryhttptest.Step{Status: 502, Header: h}
	case "forbidden":
		return retryhttptest.Step{Status: 403, Header: h, Body: `{"message":"Resource not accessible by integration"}`}
	}
	return retryhttptest.Step{Header: h, Body: `{"login":"octocat"}`}
}

// GitHub's rate limits as one rule and a classifier: each answer's wait
// before the retry, as the rule asks for it (each request here ends as
// its wait starts; TestGitHubRule waits them out in virtual time).
func Example_gitHub() {
	srv := httptest.NewServer(&retryhttptest.Server{Choose: func(_ int, r *http.Request) retryhttptest.Step {
		return gitHubAnswer(r.URL.Query().Get("answer"), time.Now())
	}})
	defer srv.Close()
	cfg := gitHubConfig()
	cfg.Rules[0].Name[0].Host = srv.Listener.Addr().String() // the test server stands in for api.github.com
	for _, answer := range []string{"secondary", "retry-after", "primary", "502", "forbidden"} {
		// A Transport each: a rate limit holds its host's next requests.
		tr := &retryhttp.Transport{Policy: cfg, Classify: gitHubClassify}
		fmt.Printf("%s: %s\n", answer, firstWait(tr, "GET", srv.URL+"/user?answer="+answer))
	}
	// Output:
	// secondary: waits 1m0s (classify)
	// retry-after: waits 30s (retry-after)
	// primary: waits 20s (server-delay)
	// 502: waits the backoff
	// forbidden: 403, not retried
}

// firstWait sends a request through tr and says what follows its first
// attempt: the wait the rule asks for before the next (the request ends as
// that wait starts: it is shown, not waited out), or the answer or error
// handed back.
func firstWait(tr *retryhttp.Transport, method, url string) string {
	defer tr.CloseIdleConnections()
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	var wait string
	ctx = retrytrace.WithHooks(ctx, &retrytrace.Hooks{Wait: func(w retrytrace.WaitInfo) {
		wait = "waits " + asked(w)
		stop(errors.New("seen"))
	}})
	req, _ := http.NewRequestWithContext(ctx, method, url, nil)
	resp, err := tr.RoundTrip(req)
	switch {
	case wait != "":
		return wait
	case err != nil:
		return err.Error()
	}
	resp.Body.Close()
	return fmt.Sprintf("%d, not retried", resp.StatusCode)
}

// asked is the wait w, to the server's own precision: a server's delay is
// jittered up by at most a tenth, at most a second; a backoff is random.
func asked(w retrytrace.WaitInfo) string {
	switch {
	case w.Reason == retrytrace.WaitBackoff:
		return "the backoff"
	case w.Delay >= 10*time.Second:
		return fmt.Sprintf("%v (%s)", w.Delay.Truncate(time.Second), w.Reason)
	}
	return fmt.Sprintf("%v (%s)", w.Delay.Truncate(time.Second/4), w.Reason)
}

// llmConfig is an LLM API's rules (OpenAI's, as its own SDK retries) as
// configuration, with no code: 408, 409, 429 and 5xx are retried with a
// backoff, for POST too, as the SDK retries them; retry-after-ms and
// x-should-retry are read by default; a spent request or token quota waits
// for its reset, written as a Go duration ("6m0s"), and holds the host.
func llmConfig() *policy.Config {
	return &policy.Config{
		Rules: []policy.Rule{{
			Name: []policy.Name{{Host: "api.openai.com"}},
			Retry: &policy.Retry{
				MaxAttempts:          3,
				Backoff:              policy.Exponential{Initial: 500 * time.Millisecond, Max: 8 * time.Second, Multiplier: 2, Jitter: 0.25},
				RetryableStatusCodes: []int{408, 409, 429, 500, 502, 503, 504},
				RetryNonIdempotent:   true, // the API's calls are POSTs, retried as the SDK retries them
			},
		}},
		DelayHeaders: []policy.DelayHeader{
			{Name: "X-Ratelimit-Reset-Requests", Format: policy.DelayDuration, Remaining: "X-Ratelimit-Remaining-Requests"},
			{Name: "X-Ratelimit-Reset-Tokens", Format: policy.DelayDuration, Remaining: "X-Ratelimit-Remaining-Tokens"},
		},
		MaxServerDelay: 10 * time.Minute,
		Hold:           &policy.Hold{},
		Throttle:       &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1},
	}
}

// An LLM API's rate limits as configuration alone: each answer's wait
// before the retry (each request here ends as its wait starts).
func Example_llmAPI() {
	answers := map[string]retryhttptest.Step{
		"retry-after-ms": {Status: 429, Header: http.Header{"Retry-After-Ms": {"1500"}}},
		"requests-spent": {Status: 429, Header: http.Header{"X-Ratelimit-Remaining-Requests": {"0"},
			"X-Ratelimit-Reset-Requests": {"6m0s"}}},
		"should-not-retry": {Status: 503, Header: http.Header{"X-Should-Retry": {"false"}}},
		"should-retry":     {Status: 400, Header: http.Header{"X-Should-Retry": {"true"}}},
	}
	srv := httptest.NewServer(&retryhttptest.Server{Choose: func(_ int, r *http.Request) retryhttptest.Step {
		return answers[r.URL.Query().Get("answer")]
	}})
	defer srv.Close()
	cfg := llmConfig()
	cfg.Rules[0].Name[0].Host = srv.Listener.Addr().String() // the test server stands in for api.openai.com
	for _, answer := range []string{"retry-after-ms", "requests-spent", "should-not-retry", "should-retry"} {
		tr := &retryhttp.Transport{Policy: cfg} // a Transport each: a spent quota holds its host
		fmt.Printf("%s: %s\n", answer, firstWait(tr, "POST", srv.URL+"/v1/responses?answer="+answer))
	}
	// Output:
	// retry-after-ms: waits 1.5s (retry-after)
	// requests-spent: waits 6m0s (server-delay)
	// should-not-retry: 503, not retried
	// should-retry: waits the backoff
}
