package benchmarks

import (
	"math/rand/v2"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// counting counts the arrivals of a handler.
type counting struct {
	h http.Handler
	n atomic.Int64
}

func (c *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.n.Add(1)
	c.h.ServeHTTP(w, r)
}

// TestLoadBudget sends requests one after another to a server that
// answers after 10 ms, under a 1 ms hedging delay: a hedger under a load
// budget sends at most MaxExtraLoad of them as hedges, since its budget
// starts empty; a fixed-delay hedger without one hedges every request up
// to MaxAttempts, failsafe-go's budget included, which caps the hedges in
// flight (at least 3), not their share of the requests.
func TestLoadBudget(t *testing.T) {
	spec := testSpec()
	spec.HedgeDelay = time.Millisecond
	const n = 100
	for _, p := range HedgePeers() {
		if !p.Caps.Hedges {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			inTime(t, p, func(t *testing.T, virtual bool) {
				s := newScript(200)
				s.hold = 10 * time.Millisecond
				rt := p.New(spec, mem{s})
				for range n {
					status, err := do(t, rt)
					require.NoError(t, err)
					require.Equal(t, 200, status)
				}
				hedges := len(s.seen()) - n
				switch {
				case p.Caps.LoadBudget:
					assert.LessOrEqual(t, hedges, int(spec.MaxExtraLoad*n), "hedges for %d requests", n)
				case p.Delay != DelayFixed:
					// A quantile delay follows the 10 ms answers once it
					// knows them: it depends on what it has seen.
				case virtual:
					assert.Equal(t, (spec.MaxAttempts-1)*n, hedges, "hedges for %d requests", n)
				default:
					// A late timer may let an answer come first.
					assert.Greater(t, hedges, n/2, "hedges for %d requests", n)
				}
			})
		})
	}
}

// spreadTail is HeavyTail with its fast answers spread over 1.5 to 2.5 ms,
// as they are on loopback, for virtual time: there, answers all 2 ms long
// would tie with a delay learnt from them, and the order of a tie is
// chance.
func spreadTail(seed uint64) http.Handler {
	return tail(seed, func(_ int64, rng *rand.Rand) time.Duration {
		return TailFast*3/4 + time.Duration(rng.Int64N(int64(TailFast/2)))
	})
}

// TestBudgetDelayCutsTheTail runs a heavy tail in virtual time, one
// request after another, through bare net/http and through the hedger
// whose delay comes from its budget: its p99 is at most a twentieth of
// bare's, for at most MaxExtraLoad more requests.
func TestBudgetDelayCutsTheTail(t *testing.T) {
	const n = 2000
	run := func(t *testing.T, p Peer) (p99 time.Duration, hedges int) {
		srv := &counting{h: spreadTail(TailSeed)}
		rt := p.New(TailSpec(), mem{srv})
		lat := make([]time.Duration, n)
		for i := range lat {
			start := time.Now()
			status, err := do(t, rt)
			require.NoError(t, err)
			require.Equal(t, 200, status)
			lat[i] = time.Since(start)
		}
		slices.Sort(lat)
		r := Result{Requests: n, Latencies: lat}
		return time.Duration(r.Quantile(0.99) * float64(time.Millisecond)), int(srv.n.Load()) - n
	}
	budget, ok := Find("retryhttp-hedge-loadbudget")
	require.True(t, ok)
	require.Equal(t, DelayBudget, budget.Delay)
	bare, _ := Find("bare")
	synctest.Test(t, func(t *testing.T) {
		bareP99, _ := run(t, bare)
		p99, hedges := run(t, budget)
		assert.Equal(t, TailSlow, bareP99, "bare p99")
		assert.LessOrEqual(t, p99, bareP99/20, "p99 under the budget")
		assert.LessOrEqual(t, hedges, int(TailSpec().MaxExtraLoad*n), "hedges for %d requests", n)
		t.Logf("p99 %v (bare %v), %d hedges for %d requests", p99, bareP99, hedges, n)
	})
}
