package retryhttp_test

import (
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// The hedge budget's burst is small whatever came before: a host fast
// for a thousand requests, so that no hedge was sent and the budget
// earned 20, then slow for a hundred, is sent at most maxExtraLoad x 100
// + 10 hedges in that run, as over any run of n requests; with the retry
// throttle on (nil: Default's) or off, as the cap holds either way.
func TestHedgeBudgetOverAnyRunOfRequests(t *testing.T) {
	const calm, slow, budget = 1000, 100, 0.02
	tests := []struct {
		name     string
		throttle *policy.Throttle
	}{
		{"retryThrottling as Default's", nil},
		{"retryThrottling off", &policy.Throttle{Off: true}},
		{"retryThrottling with room for every hedge", &policy.Throttle{MaxTokens: 1000, TokenRatio: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var firsts atomic.Int64
				srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
					if firsts.Load() <= calm {
						return rt.Step{Delay: time.Millisecond}
					}
					return rt.Step{Delay: 200 * time.Millisecond}
				}}
				cfg := budgetHedge(5*time.Millisecond, 0, budget)
				cfg.Throttle = tt.throttle
				tr := &retryhttp.Transport{Base: srv, Policy: cfg}
				for range calm {
					firsts.Add(1)
					sendAll(t, tr, 1)
				}
				before := tr.Stats().Total.Hedges
				assert.Zero(t, before, "no hedge while every answer beats the delay")
				for range slow {
					firsts.Add(1)
					sendAll(t, tr, 1)
				}
				hedges := tr.Stats().Total.Hedges - before
				assert.LessOrEqual(t, float64(hedges), budget*slow+10, "hedges in the slow run of %d", slow)
				assert.Positive(t, hedges, "the budget pays for some")
				t.Logf("%d hedges in the slow run", hedges)
			})
		})
	}
}

// With no fixed delay and more slow requests than the budget pays for
// (10% slow, a budget of 2%), the delay still sits at the start of the
// host's tail, never inside its slow mode: each hedge goes a few
// milliseconds after its request, not near the 200 ms of the slow ones,
// and the budget, not the delay, decides how many go.
func TestHedgeBudgetDelayStaysOutOfTheSlowMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, budget = 2000, 0.02
		var mu sync.Mutex
		rng := rand.New(rand.NewPCG(5, 1))
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
			mu.Lock()
			defer mu.Unlock()
			if rng.Float64() < 0.10 {
				return rt.Step{Delay: 200 * time.Millisecond}
			}
			return rt.Step{Delay: 1500*time.Microsecond + time.Duration(rng.Int64N(int64(time.Millisecond)))}
		}}
		var start time.Time
		var after []time.Duration
		tr := &retryhttp.Transport{Base: srv, Policy: budgetHedge(0, 0, budget),
			Hooks: &retrytrace.Hooks{AttemptStart: func(i retrytrace.AttemptStartInfo) {
				if i.Hedge {
					mu.Lock()
					after = append(after, time.Since(start))
					mu.Unlock()
				}
			}}}
		for range n {
			start = time.Now()
			sendAll(t, tr, 1)
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		assert.LessOrEqual(t, float64(len(after)), budget*n+10, "the budget caps the hedges")
		assert.GreaterOrEqual(t, float64(len(after)), budget*n/2, "and they are spent")
		late := 0
		for _, d := range after {
			if d >= 20*time.Millisecond {
				late++
			}
		}
		t.Logf("%d hedges, %d late, first delays %v", len(after), late, after[:min(5, len(after))])
		assert.LessOrEqual(t, late, len(after)/20, "hedges sent 20 ms or more after their request, of %d", len(after))
	})
}
