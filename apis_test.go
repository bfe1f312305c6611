package retryhttp_test

import (
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// The APIs whose rules the docs spell out, answered as each documents its
// answers, through the config the docs give an SDK author: what the API's
// own SDK does, or better.

// twoCalls sends a POST (a GET when method says so) to url through tr and,
// a second into its first wait, another; it returns when each reached
// srv, in the order of the attempts.
func twoCalls(t *testing.T, tr *retryhttp.Transport, method, url string) {
	t.Helper()
	call := func() {
		body := strings.NewReader(`{"model": "m"}`)
		req, err := http.NewRequestWithContext(t.Context(), method, url, body)
		if method == "GET" {
			req, err = http.NewRequestWithContext(t.Context(), method, url, nil)
		}
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
	}
	done := make(chan struct{})
	go func() { defer close(done); call() }()
	time.Sleep(time.Second)
	call()
	<-done
}

// GitHub's secondary rate limit says how long to wait in a Retry-After on
// a 403 as well as on a 429: the host's other requests wait it out too,
// as after a 429, rather than meet the limit again (GitHub warns that
// requests sent while limited may get an integration banned).
func TestGitHubSecondaryLimitHoldsTheHost(t *testing.T) {
	for _, status := range []int{403, 429} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(n int, _ *http.Request) rt.Step {
					if n > 1 {
						return gitHubAnswer("ok", time.Now())
					}
					st := gitHubAnswer("retry-after", time.Now()) // Retry-After: 30
					st.Status = status
					return st
				}}
				tr := &retryhttp.Transport{Base: srv, Policy: gitHubConfig(), Classify: gitHubClassify}
				twoCalls(t, tr, "GET", "https://api.github.com/user")
				at := arrivals(srv)
				require.Len(t, at, 3)
				within(t, at[1], 30*time.Second, time.Second, "the second call, held")
				// A 429 paces the host too: the retry may wait a slot.
				within(t, at[2], 30*time.Second, 2*time.Second, "the retry")
			})
		})
	}
}

// docJSON is the JSON config of docs/rate-limits.md that names host,
// parsed.
func docJSON(t *testing.T, host string) *policy.Config {
	t.Helper()
	md, err := os.ReadFile("docs/rate-limits.md")
	require.NoError(t, err)
	for _, block := range strings.Split(string(md), "```json\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if strings.Contains(block, `"host": "`+host+`"`) {
			cfg, err := policy.ParseConfig([]byte(block))
			require.NoError(t, err)
			return cfg
		}
	}
	t.Fatalf("docs/rate-limits.md has no JSON config for %s", host)
	return nil
}

// Every documented OpenAI retry case, through the Go config of
// Example_llmAPI and the JSON of docs/rate-limits.md: retry-after-ms
// before retry-after; a spent quota, of requests or of tokens, waits for
// its own reset, written as a Go duration; 408, 409 and 5xx retried for
// POSTs, as the SDK retries them; x-should-retry both ways.
func TestOpenAIRules(t *testing.T) {
	const url = "https://api.openai.com/v1/responses"
	openai := func(status int, kv ...string) rt.Step {
		s := rt.Step{Status: status, Header: http.Header{"Content-Type": {"application/json"},
			"X-Ratelimit-Remaining-Requests": {"59"}, "X-Ratelimit-Reset-Requests": {"1s"},
			"X-Ratelimit-Remaining-Tokens": {"149000"}, "X-Ratelimit-Reset-Tokens": {"400ms"}},
			Body: `{"error": {"message": "as OpenAI says", "type": "t", "param": null, "code": null}}`}
		for i := 0; i < len(kv); i += 2 {
			s.Header.Set(kv[i], kv[i+1])
		}
		return s
	}
	ok := rt.Step{Body: `{"id": "resp_1"}`}
	cases := []apiCase{
		{name: "429 retry-after-ms before retry-after", answers: []rt.Step{openai(429, "Retry-After-Ms", "1500", "Retry-After", "2"), ok},
			attempts: 2, status: 200, wait: 1500 * time.Millisecond},
		{name: "429 retry-after", answers: []rt.Step{openai(429, "Retry-After", "2"), ok}, attempts: 2, status: 200, wait: 2 * time.Second},
		{name: "429 requests spent", answers: []rt.Step{openai(429, "X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "20ms"), ok},
			attempts: 2, status: 200, wait: 20 * time.Millisecond},
		{name: "429 tokens spent, not its requests", answers: []rt.Step{openai(429, "X-Ratelimit-Remaining-Tokens", "0",
			"X-Ratelimit-Reset-Tokens", "6m0s"), ok}, attempts: 2, status: 200, wait: 6 * time.Minute},
		{name: "429 tokens spent, a fraction", answers: []rt.Step{openai(429, "X-Ratelimit-Remaining-Tokens", "0",
			"X-Ratelimit-Reset-Tokens", "1m7.5s"), ok}, attempts: 2, status: 200, wait: 67500 * time.Millisecond},
		{name: "408", answers: []rt.Step{openai(408), ok}, attempts: 2, status: 200},
		{name: "409", answers: []rt.Step{openai(409), ok}, attempts: 2, status: 200},
		{name: "500", answers: []rt.Step{openai(500), ok}, attempts: 2, status: 200},
		{name: "502", answers: []rt.Step{openai(502), ok}, attempts: 2, status: 200},
		{name: "503", answers: []rt.Step{openai(503), ok}, attempts: 2, status: 200},
		{name: "504", answers: []rt.Step{openai(504), ok}, attempts: 2, status: 200},
		{name: "500 three times", answers: []rt.Step{openai(500)}, attempts: 3, status: 500},
		{name: "500 x-should-retry: false", answers: []rt.Step{openai(500, "X-Should-Retry", "false"), ok}, attempts: 1, status: 500},
		{name: "400 x-should-retry: true", answers: []rt.Step{openai(400, "X-Should-Retry", "true"), ok}, attempts: 2, status: 200},
		{name: "400", answers: []rt.Step{openai(400), ok}, attempts: 1, status: 400},
		{name: "401", answers: []rt.Step{openai(401), ok}, attempts: 1, status: 401},
		{name: "connection reset", answers: []rt.Step{{Fault: rt.Reset}, ok}, attempts: 2, status: 200}, // as the SDK retries it
	}
	for _, config := range []string{"Go", "JSON"} {
		for _, c := range cases {
			t.Run(config+"/"+c.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					cfg := llmConfig()
					if config == "JSON" {
						cfg = docJSON(t, "api.openai.com")
					}
					// Every answer says 59 requests are left for a second:
					// a pace of 59 a second may or may not be in force.
					c.method, c.url, c.pace = "POST", url, paceLift
					srv := &rt.Server{Script: c.answers}
					if resp := c.run(t, &retryhttp.Transport{Base: srv, Policy: cfg}, srv); resp != nil {
						readAll(t, resp)
					}
				})
			})
		}
	}
}

// anthropicAnswer is an answer of Anthropic's API at now, its clock an
// hour behind: status, with the error type typ (none on a 200), the
// rate-limit headers of every answer, and kv, where a value given as a
// duration ("+5s") is written as the RFC 3339 time that far past the
// server's now.
func anthropicAnswer(now time.Time, status int, typ string, kv ...string) rt.Step {
	server := now.Add(-time.Hour).UTC()
	at := func(d time.Duration) string { return server.Add(d).Format(time.RFC3339) }
	s := rt.Step{Status: status, Header: http.Header{"Content-Type": {"application/json"}, "Date": {server.Format(http.TimeFormat)},
		"Anthropic-Ratelimit-Requests-Remaining": {"49"}, "Anthropic-Ratelimit-Requests-Reset": {at(time.Second)},
		"Anthropic-Ratelimit-Input-Tokens-Remaining": {"39000"}, "Anthropic-Ratelimit-Input-Tokens-Reset": {at(time.Second)},
		"Anthropic-Ratelimit-Output-Tokens-Remaining": {"7900"}, "Anthropic-Ratelimit-Output-Tokens-Reset": {at(time.Second)}},
		Body: `{"type": "message", "id": "msg_1"}`}
	if typ != "" {
		s.Body = `{"type": "error", "error": {"type": "` + typ + `", "message": "as Anthropic says"}, "request_id": "req_1"}`
	}
	for i := 0; i < len(kv); i += 2 {
		v := kv[i+1]
		if d, err := time.ParseDuration(strings.TrimPrefix(v, "+")); err == nil && strings.HasPrefix(v, "+") {
			v = at(d)
		}
		s.Header.Set(kv[i], v)
	}
	return s
}

// Every documented Anthropic retry case, through the JSON of
// docs/rate-limits.md: a 429 and a 529 retried on retry-after, or on the
// backoff, POSTs included, and both pacing the host; a spent quota waits
// for its reset, an RFC 3339 time read against the server's own clock;
// x-should-retry both ways; errors of the request final.
func TestAnthropicRules(t *testing.T) {
	const url = "https://api.anthropic.com/v1/messages"
	cases := func(now time.Time) []apiCase {
		ok := anthropicAnswer(now, 200, "")
		return []apiCase{
			{name: "429 requests spent", answers: []rt.Step{anthropicAnswer(now, 429, "rate_limit_error", "Retry-After", "5",
				"Anthropic-Ratelimit-Requests-Remaining", "0", "Anthropic-Ratelimit-Requests-Reset", "+5s"), ok},
				attempts: 2, status: 200, wait: 5 * time.Second, pace: paced},
			{name: "429 input tokens spent, no retry-after", answers: []rt.Step{anthropicAnswer(now, 429, "rate_limit_error",
				"Anthropic-Ratelimit-Input-Tokens-Remaining", "0", "Anthropic-Ratelimit-Input-Tokens-Reset", "+20s"), ok},
				attempts: 2, status: 200, wait: 20 * time.Second, pace: paceLift},
			{name: "529 overloaded", answers: []rt.Step{anthropicAnswer(now, 529, "overloaded_error", "X-Should-Retry", "true"), ok},
				attempts: 2, status: 200, pace: paced},
			{name: "529 overloaded, retry-after", answers: []rt.Step{anthropicAnswer(now, 529, "overloaded_error", "Retry-After", "10"), ok},
				attempts: 2, status: 200, wait: 10 * time.Second, pace: paceLift},
			{name: "529 three times", answers: []rt.Step{anthropicAnswer(now, 529, "overloaded_error")}, attempts: 3, status: 529, pace: paced},
			{name: "500", answers: []rt.Step{anthropicAnswer(now, 500, "api_error"), ok}, attempts: 2, status: 200},
			{name: "500 x-should-retry: false", answers: []rt.Step{anthropicAnswer(now, 500, "api_error", "X-Should-Retry", "false"), ok},
				attempts: 1, status: 500},
			{name: "400", answers: []rt.Step{anthropicAnswer(now, 400, "invalid_request_error"), ok}, attempts: 1, status: 400},
			{name: "413", answers: []rt.Step{anthropicAnswer(now, 413, "request_too_large"), ok}, attempts: 1, status: 413},
		}
	}
	for _, c := range cases(time.Now()) {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				now := cases(time.Now()) // the answers, dated in the bubble
				c := now[slices.IndexFunc(now, func(d apiCase) bool { return d.name == c.name })]
				c.method, c.url = "POST", url
				if c.pace == unpaced { // 49 requests left for a second: a pace of 49 a second may be in force
					c.pace = paceLift
				}
				srv := &rt.Server{Script: c.answers}
				if resp := c.run(t, &retryhttp.Transport{Base: srv, Policy: docJSON(t, "api.anthropic.com")}, srv); resp != nil {
					readAll(t, resp)
				}
			})
		})
	}
	// An overload with a retry-after holds the host's other calls, and a
	// 200 that spends the quota holds the next call until its reset.
	for name, first := range map[string]func(time.Time) rt.Step{
		"529 retry-after": func(now time.Time) rt.Step {
			return anthropicAnswer(now, 529, "overloaded_error", "Retry-After", "10")
		},
		"200 requests spent": func(now time.Time) rt.Step {
			return anthropicAnswer(now, 200, "", "Anthropic-Ratelimit-Requests-Remaining", "0", "Anthropic-Ratelimit-Requests-Reset", "+10s")
		},
	} {
		t.Run(name+" holds the host", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(n int, _ *http.Request) rt.Step {
					if n == 1 {
						return first(time.Now())
					}
					return anthropicAnswer(time.Now(), 200, "")
				}}
				twoCalls(t, &retryhttp.Transport{Base: srv, Policy: docJSON(t, "api.anthropic.com")}, "POST", url)
				at := arrivals(srv)
				require.GreaterOrEqual(t, len(at), 2)
				within(t, at[1], 10*time.Second, 2*time.Second, "the second call, held")
			})
		})
	}
}
