package retryhttptest_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/retryhttp/retryhttp/retryhttptest"
)

// BenchmarkServer measures what a Server costs per request over
// loopback, beside a bare handler that writes the same answer, in the
// same run: requests without a body (GET) and with a 1 KiB one (POST).
//
//	go test -run XXX -bench Server -benchmem ./retryhttptest
func BenchmarkServer(b *testing.B) {
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	kit := &retryhttptest.Server{Script: []retryhttptest.Step{{Status: http.StatusServiceUnavailable}}}
	body := strings.Repeat("x", 1<<10)
	for _, h := range []struct {
		name    string
		handler http.Handler
	}{{"bare", bare}, {"kit", kit}} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			b.Run(h.name+"/"+method, func(b *testing.B) {
				ts := httptest.NewServer(h.handler)
				defer ts.Close()
				c := ts.Client()
				b.ReportAllocs()
				for b.Loop() {
					var rd io.Reader
					if method == http.MethodPost {
						rd = strings.NewReader(body)
					}
					req, err := http.NewRequest(method, ts.URL, rd)
					if err != nil {
						b.Fatal(err)
					}
					resp, err := c.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusServiceUnavailable {
						b.Fatalf("got status %d, want 503", resp.StatusCode)
					}
				}
			})
		}
	}
}
