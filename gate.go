package retryhttp

import (
	"errors"
	"net/http"
	"time"
)

// The host's limits, as a request meets them: the gate asks them before
// each attempt (a hold on the host, its retry budget, the fleet's, its
// hedge budget, the body), and learn teaches them what each attempt
// showed (its budget effect, the hold its answer asks for, its latency).

// gate decides whether attempt n may be sent at now. A hold on the host
// (the Transport's, or the fleet's) holds it back until the hold ends,
// spread by rnd over a tenth of the hold, at most a second, or refuses it
// when that is past the deadline or maxServerDelay; a retry or hedge needs
// the host's budgets and the request's body to allow it, and a hedge one
// of the host's hedge budget, which each first attempt earns.
func (c *call) gate(n int, now time.Time, rnd float64) step {
	if c.pol.cfg.Hold != nil {
		if h, held := c.held(now); held {
			wait := h.resume(rnd).Sub(now)
			if left := h.until.Sub(now); left > c.pol.cfg.ServerDelayLimit() || !c.fits(wait, now) {
				s := noMore(n, RefusedHold)
				s.err = &HoldError{Host: c.host.name, Remaining: left, Status: h.status}
				return s
			}
			return step{kind: stepWait, attempt: n, wait: wait, reason: WaitHold, at: now.Add(wait)}
		}
	}
	budget := c.plan.hedge != nil && c.plan.hedge.MaxExtraLoad > 0
	if n == 1 {
		if budget {
			c.host.hedges.earn(c.plan.hedge.MaxExtraLoad)
		}
		return step{kind: stepSend, attempt: n}
	}
	if why, ok := c.allowed(); !ok {
		return noMore(n, why)
	}
	if budget && !c.host.hedges.spend() {
		return noMore(n, RefusedHedgeBudget)
	}
	return step{kind: stepSend, attempt: n}
}

// held returns the hold in force on the request's host and rule at now,
// the Transport's or the fleet's, whichever ends later.
func (c *call) held(now time.Time) (hold, bool) {
	h, held := c.host.holds.get(c.rule, now)
	if f := c.st.fleet; f != nil {
		if v := f.Look(c.host.name, c.rule); v.HoldUntil.After(now) && v.HoldUntil.After(h.until) {
			h, held = hold{rule: c.rule, since: now, until: v.HoldUntil, status: v.HoldStatus}, true
		}
	}
	return h, held
}

// noMore is the step of an attempt n that a limit keeps from being made.
func noMore(n int, why RefusalReason) step {
	return step{kind: stepNoMore, attempt: n, refusal: why}
}

// allowed reports whether a further attempt may start now: the body must
// be replayable, and the host's budgets, the Transport's and the
// fleet's, must allow it. When they do not, why says which.
func (c *call) allowed() (why RefusalReason, ok bool) {
	switch {
	case !c.body.replayable():
		return RefusedBuffer, false
	case !c.host.bucket.Allow():
		return RefusedBudget, false
	case c.st.fleet != nil && c.st.fleet.Look(c.host.name, c.rule).Spent:
		return RefusedFleet, false
	}
	return "", true
}

// learn records what attempt r, whose outcome is out, showed of its
// host: its budgets, the Transport's and the fleet's, and, for a hedged
// request, the latency of its answer. It is called once per attempt: an
// attempt sent again under its number is learnt from once, by its last
// try.
func (c *call) learn(r *result, out outcome, now time.Time) {
	if r.n > 1 && out != outDone {
		c.failed()
	}
	report := FleetReport{Rule: c.rule, Budget: c.account(r, out), Throttle: c.pol.cfg.Throttle}
	if wait, ok := c.holdAsked(r); ok {
		if h, set := c.host.holds.set(c.rule, now, wait, r.resp.StatusCode); set {
			c.holdSet()
			report.HoldUntil, report.HoldStatus = h.until, h.status
		}
	}
	if f := c.st.fleet; f != nil && (report.Budget != FleetNoChange || !report.HoldUntil.IsZero()) {
		f.Report(c.host.name, report)
	}
	if c.plan.kind == planHedge && r.resp != nil {
		c.host.latency().add(r.latency)
	}
}

// holdAsked returns how long the answer of r asks its host to be held,
// when the policy holds hosts: a 429 or 503 with a server delay, a
// RetryableUnprocessed verdict with a wait, or a quota the answer says is
// spent, on any status; the longest of them.
func (c *call) holdAsked(r *result) (time.Duration, bool) {
	if c.pol.cfg.Hold == nil || r.resp == nil {
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

// account records the final outcome of an attempt in the host's budget,
// where failures drain it and successes refill it, as gRPC's retry
// throttling counts them, and returns what it did, for the fleet.
func (c *call) account(r *result, out outcome) FleetBudget {
	if c.pol.cfg.Throttle == nil {
		return FleetNoChange
	}
	switch {
	case out == outNeverSent && errors.Is(r.err, ErrDialBackoff):
		// Refused by the dialer's backoff window, it says nothing new
		// of the host: the failure that opened the window was counted.
	case out == outRetryStatus, out == outNetwork, out == outNeverSent,
		out == outDone && r.resp.StatusCode >= 400 && r.serverDelay.Kind == delayStop:
		c.host.bucket.Failure()
		return FleetFailure
	case out == outDone:
		c.host.bucket.Success()
		return FleetSuccess
	}
	return FleetNoChange
}
