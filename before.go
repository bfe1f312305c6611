package retryhttp

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// Before each attempt: the call gathers the facts of the gate, asks it
// (decide.go), and carries out what it says of the host's limits: the
// concurrency slot, the send slot, the probe of a capped hold, the hedge
// budget. The loops ask admit once per attempt, and again after each
// wait it says.

// admit asks the gate whether attempt n (its resend under its number,
// when again is set) may go now, and carries out what it says of the
// host's limits: an attempt takes a send slot of the host's pace, and
// waits for it, or is refused when the slot leaves no time for its
// answer before its deadline; once its send slot is due, takes a slot
// under the host's concurrency limit, or waits in line for one (waiting
// for a send slot, it is not in flight, and holds no concurrency slot);
// goes first after a capped hold, or looks again at once if another
// request did; and, a first attempt, earns its
// share of a hedge, or, a hedge, spends one, refused if another request
// took the last one since the facts were read. An attempt refused gives its
// concurrency slot back. The turn to go first after a capped hold is
// taken last, once nothing can refuse the attempt: a turn taken by an
// attempt that does not go would hold the others back for nothing. A wait
// for a hold or a pace ends when the host's owner resets it.
func (c *call) admit(n int, again bool) step {
	now := time.Now()
	if s, waiting := c.inLine(n, now); waiting {
		return s
	}
	resets := c.host.resets.count() // before the facts: a reset after it ends the wait decided
	f := c.facts(now)
	f.host = c.host.factsFor(c.rule, now, c.st.fleet, asks{holds: c.pol.cfg.Hold != nil, pace: c.pol.pacing,
		budgets: n > 1 && !again, capped: c.capped(), maxServerDelay: f.maxServerDelay})
	f.slotTaken, f.slotDue = c.slot == n && !c.slotAt.Before(f.host.pace.cut), c.slotDue
	f.probing = again && c.probe.n == n && f.host.hold.wake == c.probe.wake
	if a := c.pol.cfg.Admission; a != nil {
		f.host.admit, f.admitted, f.admitWait = c.host.admission(c.concurrency(a)).factsNow(), c.admits&(1<<n) != 0, a.Wait()
	}
	s := gate(&f, n, again, rand.Float64())
	s.at = now.Add(s.wait)
	switch {
	case s.kind == stepNoMore:
		c.unadmit(n)
		return s
	case s.kind == stepWait: // for a hold, or for the send slot it holds
		if s.reason == retrytrace.WaitHold {
			c.slot = 0 // a slot taken before the hold has passed unused: the attempt takes a new one after it
			if !again {
				// Nothing in flight while it waits: its concurrency slot
				// goes back, and is taken anew after. A resend keeps the
				// slot of its first try, as the gate has it go on it
				// (given back, the resend would go with none).
				c.unadmit(n)
			}
		}
		if !c.onReset(&s, resets) {
			return c.admit(n, again) // reset since the facts were read: the hold ended, the pace is lifted
		}
	}
	if s.pace { // before the concurrency slot: an attempt waiting for its send slot is not in flight
		if instead, later := c.takeSlot(n, now, f.deadline); later {
			if instead.kind == stepWait && !c.onReset(&instead, resets) {
				return c.admit(n, again) // reset since the facts were read: the pace is lifted
			}
			return instead
		}
	}
	if s.acquire {
		if w, ok := c.host.admit.Load().acquire(); !ok {
			c.waiter, c.waitFor, c.waitUntil = w, n, now.Add(s.wait)
			return step{kind: stepWait, attempt: n, wait: s.wait, reason: retrytrace.WaitAdmission, at: s.at, wake: w.ch}
		}
		c.admits |= 1 << n
		s.wait, s.at = 0, now // a slot came free since the facts were read
	}
	if s.hedges == hedgeSpend && !c.host.hedges.spend() {
		c.unadmit(n)
		return noMore(n, retrytrace.RefusedHedgeBudget)
	}
	if s.probe && !c.claim(n, s, now, &f) {
		return c.admit(n, again) // another went first: wait for its answer
	}
	if !again && s.kind == stepSend {
		c.host.sendingAt(now)
	}
	if s.hedges == hedgeEarn {
		c.earned = c.host.hedges.earn(c.plan.hedge.MaxExtraLoad)
	}
	return s
}

// onReset makes the wait s, decided from facts read after the host's
// resets came to resets, end at its next reset; it reports false when
// one came since, and the wait must be decided again.
func (c *call) onReset(s *step, resets uint64) bool {
	var ok bool
	s.reset, ok = c.host.resets.after(resets)
	return ok
}

// claim takes, for attempt n, the turn to go first after the capped hold
// of step s, which has ended: the others wait for its answer, until the
// lapse, when its request gives up on the answer (its deadline, its
// attempt's timeout), at most maxServerDelay from now. It reports false
// when another request took the turn since the facts f were read; the
// hedge s spent then goes back.
func (c *call) claim(n int, s step, now time.Time, f *facts) bool {
	lapse := now.Add(f.maxServerDelay)
	if !f.deadline.IsZero() && f.deadline.Before(lapse) {
		lapse = f.deadline
	}
	if r := c.plan.retry; r != nil && r.PerAttemptTimeout > 0 && now.Add(r.PerAttemptTimeout).Before(lapse) {
		lapse = now.Add(r.PerAttemptTimeout)
	}
	wake, ok := c.host.holds.probe(c.rule, s.hold.Until, now, lapse)
	if !ok {
		if s.hedges == hedgeSpend {
			c.host.hedges.earn(1) // the hedge spent goes back: the attempt does not go now
		}
		return false
	}
	c.probe = probeTurn{n: n, wake: wake}
	return true
}

// unspend gives back the hedge that attempt n, going as w says, took of
// its host's hedge budget (see gate), or the share of one that the first
// attempt earned, when it is not sent after all: its Prepare failed, or
// it could not get its body. The budget caps the hedges the host is sent
// at a share of the requests it is sent.
func (c *call) unspend(n int, w how) {
	switch {
	case w.resend || !c.capped():
	case n == 1:
		c.host.hedges.forgo(c.earned)
		c.earned = 0
	default:
		c.host.hedges.earn(1)
	}
}

// probeTurn is a request's turn to go first after a capped hold: the
// attempt that took it, and the channel closed when the turn ends, which
// names it.
type probeTurn struct {
	n    int
	wake chan struct{}
}

// unprobe gives back the turn to go first after a capped hold that the
// request holds, if its attempt's outcome did not settle it: the attempt
// was not sent, or got no answer, or the request ended before it did.
// The others waiting for the answer then look again at once.
func (c *call) unprobe() {
	if c.probe.wake != nil {
		c.host.holds.unprobe(c.rule, c.probe.wake)
		c.probe = probeTurn{}
	}
}

// takeSlot takes attempt n's send slot of its host's pace at now. Unless
// the slot is due at once, it reports the step to take instead of
// sending: a wait for the slot, or a refusal when the answer would come
// past deadline, which spends no slot.
func (c *call) takeSlot(n int, now, deadline time.Time) (step, bool) {
	at, rate, ok := c.host.paces.take(c.rule, now, deadline, now.Add(c.pol.cfg.ServerDelayLimit()))
	if !ok {
		c.unadmit(n)
		r := noMore(n, retrytrace.RefusedPaced)
		r.wait, r.rate, r.at = at.Sub(now), rate, now
		return r, true
	}
	c.slot, c.slotAt, c.slotDue = n, now, at
	if wait := at.Sub(now); wait > 0 {
		c.unadmit(n) // a slot handed to it in line, before a cut took its send slot back: nothing in flight while it waits
		return step{kind: stepWait, attempt: n, wait: wait, reason: retrytrace.WaitPace, at: at, rate: rate}, true
	}
	return step{}, false
}

// inLine settles the wait of attempt n in line for a concurrency slot at
// now: a slot handed to it is its own, and the gate is asked again; a
// wait that is not over goes on; one that is over leaves the line, and
// the attempt is shed. It reports whether the attempt still waits (or is
// shed), with its step.
func (c *call) inLine(n int, now time.Time) (step, bool) {
	w := c.waiter
	if w == nil || c.waitFor != n {
		return step{}, false
	}
	a := c.host.admit.Load()
	if !a.granted(w) && now.Before(c.waitUntil) {
		return step{kind: stepWait, attempt: n, wait: c.waitUntil.Sub(now), reason: retrytrace.WaitAdmission,
			at: c.waitUntil, wake: w.ch, resumed: true}, true
	}
	c.waiter = nil
	if a.leave(w) {
		c.admits |= 1 << n
		return step{}, false
	}
	s := noMore(n, retrytrace.RefusedShed)
	s.limit = int(a.limitNow.Load())
	return s, true
}

// unadmit gives back the concurrency slot attempt n holds, if any, with
// nothing learnt: the attempt was not sent, or was cut off.
func (c *call) unadmit(n int) {
	if c.admits&(1<<n) == 0 {
		return
	}
	c.admits &^= 1 << n
	c.host.admit.Load().release(time.Now(), 0, signNone)
}

// leaveLine gives up the place in line of attempt waitFor, and the slot
// handed to it meanwhile, if any: it no longer goes when a slot comes (a
// server's delay put it off, or no further hedge may go).
func (c *call) leaveLine() {
	w := c.waiter
	if w == nil {
		return
	}
	c.waiter = nil
	if c.host.admit.Load().leave(w) {
		c.admits |= 1 << c.waitFor
		c.unadmit(c.waitFor)
	}
}

// unadmitAll gives back every concurrency slot the request holds, and its
// place in line: the request is over.
func (c *call) unadmitAll() {
	c.leaveLine()
	for n := range 32 {
		c.unadmit(n)
	}
}

// concurrency is the MaxConcurrency that the host's limit takes for the
// request, whose policy has admission a: that of the policy in force,
// when it has admission, as SetPolicy may have changed it since the
// request started. The requests of both policies share the host's limit:
// one of an older policy that fitted the limit to its own maximum would
// raise a limit the policy in force lowered, and hand the slots so freed
// to the requests in line.
func (c *call) concurrency(a *policy.Admission) int {
	if in := c.st.pol.Load().cfg; in != nil && in.Admission != nil {
		return in.Admission.Concurrency()
	}
	return a.Concurrency()
}

// facts gathers what a decision at now reads of the caller and the
// request.
func (c *call) facts(now time.Time) facts {
	deadline, _ := c.ctx.Deadline()
	return facts{now: now, callerDone: c.ctx.Err() != nil, deadline: deadline, ready: c.waitsForReady(),
		plan: c.plan, sent: c.sent, backoff: c.backoff, spare: c.spare, replayable: c.body.replayable(),
		maxServerDelay: c.pol.cfg.ServerDelayLimit()}
}

// capped reports whether the request's plan caps its hedges.
func (c *call) capped() bool { return c.plan.hedge != nil && c.plan.hedge.MaxExtraLoad > 0 }

// gauges returns the host's limits that step s, a wait or a refusal,
// met, for the hooks: the pace's rate, which the step carries, or the
// concurrency limit and the attempts in flight now.
func (c *call) gauges(s step) retrytrace.Gauges {
	g := retrytrace.Gauges{PaceRate: s.rate}
	if s.reason == retrytrace.WaitAdmission || s.refusal == retrytrace.RefusedShed {
		if a, admit := c.host.admit.Load(), c.pol.cfg.Admission; a != nil && admit != nil {
			g.ConcurrencyLimit, g.InFlight = a.shown(c.concurrency(admit))
		}
	}
	return g
}

// refusal is why step s refused its attempt, when a limit of its host did
// (a hold, the pace), for a request that has nothing else to hand back;
// nil otherwise.
func (c *call) refusal(s step) error {
	switch s.refusal {
	case retrytrace.RefusedHeld:
		return &HoldError{Host: c.host.name, Remaining: s.wait, Status: s.hold.Status}
	case retrytrace.RefusedPaced:
		if s.wait <= 0 { // the slot is due: its answer is what would come too late
			return fmt.Errorf("host %s paced at %.3g requests/s: its send slot leaves no time for the answer before the deadline (%w)",
				c.host.name, s.rate, ErrPaced)
		}
		return fmt.Errorf("host %s paced at %.3g requests/s: its next send slot is %v away (%w)",
			c.host.name, s.rate, s.wait.Round(time.Millisecond), ErrPaced)
	case retrytrace.RefusedShed:
		return fmt.Errorf("host %s has %d attempts in flight, its concurrency limit, and no slot came in time (%w)",
			c.host.name, s.limit, ErrShed)
	}
	return nil
}
