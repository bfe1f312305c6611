package retryhttp

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/dial"
	"github.com/retryhttp/retryhttp/internal/tokens"
	"github.com/retryhttp/retryhttp/policy"
)

// histogramBuckets are the lower bounds of [Counters.Histogram]'s
// buckets.
var histogramBuckets = [8]int{1, 2, 3, 4, 5, 10, 100, 1000}

// Counters are what a [Transport] has done for one rule or one host. An
// extra attempt is one after a request's first: a retry or a hedge.
type Counters struct {
	// Requests counts RoundTrip calls, whether or not an attempt was
	// sent: each request's first attempt, not sent when a hold, the
	// pace, the concurrency limit or the caller's end refused it. A call
	// refused before it is a request (a nil request, URL or header, an
	// invalid policy or per-call rule) counts nothing.
	Requests uint64
	// ExtraAttempts counts attempts after the first, retries and hedges
	// alike; it is the sum of Histogram.
	ExtraAttempts uint64
	// ExtraAttemptsFailed counts those of ExtraAttempts that got a
	// retryable status, a non-fatal status or an error.
	ExtraAttemptsFailed uint64
	// TransparentRetries counts attempts resent because the first
	// provably never reached the server; they are not ExtraAttempts.
	TransparentRetries uint64
	// Hedges counts the hedges among ExtraAttempts; HedgesWon those
	// that won: whose success or fatal status was handed to the caller
	// and cut the other attempts off. A hedge's non-fatal answer handed
	// back because every attempt failed did not win. HedgesCancelled
	// counts the attempts of hedged requests, the first included, cut
	// off before they ended: because another attempt won, the caller's
	// context ended, or the body outgrew its buffer. It measures work
	// thrown away, so it may exceed Hedges.
	Hedges          uint64
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
	// attempts and retries alike, for a hold to end, or for the answer to
	// the request that went first after a capped hold; HoldWaitTime is
	// the time those waits lasted, in all, each from its start until the
	// request went on (the hold's end and the request's release point, the
	// answer, a ResetBackoff, or the caller's end), not the time announced
	// to [retrytrace.Hooks.Wait]. HoldRefusals counts the attempts a hold
	// refused, as it would not end within their deadline or
	// maxServerDelay.
	HoldsSet     uint64
	HoldWaits    uint64
	HoldWaitTime time.Duration
	HoldRefusals uint64
	// PaceWaits counts the attempts that waited for a send slot of their
	// host's pace (see [policy.Pace]), and PaceWaitTime the time those
	// waits lasted, in all, each until its slot came, a ResetBackoff, or
	// the caller's end; PaceRefusals counts the attempts refused as their
	// slot would come past their deadline or maxServerDelay.
	PaceWaits    uint64
	PaceWaitTime time.Duration
	PaceRefusals uint64
	// AdmissionWaits counts the attempts that waited in line for a slot
	// under their host's concurrency limit (see [policy.Admission]), and
	// AdmissionWaitTime the time those waits lasted, in all, each until a
	// slot came, maxWait ran out, or the caller's end, not the longest each
	// could wait; Shed counts the attempts refused as no slot came in
	// time.
	AdmissionWaits    uint64
	AdmissionWaitTime time.Duration
	Shed              uint64
	// CommittedForSize counts request bodies that could not be replayed
	// because they outgrew their buffer or got no room in the total.
	CommittedForSize uint64
	// Histogram counts extra attempts by their number within their
	// request, in buckets whose lower bounds are 1, 2, 3, 4, 5, 10, 100
	// and 1000: a request's k-th extra attempt counts in the last bucket
	// whose bound is at most k, so the 5th to 9th count in ">= 5" and
	// every one counts in exactly one bucket.
	Histogram [8]uint64
}

// Stats is a snapshot of what a Transport has done and of what it holds
// now. Its counters are consistent in the sense that matters for ratios:
// a count is never seen before the count it depends on (no hedge won that
// was not sent, no failed extra attempt that was not counted as one).
//
// Publish it with expvar in one line, read afresh at each scrape:
//
//	expvar.Publish("retryhttp", expvar.Func(func() any { return tr.Stats() }))
//
// encoding/json shows its error values (PolicyErr, a dial.Window's Err)
// as {}; the status package's JSON (status.Handler, ?format=json) gives
// their text, redacted.
type Stats struct {
	// Total sums every host, and so every request since the Transport
	// was first used, whatever policy it was under.
	Total Counters
	// Rules is keyed by the rule of the policy in force that requests
	// matched (see [policy.Rule.Key]), "(none)" for requests no rule
	// matched, and "(per-call)" for requests sent under [WithPolicy]
	// (present once one was). A policy set by [Transport.SetPolicy]
	// starts its rules afresh.
	Rules map[string]Counters
	// Hosts is keyed by URL host, lowercased, its port kept, as the
	// budget is. The counters of at most 1024 hosts are kept apart;
	// requests to hosts beyond them count under "(other)". What a host
	// holds now (its budget, its holds) is given for the hosts the
	// Transport keeps state for, at most 4096, the least recently used
	// forgotten first; a host forgotten, and "(other)", show a full
	// budget, as their next request finds, and nothing else held.
	Hosts map[string]HostStats
	// Buffer reports the request-body buffer.
	Buffer BufferStats
	// Failures are the last 20 requests that failed, newest first: those
	// that ended in an error, or in a 429 or 5xx after more than one
	// attempt. Failed counts every one since first use.
	Failures []Failure
	Failed   uint64
	// DialBackoff lists the addresses that the Transport's own dialer
	// (with a nil Base) is backing off, or failed since their last
	// connection; it is nil when the Base is the caller's.
	DialBackoff []dial.Window
	// PolicyErr is the error of an invalid policy while it is in force,
	// which every request then fails with; nil otherwise.
	PolicyErr error
}

// HostStats are what a [Transport] has done for one host, and what it
// holds of the host now.
type HostStats struct {
	Counters
	// Tokens and MaxTokens are the host's retry budget: the tokens it
	// holds, and its capacity under the throttle in force. Retries and
	// hedges start only while Tokens > MaxTokens/2. MaxTokens is 0 when
	// the policy has no throttle.
	Tokens, MaxTokens float64
	// HedgeTokens are the hedges its hedge budget (maxExtraLoad) holds,
	// at most 10.
	HedgeTokens float64
	// Holds are the holds in force on the host, one per rule at most.
	Holds []Hold
	// PaceRate is the rate, in requests per second, that the host's
	// pace sends at, the slowest of its rules'; 0 when it is not paced.
	PaceRate float64
	// ConcurrencyLimit is the host's concurrency limit (see [policy.Admission]),
	// and InFlight the attempts in flight under it; ConcurrencyLimit is 0 when the
	// policy has no admission.
	ConcurrencyLimit, InFlight int
	// LatencySamples recent latencies of the host are kept, for a host
	// whose requests were hedged, and their quantiles are given.
	LatencySamples                     int
	LatencyP50, LatencyP90, LatencyP99 time.Duration
}

// maxStatsHosts bounds the hosts whose counters are kept apart in
// [Stats.Hosts], so that a
// client talking to millions of hosts keeps a fixed amount of memory.
const maxStatsHosts = 1024

// overflowHost is where the counters of hosts past maxStatsHosts go.
const overflowHost = "(other)"

// counters is the atomic form of Counters, one per rule and per host.
type counters struct {
	requests, failed, transparent            atomic.Uint64
	hedges, hedgesWon, hedgesCancelled       atomic.Uint64
	budgetRefusals, fleetRefusals            atomic.Uint64
	hedgeBudgetRefusals                      atomic.Uint64
	holdsSet, holdWaits, holdRefusals        atomic.Uint64
	holdWaitNanos                            atomic.Uint64
	paceWaits, paceWaitNanos, paceRefusals   atomic.Uint64
	admissionWaits, admissionWaitNanos, shed atomic.Uint64
	committedForSize                         atomic.Uint64
	histogram                                [8]atomic.Uint64
}

// snapshot reads c so that each dependent count is read before the count
// it depends on, and is thus never ahead of it.
func (c *counters) snapshot() Counters {
	var s Counters
	s.ExtraAttemptsFailed = c.failed.Load()
	s.HedgesWon = c.hedgesWon.Load()
	s.HedgesCancelled = c.hedgesCancelled.Load()
	s.Hedges = c.hedges.Load()
	for i := range c.histogram {
		s.Histogram[i] = c.histogram[i].Load()
		s.ExtraAttempts += s.Histogram[i]
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
	s.PaceWaits = c.paceWaits.Load()
	s.PaceWaitTime = time.Duration(c.paceWaitNanos.Load())
	s.PaceRefusals = c.paceRefusals.Load()
	s.AdmissionWaits = c.admissionWaits.Load()
	s.AdmissionWaitTime = time.Duration(c.admissionWaitNanos.Load())
	s.Shed = c.shed.Load()
	s.CommittedForSize = c.committedForSize.Load()
	return s
}

func (s *Counters) add(o Counters) {
	s.Requests += o.Requests
	s.ExtraAttempts += o.ExtraAttempts
	s.ExtraAttemptsFailed += o.ExtraAttemptsFailed
	s.TransparentRetries += o.TransparentRetries
	s.Hedges += o.Hedges
	s.HedgesWon += o.HedgesWon
	s.HedgesCancelled += o.HedgesCancelled
	s.BudgetRefusals += o.BudgetRefusals
	s.FleetRefusals += o.FleetRefusals
	s.HedgeBudgetRefusals += o.HedgeBudgetRefusals
	s.HoldsSet += o.HoldsSet
	s.HoldWaits += o.HoldWaits
	s.HoldWaitTime += o.HoldWaitTime
	s.HoldRefusals += o.HoldRefusals
	s.PaceWaits += o.PaceWaits
	s.PaceWaitTime += o.PaceWaitTime
	s.PaceRefusals += o.PaceRefusals
	s.AdmissionWaits += o.AdmissionWaits
	s.AdmissionWaitTime += o.AdmissionWaitTime
	s.Shed += o.Shed
	s.CommittedForSize += o.CommittedForSize
	for i := range s.Histogram {
		s.Histogram[i] += o.Histogram[i]
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

// newRuleStats makes the counters of rules, each named by its key. A
// rule whose patterns repeat an earlier rule's, and so never matches a
// request, has its position after its key: "GET (#3)", again as often as
// that name is another rule's already (a Path may end in " (#3)"), so
// that no two rules share a name and Stats.Rules hides none.
func newRuleStats(rules []policy.Rule) ruleStats {
	n := len(rules)
	s := ruleStats{counters: make([]*counters, n+2), names: make([]string, n+2)}
	seen := make(map[string]bool, n)
	for i := range s.counters {
		s.counters[i] = new(counters)
		if i >= n {
			continue
		}
		key := rules[i].Key()
		for seen[key] {
			key += " (#" + strconv.Itoa(i) + ")"
		}
		seen[key], s.names[i] = true, key
	}
	s.names[n], s.names[n+1] = ruleNone, rulePerCall
	return s
}

// The keys of requests that no rule matched, and of requests under a
// per-call rule: no rule's key is written in parentheses.
const (
	ruleNone    = "(none)"
	rulePerCall = "(per-call)"
)

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

// snapshot reads st at now: the counters of every rule and of every host,
// the latter summed into the total, and what each host holds now.
func (st *state) snapshot(now time.Time) Stats {
	rules := st.pol.Load().ruleStats
	s := Stats{Rules: make(map[string]Counters, len(rules.counters)), Hosts: make(map[string]HostStats)}
	for i, c := range rules.counters {
		snap := c.snapshot()
		if i == len(rules.counters)-1 && snap == (Counters{}) {
			continue // no per-call rule was used
		}
		s.Rules[rules.names[i]] = snap
	}
	capacity := st.hosts.capacity()
	full := float64(capacity) / tokens.PerToken // 0: no throttle
	st.hosts.stats.Each(func(h string, c *counters) {
		snap := c.snapshot()
		// A host with no state kept (forgotten, or "(other)") has a full
		// budget, which its next request gets: not the 0 of no throttle.
		s.Hosts[h] = HostStats{Counters: snap, Tokens: full, MaxTokens: full}
		s.Total.add(snap)
	})
	var admit *policy.Admission
	if cfg := st.pol.Load().cfg; cfg != nil { // nil: the policy is invalid
		admit = cfg.Admission
	}
	st.hosts.each(func(h *host) {
		hs := s.Hosts[h.name]
		h.read(&hs, capacity, admit, now)
		s.Hosts[h.name] = hs
	})
	s.Buffer = st.pool.stats()
	s.Failures, s.Failed = st.failures.recent()
	if st.dialer != nil {
		s.DialBackoff = st.dialer.Windows()
	}
	s.PolicyErr = st.pol.Load().err
	return s
}

// pair counts an event for a request's rule and host at once.
type pair [2]*counters

func (p pair) each(f func(c *counters)) { f(p[0]); f(p[1]) }
