package retryhttp_test

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// loadServer is a kit Server that answers 503 with probability failRate
// (seeded), 200 otherwise, served at the URL it returns with connections
// kept alive.
func loadServer(b *testing.B, failRate float64, seed uint64) (*rt.Server, string) {
	var mu sync.Mutex // Choose is called by concurrent requests
	rng := rand.New(rand.NewPCG(seed, seed))
	srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
		mu.Lock()
		defer mu.Unlock()
		if rng.Float64() < failRate {
			return rt.Step{Status: http.StatusServiceUnavailable}
		}
		return rt.Step{Body: "ok"}
	}}
	ts := httptest.NewServer(srv) // srv.Start would close each connection
	b.Cleanup(ts.Close)
	return srv, ts.URL
}

// loadPolicy is policy.Default with maxAttempts 5 and short waits, so that
// a run takes little time; the throttle is policy.Default's.
func loadPolicy() *policy.Config {
	cfg := policy.Default()
	r := *cfg.Rules[0].Retry
	r.MaxAttempts = 5
	r.InitialBackoff, r.MaxBackoff = time.Millisecond, 5*time.Millisecond
	cfg.Rules[0].Retry = &r
	return cfg
}

// runLoad sends 2000 GETs from 32 goroutines through a fresh Transport and
// returns the server attempts per request and the share of 200s.
func runLoad(b *testing.B, srv *rt.Server, url string) (float64, float64) {
	const requests, workers = 2000, 32
	tr := &retryhttp.Transport{Policy: loadPolicy(), Base: &http.Transport{MaxIdleConnsPerHost: workers}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	before := srv.Count()
	var ok, next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= requests {
				resp, err := client.Get(url)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	n := float64(requests)
	return float64(srv.Count()-before) / n, float64(ok.Load()) / n
}

// BenchmarkOutageAmplification: the server is down (always 503). Without
// a budget, maxAttempts 5 would send 5 attempts per request.
func BenchmarkOutageAmplification(b *testing.B) {
	srv, url := loadServer(b, 1, 1)
	var amp float64
	for b.Loop() {
		amp, _ = runLoad(b, srv, url)
	}
	b.ReportMetric(amp, "attempts/req")
}

// BenchmarkFlakyServer: 10% of attempts fail with 503 (seeded). The
// budget must not get in the way: nearly every request succeeds.
func BenchmarkFlakyServer(b *testing.B) {
	srv, url := loadServer(b, 0.1, 7)
	var amp, success float64
	for b.Loop() {
		amp, success = runLoad(b, srv, url)
	}
	b.ReportMetric(amp, "attempts/req")
	b.ReportMetric(100*success, "success%")
}
