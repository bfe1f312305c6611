package retryhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// flakyServer fails the first n requests with 503, then answers hello:
// the scripted server of the users' test kit, retryhttptest.
func flakyServer(n int) *httptest.Server {
	script := make([]retryhttptest.Step, n+1)
	for i := range n {
		script[i].Status = http.StatusServiceUnavailable
	}
	script[n].Body = "hello"
	return httptest.NewServer(&retryhttptest.Server{Script: script})
}

// The zero Transport is a drop-in: policy.Default retries 429, 502, 503
// and 504 up to 3 attempts, with a per-host budget.
func Example() {
	srv := flakyServer(2)
	defer srv.Close()

	tr := &retryhttp.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body), "after", resp.Header.Get(retryhttp.AttemptsHeader), "failed attempts")
	// Output:
	// 200 hello after 2 failed attempts
}

// A configuration in gRPC's service-config JSON; mistakes name the field.
func Example_config() {
	cfg, err := policy.ParseConfig([]byte(`{
	  "methodConfig": [{
	    "name": [{"method": "GET"}],
	    "retryPolicy": {
	      "maxAttempts": 5, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
	      "backoffMultiplier": 2, "retryableStatusCodes": [503]
	    }
	  }],
	  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := flakyServer(3)
	defer srv.Close()
	tr := &retryhttp.Transport{Policy: cfg}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "after", resp.Header.Get(retryhttp.AttemptsHeader), "failed attempts")

	_, err = policy.ParseConfig([]byte(`{"methodConfig": [{"name": [{}],
	  "retryPolicy": {"maxAttempts": 1, "initialBackoff": "1s", "maxBackoff": "1s",
	  "backoffMultiplier": 2, "retryableStatusCodes": [503]}}]}`))
	fmt.Println(err)
	// Output:
	// 200 after 3 failed attempts
	// policy: methodConfig[0].retryPolicy.maxAttempts: 1: must be at least 2
}

// LogHooks log with log/slog in one line: waits at Info, refusals and
// give-ups at Warn, nothing for a request answered at once. They never
// print what may be secret: no query string, no userinfo, no header value.
func Example_slog() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "delay" || a.Key == "retry_delay" {
				return slog.Attr{} // keep the output stable: backoffs are jittered
			}
			return a
		},
	}))
	srv := flakyServer(1)
	defer srv.Close()
	tr := &retryhttp.Transport{Hooks: retrytrace.LogHooks(logger)}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", srv.URL+"/v1/items?token=secret", nil)
	req.Host = "api.example.com"
	req.URL.Host = "api.example.com"
	tr.Base = rewriteTo(srv)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	// Output:
	// level=INFO msg="retryhttp: waiting" method=GET host=api.example.com path=/v1/items attempt=2 reason=backoff
	// level=INFO msg="retryhttp: answered" method=GET host=api.example.com path=/v1/items attempts=2 status_code=200
}

// rewriteTo sends every request to srv, whatever its URL says.
func rewriteTo(srv *httptest.Server) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		r := req.Clone(req.Context())
		r.URL.Scheme, r.URL.Host = "http", srv.Listener.Addr().String()
		return srv.Client().Transport.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Stats count what the Transport did, per rule and per host.
func ExampleTransport_Stats() {
	srv := flakyServer(2)
	defer srv.Close()
	tr := &retryhttp.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	st := tr.Stats().Total
	fmt.Println("requests:", st.Requests, "retry attempts:", st.ExtraAttempts, "failed:", st.ExtraAttemptsFailed)
	fmt.Println("histogram >=1, >=2:", st.Histogram[0], st.Histogram[1])
	// Output:
	// requests: 1 retry attempts: 2 failed: 1
	// histogram >=1, >=2: 1 1
}

// coreReporting is Google's Core Reporting API error table as a
// classifier: a 403 is retried only for the rate-limit reasons, matched
// exactly (userRateLimitExceededUnreg is not userRateLimitExceeded); a
// 500 or 503 is retried once; everything else follows the policy.
func coreReporting(attempt int, resp *http.Response, err error) retryhttp.Verdict {
	if err != nil {
		return retryhttp.UsePolicy
	}
	switch resp.StatusCode {
	case http.StatusForbidden:
		body, _ := retryhttp.PeekBody(resp, 4<<10) // the body stays whole for the caller
		var e struct {
			Error struct{ Errors []struct{ Reason string } }
		}
		if json.Unmarshal(body, &e) == nil && len(e.Error.Errors) > 0 {
			switch e.Error.Errors[0].Reason {
			case "userRateLimitExceeded", "rateLimitExceeded", "quotaExceeded":
				return retryhttp.RetryableUnprocessed // the server did not act on it
			}
		}
		return retryhttp.Final
	case http.StatusInternalServerError, http.StatusServiceUnavailable:
		if attempt > 1 {
			return retryhttp.Final // retried once already
		}
	}
	return retryhttp.UsePolicy
}

// An SDK for Google's Core Reporting API: its error table as a classifier
// (above) and its schedule, 2^n s + random(0..1000 ms) for n = 0..4 then
// stop, as one rule. Each case of the table runs against a server that
// answers as the API does; the waits are real, so the cases run side by
// side.
func Example_googleAPI() {
	cfg := &policy.Config{Rules: []policy.Rule{{
		Name: []policy.Name{{Method: "GET"}},
		Retry: &policy.Retry{
			MaxAttempts:          6,                  // the request and retries n = 0..4
			Backoff:              policy.GoogleAPI{}, // 2^n s + U[0, 1000 ms]
			RetryableStatusCodes: []int{500, 503},
		},
	}}}
	cases := []struct{ first, then string }{
		{"403 userRateLimitExceeded", "200"},
		{"403 quotaExceeded", "200"},
		{"403 userRateLimitExceededUnreg", "200"},
		{"403 insufficientPermissions", "200"},
		{"403 dailyLimitExceeded", "200"},
		{"503 backendError", "503 backendError"},
		{"500 internalServerError", "200"},
	}
	srv := httptest.NewServer(&retryhttptest.Server{Choose: func(_ int, r *http.Request) retryhttptest.Step {
		c := cases[atoi(r.URL.Query().Get("case"))]
		answer := c.first
		if r.Header.Get(retryhttp.AttemptsHeader) != "" {
			answer = c.then
		}
		status, reason, _ := strings.Cut(answer, " ")
		st := retryhttptest.Step{Status: atoi(status)}
		if reason != "" {
			st.Body = fmt.Sprintf(`{"error":{"errors":[{"domain":"usageLimits","reason":%q}],"code":%d}}`, reason, st.Status)
		}
		return st
	}})
	defer srv.Close()

	tr := &retryhttp.Transport{Policy: cfg, Classify: coreReporting}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	lines := make([]string, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Go(func() {
			var waited string
			ctx := retrytrace.WithHooks(context.Background(), &retrytrace.Hooks{Wait: func(w retrytrace.WaitInfo) {
				lo := time.Duration(1<<(w.Attempt-2)) * time.Second // n = attempt-2
				if w.Delay >= lo && w.Delay <= lo+time.Second {
					waited += fmt.Sprintf(", waited %v-%v", lo, lo+time.Second)
				}
			}})
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/?case="+strconv.Itoa(i), nil)
			resp, err := client.Do(req)
			if err != nil {
				lines[i] = err.Error()
				return
			}
			resp.Body.Close()
			attempts := 1 + atoi(resp.Header.Get(retryhttp.AttemptsHeader))
			lines[i] = fmt.Sprintf("%s: %d after %d attempt(s)%s", c.first, resp.StatusCode, attempts, waited)
		})
	}
	wg.Wait()
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// 403 userRateLimitExceeded: 200 after 2 attempt(s), waited 1s-2s
	// 403 quotaExceeded: 200 after 2 attempt(s), waited 1s-2s
	// 403 userRateLimitExceededUnreg: 403 after 1 attempt(s)
	// 403 insufficientPermissions: 403 after 1 attempt(s)
	// 403 dailyLimitExceeded: 403 after 1 attempt(s)
	// 503 backendError: 503 after 2 attempt(s), waited 1s-2s
	// 500 internalServerError: 200 after 2 attempt(s), waited 1s-2s
}

// atoi reads a decimal, 0 for anything else.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
