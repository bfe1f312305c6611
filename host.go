package retryhttp

import (
	"errors"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/dial"
	"github.com/retryhttp/retryhttp/internal/tokens"
	"github.com/retryhttp/retryhttp/policy"
)

// A host as a request meets it: what a decision reads of it (the hold in
// force for the request's rule, its pace, its concurrency limit, its
// budgets), and what each attempt teaches it (its budgets, its holds, its
// pace, its latencies). The table of hosts, and their eviction, are
// hosts.go's.

// held returns the hold on h for rule at now, and where a request of the
// rule stands against it: the Transport's own, once it has met the
// fleet's (v, what the fleet knows of h), which limit, the policy's
// maxServerDelay, caps (see holds.meet). A fleet's hold that h's owner
// ended (see hostTable.reset) is none.
func (h *host) held(rule string, now time.Time, v FleetView, limit time.Duration) (hold, holdState) {
	if v.HoldUntil.After(now) && !h.holds.forgot(rule, v.HoldUntil) {
		h.holds.meet(rule, v, now, limit)
	}
	return h.holds.get(rule, now)
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
// policy holds hosts (maxServerDelay being the policy's, which caps a
// fleet's hold met); its pace, when it paces them; its budgets, when a
// further attempt is at stake; and, when the request's plan caps its
// hedges, its hedge budget.
type asks struct {
	holds, pace, budgets, capped bool
	maxServerDelay               time.Duration
}

// admission returns h's concurrency limit under a policy whose
// MaxConcurrency is max, making it, starting at max, if need be. A limit
// made under another policy takes max as its maximum (see
// admission.fit).
func (h *host) admission(max int) *admission {
	a := h.admit.Load()
	if a == nil {
		h.admit.CompareAndSwap(nil, newAdmission(max))
		a = h.admit.Load()
	}
	a.fit(max)
	return a
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
		f.hold, f.holding = h.held(rule, now, v, a.maxServerDelay)
	}
	if a.pace {
		f.pace = h.paces.get(rule, now, h.askedRate(now))
	}
	if a.budgets {
		f.budget, f.fleetSpent = h.bucket.Allow(), v.Spent
		f.hedgeLeft = a.capped && h.hedges.has()
	}
	return f
}

// askedRate is the rate, in attempts per second, that h is asked for at
// now: requests and their further attempts, whether they went or not.
func (h *host) askedRate(now time.Time) float64 {
	return h.asking.rate(now, h.asked())
}

// sentRate is the rate, in attempts per second, that h was sent at now.
func (h *host) sentRate(now time.Time) float64 {
	return h.sending.rate(now, h.sentN.Load())
}

// sendingAt notes an attempt going to h at now: its meters roll once a
// second.
func (h *host) sendingAt(now time.Time) {
	n := h.sentN.Add(1)
	if h.sending.due(now) {
		h.sending.roll(now, n)
	}
	if h.asking.due(now) {
		h.asking.roll(now, h.asked())
	}
}

// asked is the attempts h was asked for so far, from its counters:
// requests, sent or not, and extra attempts (transparent resends aside).
// Hosts past the bound of Stats.Hosts share their counters, and so their
// figure.
func (h *host) asked() uint64 {
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
			report.HoldUntil, report.HoldStatus = hd.Until, hd.Status
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
// cuts the rate, fields that announce the quota set it, and an answer
// tells how long the rule's answers take (the one that paced the rule
// included).
func (h *host) pace(r *result, l lesson) {
	q := r.fields
	if r.quotaSpent && r.quota > 0 && !q.left { // r=0: the fields' reading too
		// (A quota spent and given again at once, t=0, says nothing of
		// the rate the host takes, as it sets no hold.)
		q.left, q.r, q.t = true, 0, r.quota
	}
	thr, fields := throttle(r), q.left || q.limit > 0
	if !thr && r.resp != nil {
		n := h.served.Add(1)
		if h.serving.due(l.now) {
			h.serving.roll(l.now, n)
		}
	}
	if thr {
		held := l.now
		if wait, ok := holdAsked(r, l.cfg.Hold != nil); ok {
			held = l.now.Add(min(wait, l.cfg.ServerDelayLimit()))
		}
		h.paces.throttle(l.rule, l.now, l.sent, h.sentRate(l.now), h.serving.rate(l.now, h.served.Load()), held)
	}
	if fields {
		h.paces.fields(l.rule, l.now, l.sent, q, h.askedRate(l.now), l.cfg.ServerDelayLimit())
	}
	if r.resp != nil {
		h.paces.answered(l.rule, l.now, r.latency, !thr)
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
		out == outDone && r.resp.StatusCode >= 400 && r.serverDelay.Kind == delayStop,
		// A listed status handed back at once, as a verdict or the
		// server's X-Should-Retry said: it is still an attempt answered
		// with a retryable status, as gRPC counts a retryable code that a
		// pushback forbids retrying.
		out == outDone && r.class == outRetryStatus:
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
// RetryableUnprocessed or Throttled verdict with a wait (its own, or
// else the server's delay: GitHub's secondary limit is a 403 with a
// Retry-After), or a quota the answer says is spent, on any status; the
// longest of them. A verdict's own wait stands in place of the server's
// delay headers, here as for the attempt's next wait: the caller who
// reads the answer knows better than its headers.
func holdAsked(r *result, holds bool) (time.Duration, bool) {
	if !holds || r.resp == nil {
		return 0, false
	}
	var delay time.Duration
	switch r.serverDelay.Kind {
	case delayPushback, delayRetryAfter, delayHeader:
		delay = r.serverDelay.Wait
	}
	if d, ok := r.verdict.wait(); ok {
		delay = d
	}
	var wait time.Duration
	if status := r.resp.StatusCode; status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable || r.unprocessed() {
		wait = delay
	}
	if r.quotaSpent {
		wait = max(wait, r.quota)
	}
	return wait, wait > 0
}

// read fills in hs what h holds at now: its budgets, under a throttle of
// capacity milli-tokens (0: none), the holds in force, its concurrency
// limit under admit, the policy's admission in force (nil: none, and no
// limit to show, whatever attempts of an older policy still hold), and
// the quantiles of its latencies. It makes nothing, not even a latency
// sketch, and sends nothing: a limit a new policy raised is shown, not
// fitted (see admission.shown).
func (h *host) read(hs *HostStats, capacity int64, admit *policy.Admission, now time.Time) {
	if capacity > 0 {
		hs.Tokens = float64(min(h.bucket.tokens.Load(), capacity)) / tokens.PerToken
		hs.MaxTokens = float64(capacity) / tokens.PerToken
	}
	hs.HedgeTokens = h.hedges.hedges()
	hs.Holds = h.holds.inForce(now)
	if a := h.admit.Load(); a != nil && admit != nil {
		hs.ConcurrencyLimit, hs.InFlight = a.shown(admit.Concurrency())
	}
	for _, rate := range h.paces.rates(now, h.askedRate(now)) {
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
