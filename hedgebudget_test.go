package retryhttp_test

import (
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// heavyTail answers 98% of requests in about 2 ms (1.5 to 2.5 ms, as a
// real fast mode spreads) and 2% in 200 ms, seeded, by the request: the
// hedges of a request share its latency's draw only by chance, as on a
// real server.
func heavyTail(seed uint64) *rt.Server {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 1))
	return &rt.Server{Choose: func(int, *http.Request) rt.Step {
		mu.Lock()
		defer mu.Unlock()
		if rng.Float64() < 0.02 {
			return rt.Step{Delay: 200 * time.Millisecond, Body: "slow"}
		}
		return rt.Step{Delay: 1500*time.Microsecond + time.Duration(rng.Int64N(int64(time.Millisecond))), Body: "fast"}
	}}
}

// budgetHedge is a hedging rule of 3 attempts under a hedge budget.
func budgetHedge(delay time.Duration, quantile, budget float64) *policy.Config {
	return &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
		Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: delay, HedgingDelayQuantile: quantile, MaxExtraLoad: budget}}}}
}

// sendAll sends n GETs one after another and returns their latencies.
func sendAll(t *testing.T, tr *retryhttp.Transport, n int) []time.Duration {
	t.Helper()
	lat := make([]time.Duration, n)
	for i := range lat {
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		lat[i] = time.Since(start)
	}
	return lat
}

// p99 is the 99th percentile of lat, by nearest rank.
func p99(lat []time.Duration) time.Duration {
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[(len(s)*99+99)/100-1]
}

// A hedge budget caps a host's hedges at maxExtraLoad of its requests,
// from its first request on (over any later run of requests, plus a
// burst of 10), whatever sets the delay: a fixed delay below every answer
// would otherwise hedge every request.
func TestHedgeBudgetCapsTheExtraLoad(t *testing.T) {
	const n = 1000
	for _, tc := range []struct {
		name     string
		delay    time.Duration
		quantile float64
	}{
		{"a fixed 1 ms delay, under every answer", time.Millisecond, 0},
		{"the 0.5 quantile", 0, 0.5},
		{"the budget's own delay", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := heavyTail(7)
				var log hookLog
				tr := &retryhttp.Transport{Base: srv, Policy: budgetHedge(tc.delay, tc.quantile, 0.02), Hooks: log.hooks("")}
				sendAll(t, tr, n)
				st := tr.Stats().Total
				assert.LessOrEqual(t, st.Hedges, uint64(0.02*n), "hedges for %d requests", n)
				assert.LessOrEqual(t, srv.Count(), n+int(0.02*n), "requests the server saw")
				if tc.delay > 0 || tc.quantile > 0 {
					assert.Positive(t, st.HedgeBudgetRefusals, "the budget withheld hedges")
					refused := 0
					for _, r := range log.refused() {
						if r.Reason == retrytrace.RefusedHedgeBudget {
							refused++
						}
					}
					assert.Equal(t, int(st.HedgeBudgetRefusals), refused, "each refusal reported with its reason")
				}
			})
		})
	}
}

// With a budget and no fixed delay, the delay sits at the start of the
// host's tail: the slow 2% are hedged early and p99 falls to a few
// milliseconds, for at most 2% more requests (and the burst).
func TestHedgeBudgetCutsTheTail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 2000
		bare := sendAll(t, &retryhttp.Transport{Base: heavyTail(11), Policy: policy.None()}, n)
		srv := heavyTail(11)
		tr := &retryhttp.Transport{Base: srv, Policy: budgetHedge(0, 0, 0.02)}
		hedged := sendAll(t, tr, n)
		assert.Equal(t, 200*time.Millisecond, p99(bare), "the bare p99 is the slow mode")
		assert.LessOrEqual(t, p99(hedged), p99(bare)/20, "p99 at most 1/20 of bare's")
		extra := float64(srv.Count()-n) / n
		assert.LessOrEqual(t, extra, 0.02, "extra load")
		t.Logf("p99 %v (bare %v), extra load %.2f%%", p99(hedged), p99(bare), 100*extra)
	})
}

// maxExtraLoad is validated like every field: the error names it.
func TestHedgeBudgetIsValidated(t *testing.T) {
	_, err := policy.ParseConfig([]byte(`{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 2, "maxExtraLoad": 1.5}}]}`))
	require.ErrorIs(t, err, policy.ErrInvalid)
	assert.Contains(t, err.Error(), "methodConfig[0].hedgingPolicy.maxExtraLoad")
}

// A hedge that is not sent after all gives back what it took of the
// host's hedge budget, which counts the hedges the host is sent: its
// Prepare fails, or it cannot get its body.
func TestHedgeBudgetTakesNothingForAHedgeNotSent(t *testing.T) {
	errGone := errors.New("source gone")
	tests := []struct {
		name string
		// setup readies tr and the request for its hedge not to be sent.
		setup func(tr *retryhttp.Transport, req *http.Request)
	}{
		{"its Prepare fails", func(tr *retryhttp.Transport, _ *http.Request) {
			tr.Prepare = func(attempt int, _ *http.Request) error {
				if attempt == 2 {
					return errors.New("no token")
				}
				return nil
			}
		}},
		{"its body cannot be had", func(_ *retryhttp.Transport, req *http.Request) {
			req.GetBody = func() (io.ReadCloser, error) { return nil, errGone }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := script(rt.Step{Delay: time.Second, Body: "slow"})
				cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
					Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: 10 * time.Millisecond, MaxExtraLoad: 1}}}}
				tr := &retryhttp.Transport{Base: srv, Policy: cfg}
				req := newRequest(t, t.Context(), "PUT", "payload")
				tt.setup(tr, req)
				resp, err := tr.RoundTrip(req)
				if err == nil {
					readAll(t, resp)
				}
				synctest.Wait()
				srv.WantAttempts(t, 1)
				assert.Equal(t, 1.0, tr.Stats().Hosts["api.test"].HedgeTokens,
					"the hedge the request earned, given back by the hedge not sent")
			})
		})
	}
}

// TestHedgeBudgetEarnsNothingForAFirstAttemptNotSent has a request's
// first attempt fail its Prepare, under a hedging rule whose budget
// earns half a hedge a request: nothing was sent, so nothing is earned,
// and the next request, sent, earns its half.
func TestHedgeBudgetEarnsNothingForAFirstAttemptNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Body: "ok"})
		cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: 10 * time.Millisecond, MaxExtraLoad: 0.5}}}}
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		fail := true
		tr.Prepare = func(int, *http.Request) error {
			if fail {
				return errors.New("no token")
			}
			return nil
		}
		_, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.Error(t, err)
		srv.WantAttempts(t, 0)
		assert.Zero(t, tr.Stats().Hosts["api.test"].HedgeTokens, "got a share earned by a request not sent")

		fail = false
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, 0.5, tr.Stats().Hosts["api.test"].HedgeTokens)
	})
}
