package retryhttp_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// stressN is the number of requests per case of TestStressCancelRace; 0
// skips it. Run it with, for instance:
//
//	go test -run TestStressCancelRace -retryhttp.stress=100000 -v
var (
	stressN     = flag.Int("retryhttp.stress", 0, "requests per case of TestStressCancelRace (0: skip)")
	stressCases = flag.String("retryhttp.stresscases", "", "comma-separated case names to run (empty: all)")
)

const stressWorkers = 16

// stressServer answers every request 200 when the clock next crosses a
// 2 ms boundary, so that a request and its hedge, sent within the same
// slot, are answered together: the loser's answer then arrives at the
// instant its attempt is cancelled, which is the window of net/http's
// race. body chooses the answer: "body" writes "ok", "empty" writes
// nothing (Content-Length: 0), "header" only calls WriteHeader; with a
// "sleep-" prefix every answer comes 2 ms after its request instead.
func stressServer(t testing.TB, body string, h2c bool) (*httptest.Server, *atomic.Int64) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const slot = 2 * time.Millisecond
		now := time.Now()
		d := now.Truncate(slot).Add(slot).Sub(now)
		if strings.HasPrefix(body, "sleep-") {
			d = slot // every answer 2 ms after its request
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
		switch strings.TrimPrefix(body, "sleep-") {
		case "body":
			io.WriteString(w, "ok")
		case "header":
			w.WriteHeader(http.StatusOK)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	if h2c {
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetUnencryptedHTTP2(true)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// stressCase is one client setup of TestStressCancelRace.
type stressCase struct {
	name   string
	body   string // the server's answer, as stressServer takes it
	method string
	h2c    bool
	cfg    *policy.Config         // nil: no retryhttp, the base alone
	base   func() *http.Transport // nil: the Transport's own
	// neighbours: half the workers send requests that their callers
	// cancel (context.Canceled) about when the answer comes; only the
	// other half's requests must all succeed.
	neighbours bool
}

func hedgeStress(delay time.Duration, quantile float64) *policy.Config {
	return &policy.Config{Rules: []policy.Rule{{
		Name: []policy.Name{{}},
		Hedge: &policy.Hedge{
			MaxAttempts: 3, HedgingDelay: delay, HedgingDelayQuantile: quantile,
			NonFatalStatusCodes: []int{502, 503, 504},
		},
	}}}
}

// retryStress retries network errors; timeout, when set, cuts attempts at
// about the time the server answers them, so that many are cancelled
// (errAttemptTimeout) as their answer arrives.
func retryStress(timeout time.Duration) *policy.Config {
	return &policy.Config{Rules: []policy.Rule{{
		Name: []policy.Name{{}},
		Retry: &policy.Retry{
			MaxAttempts: 5, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
			BackoffMultiplier: 1, RetryableStatusCodes: []int{503}, PerAttemptTimeout: timeout,
		},
	}}}
}

// smallPool has the idle settings of the Transport's own base on a
// 2-core machine (go-cleanhttp: GOMAXPROCS+1 idle connections per host).
func smallPool() *http.Transport {
	return &http.Transport{MaxIdleConns: 100, MaxIdleConnsPerHost: 3, IdleConnTimeout: time.Minute}
}

func h2cPool() *http.Transport {
	tr := smallPool()
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetUnencryptedHTTP2(true)
	return tr
}

var stressTable = []stressCase{
	{name: "hedge1ms/empty", body: "empty", method: "GET", cfg: hedgeStress(time.Millisecond, 0)},
	{name: "hedge1ms/header", body: "header", method: "GET", cfg: hedgeStress(time.Millisecond, 0)},
	{name: "hedge1ms/head", body: "body", method: "HEAD", cfg: hedgeStress(time.Millisecond, 0)},
	{name: "hedge1ms/body", body: "body", method: "GET", cfg: hedgeStress(time.Millisecond, 0)},
	{name: "hedgeQ95/empty", body: "empty", method: "GET", cfg: hedgeStress(10*time.Millisecond, 0.95)},
	{name: "hedgeQ95/body", body: "body", method: "GET", cfg: hedgeStress(10*time.Millisecond, 0.95)},
	{name: "sleep2ms/q95/empty", body: "sleep-empty", method: "GET", cfg: hedgeStress(10*time.Millisecond, 0.95)},
	{name: "sleep2ms/1ms/empty", body: "sleep-empty", method: "GET", cfg: hedgeStress(time.Millisecond, 0)},
	{name: "sleep2ms/1ms/body", body: "sleep-body", method: "GET", cfg: hedgeStress(time.Millisecond, 0)},
	{name: "hedge1ms/empty/pool3", body: "empty", method: "GET", cfg: hedgeStress(time.Millisecond, 0), base: smallPool},
	{name: "hedge1ms/empty/h2c", body: "empty", method: "GET", h2c: true, cfg: hedgeStress(time.Millisecond, 0), base: h2cPool},
	{name: "hedge1ms/body/h2c", body: "body", method: "GET", h2c: true, cfg: hedgeStress(time.Millisecond, 0), base: h2cPool},
	{name: "retry2ms/empty", body: "empty", method: "GET", cfg: retryStress(2 * time.Millisecond), base: smallPool},
	{name: "retry2ms/body", body: "body", method: "GET", cfg: retryStress(2 * time.Millisecond), base: smallPool},
	{name: "bare/neighbours", body: "empty", method: "GET", base: smallPool, neighbours: true},
	{name: "retry/neighbours", body: "empty", method: "GET", cfg: retryStress(0), base: smallPool, neighbours: true},
}

// foreignBase counts the errors its base returns for a request whose own
// context is still live: with net/http, another request's cancellation.
type foreignBase struct {
	rt      http.RoundTripper
	foreign atomic.Int64
}

func (b *foreignBase) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(req)
	if err != nil && req.Context().Err() == nil {
		b.foreign.Add(1)
	}
	return resp, err
}

// TestStressCancelRace sends many concurrent requests whose attempts are
// often cancelled just as their answers arrive (hedge losers, per-attempt
// timeouts, callers that give up), against a server that answers every
// request 200. Every request must succeed, but for the policy's own
// per-attempt timeouts and the requests whose callers gave up: an attempt
// cancelled in net/http after its connection went back to the pool must
// not fail another request that picked that connection up. It also
// reports how often the base returned such a foreign cancellation.
func TestStressCancelRace(t *testing.T) {
	if *stressN == 0 {
		t.Skip("set -retryhttp.stress=N to run")
	}
	for _, sc := range stressTable {
		if *stressCases != "" && !strings.Contains(","+*stressCases+",", ","+sc.name+",") {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			srv, conns := stressServer(t, sc.body, sc.h2c)
			var (
				rt http.RoundTripper
				tr *retryhttp.Transport
				fb *foreignBase
			)
			if sc.base != nil {
				base := sc.base()
				defer base.CloseIdleConnections()
				fb = &foreignBase{rt: base}
			}
			var mu sync.Mutex
			// history keeps each request's attempts, to show how a failed
			// one failed.
			var history sync.Map // *http.Request -> *[]string
			hooks := &retrytrace.Hooks{AttemptDone: func(d retrytrace.AttemptDoneInfo) {
				v, _ := history.LoadOrStore(d.Request, new([]string))
				mu.Lock()
				*v.(*[]string) = append(*v.(*[]string), fmt.Sprintf("#%d hedge=%v resend=%v %s %v", d.Attempt, d.Hedge, d.Resend, d.Outcome, d.Err))
				mu.Unlock()
			}}
			switch {
			case sc.cfg == nil:
				rt = fb
			case fb != nil:
				tr = &retryhttp.Transport{Policy: sc.cfg, Base: fb, Hooks: hooks}
				rt = tr
			default:
				tr = &retryhttp.Transport{Policy: sc.cfg, Hooks: hooks}
				defer tr.CloseIdleConnections()
				rt = tr
			}
			client := &http.Client{Transport: rt}
			var (
				next, failed, sent atomic.Int64
				kinds              = map[string]int{}
				wg                 sync.WaitGroup
			)
			// one sends one request; a neighbour's is cancelled by its
			// caller about when its answer comes.
			one := func(neighbour bool) {
				ctx := context.Background()
				if neighbour {
					c, cancel := context.WithCancel(ctx)
					defer cancel()
					slot := time.Now().Truncate(2 * time.Millisecond).Add(2 * time.Millisecond)
					defer time.AfterFunc(time.Until(slot), cancel).Stop()
					ctx = c
				}
				req, _ := http.NewRequestWithContext(ctx, sc.method, srv.URL, nil)
				defer history.Delete(req)
				resp, err := client.Do(req)
				if err == nil {
					defer resp.Body.Close()
					io.Copy(io.Discard, resp.Body)
				}
				if neighbour {
					return
				}
				sent.Add(1)
				if err == nil && resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
				if err == nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if p := sc.cfg; p != nil && p.Rules[0].Retry != nil && p.Rules[0].Retry.PerAttemptTimeout > 0 &&
					strings.HasSuffix(err.Error(), "after 5 attempt(s): retryhttp: per-attempt timeout") {
					kinds["(the policy's own timeouts) "+err.Error()]++
					return
				}
				kinds[err.Error()]++
				if failed.Add(1) <= 5 {
					if v, ok := history.Load(req); ok {
						t.Logf("failed: %v; attempts: %q", err, *v.(*[]string))
					}
				}
			}
			for w := range stressWorkers {
				neighbour := sc.neighbours && w%2 == 1
				wg.Go(func() {
					for next.Add(1) <= int64(*stressN) {
						one(neighbour)
					}
				})
			}
			wg.Wait()
			var foreign int64 = -1
			if fb != nil {
				foreign = fb.foreign.Load()
			}
			msg := fmt.Sprintf("%d requests (%d checked): %d failed; base errors under a live context: %d; %d connections",
				*stressN, sent.Load(), failed.Load(), foreign, conns.Load())
			if tr != nil {
				st := tr.Stats().Total
				msg += fmt.Sprintf("; hedges sent %d, won %d", st.Hedges, st.HedgesWon)
			}
			t.Log(msg)
			for k, n := range kinds {
				t.Logf("  %5d × %s", n, k)
			}
			switch {
			case failed.Load() == 0:
			case sc.cfg == nil:
				// net/http alone, for comparison: not this package's.
				t.Logf("net/http alone: %d of %d requests failed", failed.Load(), sent.Load())
			default:
				t.Errorf("%d of %d requests failed against a server that answers every one", failed.Load(), sent.Load())
			}
		})
	}
}

// BenchmarkHedgedNoErrors sends b.N hedged GETs from 16 goroutines to a
// loopback server that answers every one 200 with an empty body, hedging
// after 1 ms while answers take up to 2 ms: losers are cancelled as their
// answers arrive, the case in which net/http can hand one request's
// cancellation to another. It reports the requests that failed, and fails
// if any did. Run it with at least 200,000 requests:
//
//	go test -run XXX -bench HedgedNoErrors -benchtime 200000x .
func BenchmarkHedgedNoErrors(b *testing.B) {
	srv, _ := stressServer(b, "empty", false)
	tr := &retryhttp.Transport{Policy: hedgeStress(time.Millisecond, 0)}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var failed atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(stressWorkers / max(1, runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(srv.URL)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			if err != nil && failed.Add(1) <= 3 {
				b.Log(err)
			}
		}
	})
	st := tr.Stats().Total
	b.ReportMetric(float64(failed.Load()), "failed")
	b.ReportMetric(float64(st.Hedges)/float64(b.N), "hedges/op")
	if n := failed.Load(); n > 0 {
		b.Errorf("%d of %d hedged requests failed against a server that answers every one", n, b.N)
	}
}
