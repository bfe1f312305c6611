package retryhttp_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
)

// hedgePolicy hedges every request after 50 ms, far longer than a
// loopback answer takes, so that no hedge is sent.
func hedgePolicy() *policy.Config {
	return &policy.Config{Rules: []policy.Rule{{
		Name:  []policy.Name{{}},
		Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 50 * time.Millisecond, NonFatalStatusCodes: []int{502, 503}},
	}}, Throttle: policy.Default().Throttle}
}

// errorCodesPolicy is policy.Default with an error table read from the
// header, JSON and XML: a success must not pay for it.
func errorCodesPolicy() *policy.Config {
	cfg := policy.Default()
	cfg.Rules[0].ErrorCodes = &policy.ErrorCodes{JSON: "__type", XML: "Error/Code", Header: "X-Amzn-ErrorType",
		Throttled: []string{"ThrottlingException", "SlowDown"}}
	return cfg
}

// BenchmarkSuccessPath measures what a request answered by its first
// attempt costs through the Transport, against bare net/http in the same
// run: GET, POST of 1 KiB with GetBody, GET under a hedging policy,
// GET with admission on, GET and POST under a rule with an error table,
// and GET with a Prepare, whose copy of each attempt is its cost.
// The Transport is as its zero value has it (policy.Default, statistics,
// budget, no hooks) but for the base, which is the same for all. The
// figures include the loopback server's own allocations, the same in
// every case: compare the differences.
func BenchmarkSuccessPath(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	payload := bytes.Repeat([]byte("x"), 1<<10)
	get := func() (*http.Request, error) { return http.NewRequest("GET", srv.URL, nil) }
	post := func() (*http.Request, error) { return http.NewRequest("POST", srv.URL, bytes.NewReader(payload)) }
	for _, bc := range []struct {
		name string
		req  func() (*http.Request, error)
		wrap func(http.RoundTripper) http.RoundTripper
	}{
		{"GET/bare", get, func(rt http.RoundTripper) http.RoundTripper { return rt }},
		{"GET/retryhttp", get, func(rt http.RoundTripper) http.RoundTripper { return &retryhttp.Transport{Base: rt} }},
		{"GET/retryhttp-hedged", get, func(rt http.RoundTripper) http.RoundTripper {
			return &retryhttp.Transport{Base: rt, Policy: hedgePolicy()}
		}},
		{"GET/retryhttp-admission", get, func(rt http.RoundTripper) http.RoundTripper {
			cfg := policy.Default()
			cfg.Admission = &policy.Admission{}
			return &retryhttp.Transport{Base: rt, Policy: cfg}
		}},
		{"GET/retryhttp-errorcodes", get, func(rt http.RoundTripper) http.RoundTripper {
			return &retryhttp.Transport{Base: rt, Policy: errorCodesPolicy()}
		}},
		{"GET/retryhttp-prepare", get, func(rt http.RoundTripper) http.RoundTripper {
			return &retryhttp.Transport{Base: rt, Prepare: func(attempt int, req *http.Request) error {
				req.Header.Set("Amz-Sdk-Request", "attempt=1; max=3")
				return nil
			}}
		}},
		{"POST-1KiB/bare", post, func(rt http.RoundTripper) http.RoundTripper { return rt }},
		{"POST-1KiB/retryhttp", post, func(rt http.RoundTripper) http.RoundTripper { return &retryhttp.Transport{Base: rt} }},
		{"POST-1KiB/retryhttp-errorcodes", post, func(rt http.RoundTripper) http.RoundTripper {
			return &retryhttp.Transport{Base: rt, Policy: errorCodesPolicy()}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			base := &http.Transport{MaxIdleConnsPerHost: 64}
			defer base.CloseIdleConnections()
			client := &http.Client{Transport: bc.wrap(base)}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, err := bc.req()
					if err != nil {
						b.Error(err)
						return
					}
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || resp.Header.Get(retryhttp.AttemptsHeader) != "" {
						b.Errorf("got %d after %q retries, want 200 at the first attempt",
							resp.StatusCode, resp.Header.Get(retryhttp.AttemptsHeader))
						return
					}
				}
			})
		})
	}
}
