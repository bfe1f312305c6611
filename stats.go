package retryhttp

import (
	"strconv"
	"sync/atomic"
)

// HistogramBuckets are the lower bounds of [Counters.RetryHistogram]'s
// buckets: a request's k-th extra attempt (retry or hedge, k >= 1) counts
// in the last bucket whose bound is at most k, so the 5th to 9th count in
// ">= 5" and every one counts in exactly one bucket.
var HistogramBuckets = [8]int{1, 2, 3, 4, 5, 10, 100, 1000}

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
	// Total sums every rule.
	Total Counters
	// Rules is keyed by the matched rule, "methodConfig[i]", or "none"
	// for requests no rule matched.
	Rules map[string]Counters
	// Hosts is keyed by URL host as the budget is. At most
	// maxStatsHosts hosts are kept apart; requests to hosts beyond them
	// count under "(other)".
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
	budgetRefusals, committedForSize       atomic.Uint64
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
	s.CommittedForSize += o.CommittedForSize
	for i := range s.RetryHistogram {
		s.RetryHistogram[i] += o.RetryHistogram[i]
	}
}

// histogramBucket returns the bucket of the k-th extra attempt.
func histogramBucket(k int) int {
	b := 0
	for i, lo := range HistogramBuckets {
		if k >= lo {
			b = i
		}
	}
	return b
}

// statsSet holds the counters of a Transport: one per rule, fixed when
// the policy is read, and one per host up to maxStatsHosts.
type statsSet struct {
	rules []*counters // index i: rule i; last: requests no rule matched
	names []string    // the key of each in Stats.Rules, made once
	hosts *hostMap[counters]
}

func newStatsSet(rules int) *statsSet {
	s := &statsSet{rules: make([]*counters, rules+1), names: make([]string, rules+1), hosts: newHostMap[counters](maxStatsHosts)}
	for i := range s.rules {
		s.rules[i] = new(counters)
		s.names[i] = "methodConfig[" + strconv.Itoa(i) + "]"
	}
	s.names[rules] = "none"
	return s
}

// name returns the key of rule i (-1: no rule) in Stats.Rules.
func (s *statsSet) name(i int) string {
	if i < 0 {
		return s.names[len(s.names)-1]
	}
	return s.names[i]
}

// rule returns the counters of rule i (-1: no rule).
func (s *statsSet) rule(i int) *counters {
	if i < 0 {
		return s.rules[len(s.rules)-1]
	}
	return s.rules[i]
}

// host returns the counters of host, which must be in budget form
// (lowercase, port kept).
func (s *statsSet) host(host string) *counters { return s.hosts.get(host) }

func (s *statsSet) snapshot() Stats {
	st := Stats{Rules: make(map[string]Counters, len(s.rules)), Hosts: make(map[string]Counters)}
	for i, c := range s.rules {
		snap := c.snapshot()
		st.Rules[s.names[i]] = snap
		st.Total.add(snap)
	}
	for h, c := range s.hosts.snapshot() {
		st.Hosts[h] = c.snapshot()
	}
	return st
}

// pair counts an event for a request's rule and host at once.
type pair [2]*counters

func (p pair) each(f func(c *counters)) { f(p[0]); f(p[1]) }
