package benchmarks

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLacks(t *testing.T) {
	want := map[string]string{
		"bare":             "no retries, no hedges (the baseline)",
		"retryhttp":        "",
		"retryhttp+budget": "",
		"retryhttp-hedge":  "",
		"retryablehttp":    "jitter; a backoff multiplier other than 2; hedging; waits cut at the deadline; a budget",
		"failsafe":         "waits cut at the deadline; hedges capped at a share of the requests sent",
		"failsafe+budget":  "waits cut at the deadline; hedges capped at a share of the requests sent; the last answer when the budget refuses (an error instead)",
		"failsafe-hedge":   "waits cut at the deadline; hedges capped at a share of the requests sent",
		"hedgedhttp":       "non-fatal statuses (any answer wins); retries; Retry-After; waits cut at the deadline; a budget; hedges capped at a share of the requests sent; a request body (hedges share one reader)",

		"retryhttp-hedge-quantile":         "",
		"retryhttp-hedge-loadbudget":       "",
		"retryhttp-hedge-fixed-loadbudget": "",
		"failsafe-hedge+budget":            "waits cut at the deadline; hedges capped at a share of the requests sent",
	}
	peers := AllPeers()
	assert.Len(t, peers, len(want))
	for _, p := range peers {
		assert.Equal(t, want[p.Name], Lacks(p, peers), p.Name)
	}
}

func TestPeerNames(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range AllPeers() {
		assert.False(t, seen[p.Name], "%s named twice", p.Name)
		seen[p.Name] = true
		assert.NotContains(t, p.Name, " ", "benchmark names split on spaces")
		assert.NotContains(t, p.Name, "/", "benchmark names split on slashes")
		got, ok := Find(p.Name)
		assert.True(t, ok)
		assert.Equal(t, p.Label, got.Label)
	}
	_, ok := Find("nobody")
	assert.False(t, ok)
	for _, p := range HedgePeers() {
		assert.True(t, p.Name == "bare" || p.Caps.Hedges, "%s in HedgePeers does not hedge", p.Name)
	}
}

func TestSpecWait(t *testing.T) {
	s := testSpec()
	for n, want := range []int64{100, 200, 300, 300} {
		assert.Equal(t, want, s.Wait(n).Milliseconds(), "wait before retry %d", n)
	}
	assert.InDelta(t, 0.2, EverydaySpec().BudgetShare(), 1e-12)
	assert.True(t, s.Retries(503))
	assert.False(t, s.Retries(500))
}
