package retryhttp_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
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
