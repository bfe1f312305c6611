// Package memfleet is a [retryhttp.Fleet] kept in memory, for tests and
// benchmarks of clients that share one within a process.
package memfleet

import (
	"sync"

	"github.com/retryhttp/retryhttp"
)

// Fleet is a [retryhttp.Fleet] kept in memory, for clients that share
// it within one process: what a shared store such as redisfleet gives a
// fleet of processes, with no store in between (no delay, no batching,
// never down). It keeps one bucket per host for every member, with the
// accounting of the Transport's own (a failure takes one token, a
// success adds the throttle's TokenRatio, capped at MaxTokens, full at
// first), spent at half its capacity or less, and one hold per host and
// rule, the latest end winning.
//
// The zero Fleet is not usable; make one with [New]. It is
// safe for concurrent use.
type Fleet struct {
	mu     sync.Mutex         // one lock for all: Look and Report are short and do no I/O
	tokens map[string]float64 // by host; absent: full
	max    map[string]float64 // each host's capacity, from its reports
	holds  map[[2]string]retryhttp.FleetView
}

// New returns an empty Fleet: every bucket full, no hold.
func New() *Fleet {
	return &Fleet{tokens: map[string]float64{}, max: map[string]float64{},
		holds: map[[2]string]retryhttp.FleetView{}}
}

// Report implements retryhttp.Fleet.
func (f *Fleet) Report(host string, r retryhttp.FleetReport) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if th := r.Throttle; th != nil {
		f.max[host] = th.MaxTokens
		tokens, ok := f.tokens[host]
		if !ok {
			tokens = th.MaxTokens
		}
		switch r.Budget {
		case retryhttp.FleetFailure:
			tokens = max(tokens-1, 0)
		case retryhttp.FleetSuccess:
			tokens = min(tokens+th.TokenRatio, th.MaxTokens)
		}
		f.tokens[host] = tokens
	}
	if !r.HoldUntil.IsZero() {
		key := [2]string{host, r.Rule}
		if r.HoldUntil.After(f.holds[key].HoldUntil) {
			f.holds[key] = retryhttp.FleetView{HoldUntil: r.HoldUntil, HoldStatus: r.HoldStatus}
		}
	}
}

// Look implements retryhttp.Fleet.
func (f *Fleet) Look(host, rule string) retryhttp.FleetView {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.holds[[2]string{host, rule}]
	if tokens, ok := f.tokens[host]; ok {
		v.Spent = tokens <= f.max[host]/2
	}
	return v
}
