package retryhttptest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// A server that is busy once, in memory: the Server is the Transport's
// Base, and records what each attempt carried.
func Example() {
	srv := &retryhttptest.Server{Script: []retryhttptest.Step{
		{Status: 503, Header: http.Header{"Retry-After": {"0"}}},
		{Body: "hello"},
	}}
	client := &http.Client{Transport: &retryhttp.Transport{Base: srv}}

	resp, err := client.Get("https://api.example.com/v1/greeting")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	for _, a := range srv.Attempts() {
		fmt.Printf("attempt %d: %s %s, X-Retry-Attempts %q\n", a.N, a.Method, a.Path, a.Header.Get("X-Retry-Attempts"))
	}
	// Output:
	// 200 hello
	// attempt 1: GET /v1/greeting, X-Retry-Attempts ""
	// attempt 2: GET /v1/greeting, X-Retry-Attempts "1"
}

// A hedge beats a slow first answer. Choose answers by the request, so
// that the original is the slow one whichever attempt the server sees
// first. The original is cancelled as soon as the hedge has won; Wait
// lets the server finish with it before the records are read.
func Example_hedging() {
	srv := &retryhttptest.Server{Choose: func(_ int, req *http.Request) retryhttptest.Step {
		if req.Header.Get(retryhttp.AttemptsHeader) == "" {
			return retryhttptest.Step{Delay: time.Minute, Body: "slow"}
		}
		return retryhttptest.Step{Body: "fast"}
	}}
	client := &http.Client{Transport: &retryhttp.Transport{Base: srv, Policy: &policy.Config{
		Rules: []policy.Rule{{
			Name:  []policy.Name{{Method: "GET"}},
			Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: 10 * time.Millisecond},
		}},
	}}}

	resp, err := client.Get("https://api.example.com/v1/items/1")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("%s, with X-Retry-Attempts %s\n", body, resp.Header.Get(retryhttp.AttemptsHeader))

	srv.Wait(context.Background())
	attempts := srv.Attempts()
	slices.SortFunc(attempts, func(a, b retryhttptest.Attempt) int {
		return len(a.Header.Get(retryhttp.AttemptsHeader)) - len(b.Header.Get(retryhttp.AttemptsHeader))
	})
	for _, a := range attempts {
		fmt.Printf("X-Retry-Attempts %q: cancelled %v\n", a.Header.Get(retryhttp.AttemptsHeader), a.Cancelled)
	}
	// Output:
	// fast, with X-Retry-Attempts 1
	// X-Retry-Attempts "": cancelled true
	// X-Retry-Attempts "1": cancelled false
}
