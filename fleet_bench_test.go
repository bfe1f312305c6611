package retryhttp_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-cleanhttp"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/dial"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// The fleet benchmarks run N clients in one process against one host that
// is down, each client a Transport of its own, as N processes of a service
// would be. Against a server, each is the zero Transport, with
// policy.Default (3 attempts, a budget of 100 tokens per host, ratio
// 0.25); against a closed port, see benchFleetClosed. Budgets are per
// Transport, so nothing is shared between the clients but the server.
//
// The fleet sends fleetRequests requests in all, M = fleetRequests/N per
// client: the server sees the same offered load whatever N is, and the
// figures say how much of it the retries multiply. Each client sends its
// requests one after the other, so that the counts do not depend on how
// the clients are scheduled.
//
//	go test -run XXX -bench Fleet -benchtime 1x .

// fleetRequests is the number of requests a whole fleet sends in one run.
const fleetRequests = 10_000

// fleetSizes are the numbers of clients measured.
var fleetSizes = []int{1, 10, 100, 1000}

// firstWindow is the shortest first backoff window of the default
// Dialer: 1 s less its 20% jitter. A client whose requests to a closed
// port all end within it dials once.
const firstWindow = 800 * time.Millisecond

// BenchmarkFleet reports, per fleet size, the server requests per client
// request (attempts/req) and per client above its own requests
// (extra/client) against a server that answers every request with 503,
// and against one that adds X-Retry-Pushback-Ms: -1; and the connection
// attempts per request and per client (dials/req, dials/client) against a
// closed port.
func BenchmarkFleet(b *testing.B) {
	b.Run("503", func(b *testing.B) { benchFleetServer(b, "") })
	b.Run("pushback", func(b *testing.B) { benchFleetServer(b, "-1") })
	b.Run("closed", benchFleetClosed)
}

// benchFleetServer runs the fleets against a server that answers 503,
// with pushback as its X-Retry-Pushback-Ms header unless it is empty.
func benchFleetServer(b *testing.B, pushback string) {
	busy := rt.Step{Status: http.StatusServiceUnavailable}
	if pushback != "" {
		busy.Header = http.Header{"X-Retry-Pushback-Ms": {pushback}}
	}
	srv := script(busy)
	ts := httptest.NewServer(srv) // srv.Start would close each connection
	defer ts.Close()
	for _, n := range fleetSizes {
		m := fleetRequests / n
		b.Run(fmt.Sprintf("N=%d/M=%d", n, m), func(b *testing.B) {
			var hits int
			for b.Loop() {
				before := srv.Count()
				// The zero Transport: what a client gets by default.
				failed, _ := runFleet(n, m, ts.URL, func() *retryhttp.Transport { return &retryhttp.Transport{} })
				if failed > 0 {
					b.Fatalf("got %d requests without a response, want 0", failed)
				}
				hits = srv.Count() - before
			}
			sent := n * m
			b.ReportMetric(float64(hits)/float64(sent), "attempts/req")
			b.ReportMetric(float64(hits-sent)/float64(n), "extra/client")
		})
	}
}

// benchFleetClosed runs the fleets against a port where nothing listens.
// Each client's base is the one the zero Transport builds, a pooled
// transport dialing through a Dialer, with a Dial that counts.
//
// Its policy has no rules, so that each request ends at the first refusal.
// Retries would add no connection attempt: within a window they meet the
// window, and waiting for it only stretches the run over more windows, at
// one dial per client each. What is measured is the Dialer alone, and the
// count is exact while each client's requests end within its first window.
func benchFleetClosed(b *testing.B) {
	url := "http://" + closedAddr(b)
	for _, n := range fleetSizes {
		m := fleetRequests / n
		b.Run(fmt.Sprintf("N=%d/M=%d", n, m), func(b *testing.B) {
			var dials atomic.Int64
			var nd net.Dialer
			newTransport := func() *retryhttp.Transport {
				d := &dial.Dialer{Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
					dials.Add(1)
					return nd.DialContext(ctx, network, addr)
				}}
				base := cleanhttp.DefaultPooledTransport()
				base.DialContext = d.DialContext
				return &retryhttp.Transport{Base: base, Policy: &policy.Config{}}
			}
			for b.Loop() {
				dials.Store(0)
				failed, longest := runFleet(n, m, url, newTransport)
				if failed != int64(n*m) {
					b.Fatalf("got %d requests failed, want all %d", failed, n*m)
				}
				if longest >= firstWindow {
					b.Logf("a client took %v, past its first window: its later requests may have dialed again", longest)
				}
			}
			b.ReportMetric(float64(dials.Load())/float64(n*m), "dials/req")
			b.ReportMetric(float64(dials.Load())/float64(n), "dials/client")
		})
	}
}

// runFleet has n clients, each with a Transport from newTransport, send m
// GETs to url one after the other. It returns the number of requests that
// got no response, and the longest time a client took from the end of its
// first request to the end of its last.
func runFleet(n, m int, url string, newTransport func() *retryhttp.Transport) (int64, time.Duration) {
	var failed atomic.Int64
	var mu sync.Mutex
	var longest time.Duration
	var wg sync.WaitGroup
	for range n {
		tr := newTransport()
		wg.Go(func() {
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			var first time.Time
			for i := range m {
				if err := fleetGet(client, url); err != nil {
					failed.Add(1)
				}
				if i == 0 {
					first = time.Now()
				}
			}
			mu.Lock()
			longest = max(longest, time.Since(first))
			mu.Unlock()
		})
	}
	wg.Wait()
	return failed.Load(), longest
}

// fleetGet sends one GET and drains and closes its response.
func fleetGet(client *http.Client, url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// closedAddr returns a loopback address where nothing listens: one that
// was just listened on and closed.
func closedAddr(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
