package retryhttp

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/policy"

	"github.com/retryhttp/retryhttp/dial"
)

// defaultMaxHosts is the number of hosts a Transport keeps state for when
// newHostTable is given no bound. At a few hundred bytes a host (bucket,
// hedge budget, holds, key and map slot; latencies only for hosts that
// are hedged), 4096 hosts cost about a megabyte, and few clients talk to
// more hosts than that within one outage.
const defaultMaxHosts = 4096

// host is what a Transport keeps of one host (a URL host, lowercased,
// its port kept): its retry budget, its hedge budget, the holds on it,
// the recent latencies of its answers and its statistics. A request
// looks its host up once, when it starts, and keeps the pointer.
type host struct {
	name   string
	bucket bucket      // gRPC's retry throttle
	hedges hedgeBudget // maxExtraLoad's cap on hedges
	holds  holds
	paces  paces
	// admit is the host's concurrency limit, made on the first attempt
	// under a policy with admission; nil otherwise.
	admit    atomic.Pointer[admission]
	sending  meter // the rate it is sent attempts at, which a throttle cuts from
	serving  meter // the rate it answers them without a throttle
	served   atomic.Uint64
	counters *counters // the host's statistics, shared with Stats
	// latencies is made on the first hedged request to the host, so
	// that hosts never hedged do not carry its kilobyte.
	latencies atomic.Pointer[latencyRing]
	seen      atomic.Uint64 // hostTable.clock at the last lookup
}

// latency returns the host's latency sketch, making it if need be.
func (h *host) latency() *latencyRing {
	if l := h.latencies.Load(); l != nil {
		return l
	}
	h.latencies.CompareAndSwap(nil, new(latencyRing))
	return h.latencies.Load()
}

// idle reports whether forgetting h loses nothing worth keeping at now:
// its bucket is full, its hedge budget fresh, and no hold in force. Its
// latencies are lost, which matters little for a host nobody sent to
// for a while.
func (h *host) idle(capacity int64, now time.Time) bool {
	return h.bucket.full(capacity) && h.hedges.fresh() && !h.holds.any(now)
}

// hostTable holds a [host] per host for at most maxHosts hosts, so that a
// client that talks to millions of hosts keeps a bounded amount of memory.
//
// When the table is at its bound, every idle host (see [host.idle]) not
// looked up since the previous eviction goes; if that frees too little,
// the other idle hosts go next, and only then hosts in debt or held,
// least recently looked up first. Dropping a host in debt forgets its
// failures, so under that pressure the throttle errs toward allowing
// retries, never toward blocking them. Each eviction frees at least an
// eighth of the bound, which keeps its cost (a scan and a sort of the
// map) amortised to a constant per new host.
//
// The throttle's limits can change at run time (Transport.SetPolicy): the
// buckets keep their tokens and take the new limits at their next use; a
// count above a lower new capacity reads as that capacity. Without a
// throttle the buckets gate and count nothing, and the counts held so far
// wait, unchanged, for one to return.
//
// Its methods are safe for concurrent use.
type hostTable struct {
	limits   atomic.Pointer[limits] // nil: no throttle
	maxHosts int                    // bound on len(hosts), at least 1
	// stats keeps each host's counters apart from its record, as Stats
	// documents: they outlive an eviction.
	stats *hostMap[counters]

	// mu guards the map and the two clocks below. It exists only because a
	// Go map cannot be read while it is written; a host's state is not
	// under it, so a goroutine holding a *host never takes it. Lookups of
	// known hosts, by far the common case, share a read lock.
	mu    sync.RWMutex
	hosts map[string]*host
	// clock counts insertions; a host's seen records its value at the
	// host's last lookup, which orders hosts by recency of use.
	clock uint64
	// swept is the clock at the last eviction: a host with seen < swept
	// has not been looked up since, and counts as idle.
	swept uint64
}

// newHostTable returns a table for throttle t keeping at most maxHosts
// hosts (maxHosts <= 0 means defaultMaxHosts). A nil t throttles nothing
// until set gives one.
func newHostTable(t *policy.Throttle, maxHosts int) *hostTable {
	if maxHosts <= 0 {
		maxHosts = defaultMaxHosts
	}
	ht := &hostTable{maxHosts: maxHosts, hosts: make(map[string]*host), stats: newHostMap[counters](maxStatsHosts)}
	ht.set(t)
	return ht
}

// set makes t the throttle, nil meaning none.
//
// MaxTokens and TokenRatio are rounded to the nearest thousandth of a token,
// the precision gRPC's retry design allows. Values that [policy.Config.Validate]
// rejects are clamped rather than trusted: capacity to [0.001, 1000] tokens,
// and the refill to at least 0.001 so that successes always refill a bucket.
func (ht *hostTable) set(t *policy.Throttle) {
	if t == nil {
		ht.limits.Store(nil)
		return
	}
	maxMilli := toMilli(t.MaxTokens)
	ht.limits.Store(&limits{maxMilli: maxMilli, ratioMilli: min(toMilli(t.TokenRatio), maxMilli)})
}

// get returns the record of name, a URL host already lowercased (a call
// lowers it once), making it if need be. A host seen for the first time,
// or again after it was evicted, starts with full budgets and no hold. A
// goroutine that still holds an evicted record may keep using it: its
// updates are simply lost. A lookup of a known host allocates nothing.
func (ht *hostTable) get(name string) *host {
	ht.mu.RLock()
	h := ht.hosts[name]
	clock := ht.clock
	ht.mu.RUnlock()
	if h == nil {
		return ht.insert(name)
	}
	// Store only on change, so that steady lookups of a busy host do not
	// keep writing to its cache line.
	if h.seen.Load() != clock {
		h.seen.Store(clock)
	}
	return h
}

// insert adds a fresh record for name unless another goroutine added one
// since the caller's lookup; it evicts first when the map is at its bound.
func (ht *hostTable) insert(name string) *host {
	counters := ht.stats.get(name) // its own lock: never under mu
	ht.mu.Lock()
	defer ht.mu.Unlock()
	if h := ht.hosts[name]; h != nil {
		return h
	}
	if len(ht.hosts) >= ht.maxHosts {
		ht.evict(time.Now())
	}
	ht.clock++
	h := &host{name: name, counters: counters}
	h.bucket.init(&ht.limits)
	h.seen.Store(ht.clock)
	ht.hosts[name] = h
	return h
}

// evict frees at least an eighth of the bound (at least one host), so that
// the next insertions run without evicting. ht.mu must be held for writing.
//
// Every idle host not looked up since the last eviction goes: it is worth
// nothing. If that is not enough, the others go in this order: idle ones,
// then those in debt or held, least recently looked up first, and among
// equally recent ones those with the most tokens, so that the debt
// forgotten is the oldest and the smallest.
func (ht *hostTable) evict(now time.Time) {
	want := max(ht.maxHosts/8, 1)
	freed := 0
	rest := make([]evictee, 0, len(ht.hosts))
	capacity := int64(maxMilliTokens)
	if l := ht.limits.Load(); l != nil {
		capacity = l.maxMilli
	}
	for name, h := range ht.hosts {
		idle, seen := h.idle(capacity, now), h.seen.Load()
		if idle && seen < ht.swept {
			delete(ht.hosts, name)
			freed++
			continue
		}
		rest = append(rest, evictee{name: name, idle: idle, seen: seen, tokens: min(h.bucket.tokens.Load(), capacity)})
	}
	if freed < want {
		slices.SortFunc(rest, evictee.compare)
		for _, e := range rest[:min(want-freed, len(rest))] {
			delete(ht.hosts, e.name)
		}
	}
	ht.swept = ht.clock
}

// evictee is a snapshot of one host, taken to rank it for eviction.
type evictee struct {
	name   string
	idle   bool
	seen   uint64
	tokens int64
}

// compare orders evictees first to last to evict: idle before in debt or
// held, then least recently looked up, then most tokens.
func (e evictee) compare(o evictee) int {
	if e.idle != o.idle {
		if e.idle {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(e.seen, o.seen), cmp.Compare(o.tokens, e.tokens))
}

// capacity is the retry budget's capacity in force, in milli-tokens; 0
// without a throttle.
func (ht *hostTable) capacity() int64 {
	if l := ht.limits.Load(); l != nil {
		return l.maxMilli
	}
	return 0
}

// read fills in hs what h holds at now: its budgets, under a throttle of
// capacity milli-tokens (0: none), the holds in force, and the quantiles
// of its latencies. It makes nothing, not even a latency sketch.
func (h *host) read(hs *HostStats, capacity int64, now time.Time) {
	if capacity > 0 {
		hs.Tokens = float64(min(h.bucket.tokens.Load(), capacity)) / milliPerToken
		hs.MaxTokens = float64(capacity) / milliPerToken
	}
	hs.HedgeTokens = h.hedges.hedges()
	for _, hd := range h.holds.inForce(now) {
		hs.Holds = append(hs.Holds, Hold{Rule: hd.rule, Status: hd.status, Since: hd.since, Until: hd.until})
	}
	if a := h.admit.Load(); a != nil {
		hs.Limit, hs.InFlight = int(a.limitNow.Load()), int(a.inFlightNow.Load())
	}
	for _, rate := range h.paces.rates(now) {
		if hs.PaceRate == 0 || rate < hs.PaceRate {
			hs.PaceRate = rate
		}
	}
	if l := h.latencies.Load(); l != nil {
		var buf [latencySamples]int64
		if s := l.sorted(buf[:0]); len(s) > 0 {
			q := func(q float64) time.Duration { return time.Duration(s[quantileIndex(q, len(s))]) }
			hs.LatencySamples, hs.LatencyP50, hs.LatencyP90, hs.LatencyP99 = len(s), q(0.5), q(0.9), q(0.99)
		}
	}
}

// reset ends what the table keeps against name (a URL host, lowercased),
// or against every host for "": its holds and its pace. The host is back,
// its owner says.
func (ht *hostTable) reset(name string) {
	ht.each(func(h *host) {
		if name == "" || h.name == name {
			h.holds.clear()
			h.paces.clear()
			if a := h.admit.Load(); a != nil {
				a.reset()
			}
		}
	})
}

// each calls f with every host held, for the status page; the records
// are read without the table's lock.
func (ht *hostTable) each(f func(*host)) {
	ht.mu.RLock()
	hs := make([]*host, 0, len(ht.hosts))
	for _, h := range ht.hosts {
		hs = append(hs, h)
	}
	ht.mu.RUnlock()
	for _, h := range hs {
		f(h)
	}
}

// What a request meets of its host: the hold in force on it, and what each
// attempt teaches its budgets, its holds and its latencies.

// held returns the hold on h for rule at now, the Transport's or the
// fleet's (v, what the fleet knows of h), whichever ends later, and where
// a request of the rule stands against it.
func (h *host) held(rule string, now time.Time, v FleetView) (hold, holdState) {
	hd, state := h.holds.get(rule, now)
	if v.HoldUntil.After(now) && v.HoldUntil.After(hd.until) {
		hd, state = hold{rule: rule, since: now, until: v.HoldUntil, status: v.HoldStatus}, holdHeld
	}
	return hd, state
}

// hostFacts are what a decision reads of the request's host.
type hostFacts struct {
	// budget says the Transport's retry budget allows a retry or hedge;
	// fleetSpent that the fleet's does not.
	budget, fleetSpent bool
	// hold is the hold on the host and the request's rule, the
	// Transport's or the fleet's, whichever ends later; holding is where
	// the request stands against it.
	hold    hold
	holding holdState
	// capped says the plan caps hedges (MaxExtraLoad); hedgeLeft that the
	// host's hedge budget holds one.
	capped, hedgeLeft bool
	// pace is the host's pace for the rule; rate 0: unpaced.
	pace paceFacts
	// admit is the host's concurrency limit; limit 0: no admission.
	admit admitFacts
}

// asks says what a decision needs to read of a host: its hold, when the
// policy holds hosts; its pace, when it paces them; its budgets, when a
// further attempt is at stake; and, when the request's plan caps its
// hedges, its hedge budget.
type asks struct{ holds, pace, budgets, capped bool }

// admission returns h's concurrency limit, making it, starting at max, if
// need be.
func (h *host) admission(max int) *admission {
	if a := h.admit.Load(); a != nil {
		return a
	}
	h.admit.CompareAndSwap(nil, newAdmission(max))
	return h.admit.Load()
}

// factsFor is what a decision at now reads of h for the requests of rule,
// as a says. The fleet, if any, is asked once.
func (h *host) factsFor(rule string, now time.Time, fleet Fleet, a asks) hostFacts {
	var v FleetView
	if fleet != nil && (a.holds || a.budgets) {
		v = fleet.Look(h.name, rule)
	}
	f := hostFacts{capped: a.capped}
	if a.holds {
		f.hold, f.holding = h.held(rule, now, v)
	}
	if a.pace {
		f.pace = h.paces.get(rule, now, h.sentRate(now))
	}
	if a.budgets {
		f.budget, f.fleetSpent = h.bucket.Allow(), v.Spent
		f.hedgeLeft = a.capped && h.hedges.has()
	}
	return f
}

// sentRate is the rate, in attempts per second, that h is sent at now.
func (h *host) sentRate(now time.Time) float64 {
	return h.sending.rate(now, h.sent())
}

// sending notes an attempt going to h at now: its meter rolls once a
// second.
func (h *host) sendingAt(now time.Time) {
	if h.sending.due(now) {
		h.sending.roll(now, h.sent())
	}
}

// sent is the attempts h was sent so far, from its counters: requests
// and extra attempts (transparent resends aside). Hosts past the bound of
// Stats.Hosts share their counters, and so their figure.
func (h *host) sent() uint64 {
	n := h.counters.requests.Load()
	for i := range h.counters.histogram {
		n += h.counters.histogram[i].Load()
	}
	return n
}

// lesson is what frames what an attempt teaches its host: its outcome,
// when it ended, the request's rule and policy, the fleet to tell, and
// whether its request is hedged, whose latencies set the hedging delay.
// The attempt's result goes beside it, not in it, so that keeping the
// rule in a hold does not take the result to the heap.
type lesson struct {
	out    outcome
	now    time.Time
	rule   string
	cfg    *policy.Config
	fleet  Fleet
	hedged bool
	pacing bool      // the policy paces hosts
	sent   time.Time // when the attempt was sent, or took its send slot
}

// learn records what attempt r showed of h: its budgets, the
// Transport's and the fleet's, the hold its answer asks for, and, for a
// hedged request, the latency of its answer. It reports whether the
// answer set or extended a hold. It is called once per attempt: an attempt
// sent again under its number is learnt from once, by its last try.
func (h *host) learn(r *result, l lesson) (holdSet bool) {
	report := FleetReport{Rule: l.rule, Budget: h.account(r, l.out, l.cfg.Throttle), Throttle: l.cfg.Throttle}
	if wait, ok := holdAsked(r, l.cfg.Hold != nil); ok {
		if hd, set := h.holds.set(l.rule, l.now, wait, l.cfg.ServerDelayLimit(), r.resp.StatusCode); set {
			holdSet = true
			report.HoldUntil, report.HoldStatus = hd.until, hd.status
		}
	} else if l.out != outNeverSent && l.out != outCancelled && l.out != outNoBody {
		h.holds.answered(l.rule, l.now, r.resp != nil)
	}
	if l.fleet != nil && (report.Budget != FleetNoChange || !report.HoldUntil.IsZero()) {
		l.fleet.Report(h.name, report)
	}
	if l.hedged && r.resp != nil && !throttle(r) {
		h.latency().add(r.latency) // a throttle is lost work, not a fast answer
	}
	if l.pacing {
		h.pace(r, l)
	}
	return holdSet
}

// pace teaches h's pace for l's rule what attempt r showed: a throttle
// cuts the rate, fields that announce the quota set it.
func (h *host) pace(r *result, l lesson) {
	thr, fields := throttle(r), r.fields.left || r.fields.limit > 0
	if !thr && r.resp != nil {
		n := h.served.Add(1)
		if h.serving.due(l.now) {
			h.serving.roll(l.now, n)
		}
	}
	if !thr && !fields {
		return // the common case: nothing more to learn
	}
	sent := h.sentRate(l.now)
	if thr {
		h.paces.throttle(l.rule, l.now, l.sent, sent, h.serving.rate(l.now, h.served.Load()))
	}
	if fields {
		h.paces.fields(l.rule, l.now, r.fields, sent)
	}
}

// throttle reports whether r is a throttle: the host refused it for load,
// not for what it asked. A 429; a 503 with a server delay; an answer the
// caller's classifier called Throttled.
func throttle(r *result) bool {
	switch {
	case r.verdict.kind() == Throttled:
		return true
	case r.resp == nil:
		return false
	case r.resp.StatusCode == http.StatusTooManyRequests:
		return true
	}
	return r.resp.StatusCode == http.StatusServiceUnavailable &&
		(r.serverDelay.Kind == delayPushback || r.serverDelay.Kind == delayRetryAfter || r.serverDelay.Kind == delayHeader)
}

// account records the final outcome of attempt r, whose outcome is out,
// in h's budget, where failures drain it and successes refill it, as
// gRPC's retry throttling counts them, and returns what it did, for the
// fleet. Without a throttle it counts nothing.
func (h *host) account(r *result, out outcome, throttle *policy.Throttle) FleetBudget {
	if throttle == nil {
		return FleetNoChange
	}
	switch {
	case out == outNeverSent && errors.Is(r.err, dial.ErrBackoff):
		// Refused by the dialer's backoff window, it says nothing new
		// of the host: the failure that opened the window was counted.
	case out == outRetryStatus, out == outNetwork, out == outNeverSent,
		out == outDone && r.resp.StatusCode >= 400 && r.serverDelay.Kind == delayStop:
		h.bucket.Failure()
		return FleetFailure
	case out == outDone:
		h.bucket.Success()
		return FleetSuccess
	}
	return FleetNoChange
}

// holdAsked returns how long the answer of r asks its host to be held,
// when the policy holds hosts: a 429 or 503 with a server delay, a
// RetryableUnprocessed verdict with a wait, or a quota the answer says is
// spent, on any status; the longest of them.
func holdAsked(r *result, holds bool) (time.Duration, bool) {
	if !holds || r.resp == nil {
		return 0, false
	}
	var wait time.Duration
	switch status := r.resp.StatusCode; {
	case status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable:
	case r.serverDelay.Kind == delayPushback, r.serverDelay.Kind == delayRetryAfter, r.serverDelay.Kind == delayHeader:
		wait = r.serverDelay.Wait
	}
	if d, ok := r.verdict.wait(); ok && r.unprocessed() {
		wait = max(wait, d)
	}
	if r.quotaSpent {
		wait = max(wait, r.quota)
	}
	return wait, wait > 0
}
