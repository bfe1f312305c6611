package retryhttp

import (
	"strconv"
	"sync/atomic"
	"time"
)

// histogramBuckets are the lower bounds of the retry histogram's buckets.
var histogramBuckets = [8]int{1, 2, 3, 4, 5, 10, 100, 1000}

// HistogramBuckets returns the lower bounds of [Counters.RetryHistogram]'s
// buckets, 1, 2, 3, 4, 5, 10, 100 and 1000: a request's k-th extra attempt
// (retry or hedge, k >= 1) counts in the last bucket whose bound is at most
// k, so the 5th to 9th count in ">= 5" and every one counts in exactly one
// bucket. It returns a copy: the bounds are fixed.
func HistogramBuckets() [8]int { return histogramBuckets }

// Counters are what a [Transport] has done for one rule or one host.
type Counters struct {
	// Requests counts RoundTrip calls: first attempts.
	Requests uint64
	// RetryAttempts counts attempts after the first, retries and hedges
	// alike; it is the sum of RetryHistogram.
	RetryAttempts uint64
	// RetryAttemptsFailed counts those of RetryAttempts that got a
	// retryable status, a non-fatal status or an error.
	RetryAttemptsFailed uint64
	// TransparentRetries counts attempts resent because the first
	// provably never reached the server; they are not RetryAttempts.
	TransparentRetries uint64
	// HedgesSent counts the hedges among RetryAttempts; HedgesWon those
	// whose response was handed to the caller. HedgesCancelled counts the
	// attempts of hedged requests, the first included, cut off before
	// they ended: because another attempt won, the caller's context ended,
	// or the body outgrew its buffer. It measures work thrown away, so it
	// may exceed HedgesSent.
	HedgesSent      uint64
	HedgesWon       uint64
	HedgesCancelled uint64
	// BudgetRefusals counts attempts the host's retry budget refused.
	BudgetRefusals uint64
	// FleetRefusals counts attempts the fleet's retry budget for the host
	// refused (see [Transport.Fleet]).
	FleetRefusals uint64
	// HedgeBudgetRefusals counts hedges the host's hedge budget
	// (maxExtraLoad) withheld.
	HedgeBudgetRefusals uint64
	// HoldsSet counts answers that set or extended a hold on their host
	// (see [policy.Hold]); HoldWaits counts the waits of requests, first
	// attempts and retries alike, until a hold ended, and HoldWaitTime
	// their total length; HoldRefusals counts the attempts a hold refused,
	// as it would not end within their deadline or maxServerDelay.
	HoldsSet     uint64
	HoldWaits    uint64
	HoldWaitTime time.Duration
	HoldRefusals uint64
	// CommittedForSize counts request bodies that could not be replayed
	// because they outgrew their buffer or got no room in the total.
	CommittedForSize uint64
	// RetryHistogram counts extra attempts by their number within their
	// request, in the buckets of [HistogramBuckets].
	RetryHistogram [8]uint64
}

// Stats is a snapshot of a Transport's counters. It is consistent in the
// sense that matters for ratios: a count is never seen before the count it
// depends on (no hedge won that was not sent, no failed retry attempt that
// was not counted as a retry attempt).
type Stats struct {
	// Total sums every host, and so every request since the Transport
	// was first used, whatever policy it was under.
	Total Counters
	// Rules is keyed by the matched rule of the policy in force,
	// "methodConfig[i]", "none" for requests no rule matched, and
	// "per-call" for requests sent under [WithPolicy] (present once one
	// was). A policy set by [Transport.SetPolicy] starts its rules afresh.
	Rules map[string]Counters
	// Hosts is keyed by URL host as the budget is. At most 1024 hosts
	// are kept apart; requests to hosts beyond them count under
	// "(other)".
	Hosts map[string]Counters
	// Buffer reports the request-body buffer.
	Buffer BufferStats
}

// maxStatsHosts bounds the hosts kept apart in [Stats.Hosts], so that a
// client talking to millions of hosts keeps a fixed amount of memory.
const maxStatsHosts = 1024

// counters is the atomic form of Counters, one per rule and per host.
type counters struct {
	requests, failed, transparent          atomic.Uint64
	hedgesSent, hedgesWon, hedgesCancelled atomic.Uint64
	budgetRefusals, fleetRefusals          atomic.Uint64
	hedgeBudgetRefusals                    atomic.Uint64
	holdsSet, holdWaits, holdRefusals      atomic.Uint64
	holdWaitNanos                          atomic.Uint64
	committedForSize                       atomic.Uint64
	histogram                              [8]atomic.Uint64
}

// snapshot reads c so that each dependent count is read before the count
// it depends on, and is thus never ahead of it.
func (c *counters) snapshot() Counters {
	var s Counters
	s.RetryAttemptsFailed = c.failed.Load()
	s.HedgesWon = c.hedgesWon.Load()
	s.HedgesCancelled = c.hedgesCancelled.Load()
	s.HedgesSent = c.hedgesSent.Load()
	for i := range c.histogram {
		s.RetryHistogram[i] = c.histogram[i].Load()
		s.RetryAttempts += s.RetryHistogram[i]
	}
	s.Requests = c.requests.Load()
	s.TransparentRetries = c.transparent.Load()
	s.BudgetRefusals = c.budgetRefusals.Load()
	s.FleetRefusals = c.fleetRefusals.Load()
	s.HedgeBudgetRefusals = c.hedgeBudgetRefusals.Load()
	s.HoldsSet = c.holdsSet.Load()
	s.HoldWaits = c.holdWaits.Load()
	s.HoldWaitTime = time.Duration(c.holdWaitNanos.Load())
	s.HoldRefusals = c.holdRefusals.Load()
	s.CommittedForSize = c.committedForSize.Load()
	return s
}

func (s *Counters) add(o Counters) {
	s.Requests += o.Requests
	s.RetryAttempts += o.RetryAttempts
	s.RetryAttemptsFailed += o.RetryAttemptsFailed
	s.TransparentRetries += o.TransparentRetries
	s.HedgesSent += o.HedgesSent
	s.HedgesWon += o.HedgesWon
	s.HedgesCancelled += o.HedgesCancelled
	s.BudgetRefusals += o.BudgetRefusals
	s.FleetRefusals += o.FleetRefusals
	s.HedgeBudgetRefusals += o.HedgeBudgetRefusals
	s.HoldsSet += o.HoldsSet
	s.HoldWaits += o.HoldWaits
	s.HoldWaitTime += o.HoldWaitTime
	s.HoldRefusals += o.HoldRefusals
	s.CommittedForSize += o.CommittedForSize
	for i := range s.RetryHistogram {
		s.RetryHistogram[i] += o.RetryHistogram[i]
	}
}

// histogramBucket returns the bucket of the k-th extra attempt.
func histogramBucket(k int) int {
	b := 0
	for i, lo := range histogramBuckets {
		if k >= lo {
			b = i
		}
	}
	return b
}

// perCallRule is the rule index of a request sent under WithPolicy.
const perCallRule = -2

// ruleStats holds the counters of one policy's rules: rule i at index i,
// then requests no rule matched, then requests under a per-call rule. It
// is fixed when the policy is set.
type ruleStats struct {
	counters []*counters
	names    []string // each one's key in Stats.Rules, made once
}

func newRuleStats(rules int) ruleStats {
	s := ruleStats{counters: make([]*counters, rules+2), names: make([]string, rules+2)}
	for i := range s.counters {
		s.counters[i] = new(counters)
		s.names[i] = "methodConfig[" + strconv.Itoa(i) + "]"
	}
	s.names[rules], s.names[rules+1] = "none", "per-call"
	return s
}

// index maps a rule index (-1: no rule; perCallRule) to its slot.
func (s ruleStats) index(i int) int {
	switch i {
	case -1:
		return len(s.counters) - 2
	case perCallRule:
		return len(s.counters) - 1
	}
	return i
}

// rule returns the counters of rule i.
func (s ruleStats) rule(i int) *counters { return s.counters[s.index(i)] }

// name returns the key of rule i in Stats.Rules.
func (s ruleStats) name(i int) string { return s.names[s.index(i)] }

// snapshot reads the counters of every rule and of every host, the
// latter summed into the total.
func snapshot(rules ruleStats, hosts *hostMap[counters]) Stats {
	st := Stats{Rules: make(map[string]Counters, len(rules.counters)), Hosts: make(map[string]Counters)}
	for i, c := range rules.counters {
		snap := c.snapshot()
		if i == len(rules.counters)-1 && snap == (Counters{}) {
			continue // no per-call rule was used
		}
		st.Rules[rules.names[i]] = snap
	}
	for h, c := range hosts.snapshot() {
		snap := c.snapshot()
		st.Hosts[h] = snap
		st.Total.add(snap)
	}
	return st
}

// pair counts an event for a request's rule and host at once.
type pair [2]*counters

func (p pair) each(f func(c *counters)) { f(p[0]); f(p[1]) }
