package retryhttp_test

import (
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// Shape of the tail-latency benchmark: a server whose answers mostly come
// fast and now and then come very slow, the case hedging is for.
const (
	tailFast     = 2 * time.Millisecond
	tailSlow     = 200 * time.Millisecond
	tailSlowRate = 0.02
	tailRequests = 2000
	tailWorkers  = 16
	tailSeed     = 42
)

// tailServer is a kit Server that answers each request after fast(), or
// after tailSlow with probability tailSlowRate, served at the URL it
// returns with connections kept alive. The draw is made per arrival from a
// seeded generator, so every run sees the same sequence of slow arrivals
// whatever the client does; a hedge is an arrival like any other. A
// request whose context ends (a cancelled hedge) is dropped at once,
// freeing the handler as a real server would on noticing the disconnect.
func tailServer(b *testing.B, fast func() time.Duration) (*rt.Server, string) {
	var mu sync.Mutex // the generator is not safe for concurrent use
	rng := rand.New(rand.NewPCG(tailSeed, tailSeed))
	srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
		mu.Lock()
		defer mu.Unlock()
		d := fast()
		if rng.Float64() < tailSlowRate {
			d = tailSlow
		}
		return rt.Step{Delay: d, Body: "ok"}
	}}
	ts := httptest.NewServer(srv) // srv.Start would close each connection
	b.Cleanup(ts.Close)
	return srv, ts.URL
}

// tailPolicy hedges every request. maxAttempts is 3: the second attempt
// covers one slow answer, the third the rare case (0.04% of requests) of
// two slow answers in a row, which would otherwise set p99.9; it costs
// nothing when the second attempt answers before the next delay ends.
// The throttle is policy.Default's. No attempt here fails, so it stays
// full and never refuses a hedge: it bounds hedging only when the server
// fails, not when it is slow.
func tailPolicy(quantile float64) *policy.Config {
	return &policy.Config{
		Rules: []policy.Rule{{
			Name: []policy.Name{{}},
			Hedge: &policy.Hedge{
				MaxAttempts:          3,
				HedgingDelay:         10 * time.Millisecond,
				HedgingDelayQuantile: quantile,
				NonFatalStatusCodes:  []int{502, 503, 504},
			},
		}},
		Throttle: policy.Default().Throttle,
	}
}

// runTail sends tailRequests GETs from tailWorkers goroutines and appends
// each one's latency, until its body is read, to lat. next counts the
// requests started, from 0.
func runTail(b *testing.B, client *http.Client, url string, next *atomic.Int64, lat []time.Duration) []time.Duration {
	var mu sync.Mutex
	next.Store(0)
	var wg sync.WaitGroup
	for range tailWorkers {
		wg.Go(func() {
			mine := make([]time.Duration, 0, tailRequests/tailWorkers+1)
			for next.Add(1) <= tailRequests {
				start := time.Now()
				resp, err := client.Get(url)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mine = append(mine, time.Since(start))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return lat
}

// nearestRank is the q-quantile of sorted samples, in milliseconds.
func nearestRank(sorted []time.Duration, q float64) float64 {
	i := min(max(int(math.Ceil(q*float64(len(sorted))))-1, 0), len(sorted)-1)
	return float64(sorted[i]) / float64(time.Millisecond)
}

// tailCase is one client setup of a tail benchmark.
type tailCase struct {
	name   string
	policy *policy.Config // nil: no retryhttp at all
}

var tailCases = []tailCase{
	{"bare", nil},
	{"fixed10ms", tailPolicy(0)},
	{"quantile0.95", tailPolicy(0.95)},
}

// benchTail runs every tail case against a tailServer whose fast answers
// take fast(started), started being the number of client requests started
// so far in the run.
func benchTail(b *testing.B, fast func(started int64) time.Duration) {
	for _, bc := range tailCases {
		b.Run(bc.name, func(b *testing.B) {
			var started atomic.Int64
			srv, url := tailServer(b, func() time.Duration { return fast(started.Load()) })
			base := &http.Transport{MaxIdleConnsPerHost: 4 * tailWorkers}
			defer base.CloseIdleConnections()
			var transport http.RoundTripper = base
			var tr *retryhttp.Transport
			if bc.policy != nil {
				tr = &retryhttp.Transport{Base: base, Policy: bc.policy}
				transport = tr
			}
			client := &http.Client{Transport: transport}
			var lat []time.Duration
			for b.Loop() {
				lat = runTail(b, client, url, &started, lat)
			}
			slices.Sort(lat)
			b.ReportMetric(nearestRank(lat, 0.50), "p50-ms")
			b.ReportMetric(nearestRank(lat, 0.99), "p99-ms")
			b.ReportMetric(nearestRank(lat, 0.999), "p99.9-ms")
			b.ReportMetric(float64(srv.Count())/float64(len(lat)), "srv-req/req")
			if tr != nil {
				st := tr.Stats().Total
				b.ReportMetric(float64(st.Hedges)/float64(len(lat)), "hedges/req")
				b.ReportMetric(float64(st.HedgesWon)/float64(len(lat)), "won/req")
			}
		})
	}
}

// BenchmarkHedgingTail measures what hedging does to the latency tail of a
// server where 2% of answers take 100 times longer than the rest, and what
// it costs in extra requests to the server.
//
// A delay at the 0.95 quantile hedges every request slower than 95% of
// recent ones, so it sends at least about 5% extra attempts by design;
// on this server, where the slow 2% sit far above a fixed 10 ms, it buys a
// shorter p99 with more load than the fixed delay, not less.
func BenchmarkHedgingTail(b *testing.B) {
	benchTail(b, func(int64) time.Duration { return tailFast })
}

// tailShiftedFast is how long the fast answers take in the second half of
// BenchmarkHedgingShift: above the fixed delay tuned for the first half.
const tailShiftedFast = 15 * time.Millisecond

// BenchmarkHedgingShift is BenchmarkHedgingTail on a host whose fast
// answers slow down from 2 ms to 15 ms halfway through the run, as when a
// backend gets busier or a dependency of it slows down. The fixed 10 ms
// delay, right for the first half, then hedges every request; the
// quantile delay follows the host within one ring of samples.
func BenchmarkHedgingShift(b *testing.B) {
	benchTail(b, func(started int64) time.Duration {
		if started > tailRequests/2 {
			return tailShiftedFast
		}
		return tailFast
	})
}
