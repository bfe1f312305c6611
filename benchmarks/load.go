package benchmarks

import (
	"io"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Load is a closed-loop load: Workers goroutines send GETs, one after
// another, until Requests have been sent.
type Load struct {
	Requests, Workers int
}

// Result is what a load saw, on both sides.
type Result struct {
	Requests int
	// OK counts answers with status 200; Errors, requests that got no
	// answer at all.
	OK, Errors int
	// ServerRequests and Conns are what the server got and accepted.
	ServerRequests, Conns int64
	// Latencies are each request's time until its body was read, sorted.
	Latencies []time.Duration
}

// PerRequest is the server requests per client request.
func (r Result) PerRequest() float64 { return float64(r.ServerRequests) / float64(r.Requests) }

// Success is the share of requests answered 200, in [0, 1].
func (r Result) Success() float64 { return float64(r.OK) / float64(r.Requests) }

// Quantile is the q-quantile of the latencies by nearest rank, in
// milliseconds.
func (r Result) Quantile(q float64) float64 {
	if len(r.Latencies) == 0 {
		return math.NaN()
	}
	i := min(max(int(math.Ceil(q*float64(len(r.Latencies))))-1, 0), len(r.Latencies)-1)
	return float64(r.Latencies[i]) / float64(time.Millisecond)
}

// Run sends l's requests to srv through client and returns what was seen.
// The server's counters are read as differences, so a Server can serve
// several runs.
func Run(client *http.Client, srv *Server, l Load) Result {
	hits0, conns0 := srv.Hits(), srv.Conns()
	var next, ok, errs atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	for range l.Workers {
		wg.Go(func() {
			mine := make([]time.Duration, 0, l.Requests/l.Workers+1)
			for next.Add(1) <= int64(l.Requests) {
				start := time.Now()
				status, err := get(client, srv.URL)
				if err != nil {
					errs.Add(1)
					continue
				}
				mine = append(mine, time.Since(start))
				if status == http.StatusOK {
					ok.Add(1)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(lat)
	return Result{
		Requests: l.Requests, OK: int(ok.Load()), Errors: int(errs.Load()),
		ServerRequests: srv.Hits() - hits0, Conns: srv.Conns() - conns0,
		Latencies: lat,
	}
}

// get sends a GET, reads the body to its end and closes it.
func get(client *http.Client, url string) (int, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, err
}
