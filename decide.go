package retryhttp

import (
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/retrytrace"
)

// The decisions of a request, once its plan is made (plan.go): whether an
// attempt may go now (gate, before each attempt), and what follows an
// attempt (decide, after each). gate and decide are pure
// functions of the facts the call gathered and of a random value: they
// read no clock, no context and no lock, and call none of the caller's
// code, so that a table of facts tests them exactly. The loops carry out
// the steps they return.

// facts are what a decision reads: the time, the caller, the request, its
// host and, after an attempt, what the attempt showed. The call gathers
// them once per decision (call.facts); nothing else is read.
type facts struct {
	now time.Time

	// The caller.
	callerDone bool      // its context has ended
	deadline   time.Time // its context's deadline; zero: none
	ready      bool      // it waits out dial backoff windows

	// The request.
	plan plan
	// sent is the latest attempt started; backoff the retry policy's
	// counter; spare says the transparent resend is unused.
	sent, backoff int
	spare         bool
	replayable    bool      // its body can be sent again
	slotTaken     bool      // the attempt decided on holds a send slot of its host's pace
	slotDue       time.Time // when that slot is due
	admitted      bool      // it holds a slot under its host's concurrency limit
	// admitWait is the longest an attempt waits in line for a concurrency
	// slot: the policy's maxWait.
	admitWait time.Duration
	// schedule is the retry policy's wait at backoff, gathered after an
	// attempt that may be retried.
	schedule       time.Duration
	maxServerDelay time.Duration // longer server delays are not waited for
	// probing says the attempt decided on is the probe of its host's
	// capped hold, out already: its resend goes on with the turn.
	probing bool

	// The host, for the request's rule.
	host hostFacts

	// The attempt decided on, for decide.
	attempt attemptFacts
}

// attemptFacts are what one attempt showed, as a decision reads it.
type attemptFacts struct {
	n      int
	resend bool // it was the resend of attempt n
	out    outcome
	status int // its response's status; 0: an error
	delay  serverDelay
	// verdict is what the caller's classifier, or the server, said of it.
	verdict Verdict
	// window is how long its address stays closed, when its dialer's
	// backoff window refused it; 0 otherwise.
	window time.Duration
	// lost says its connection was lost to another request's
	// cancellation (see lostError).
	lost bool
}

// step is what follows an attempt, or what the gate says before one: the
// one decision both loops carry out. They differ only in how they wait
// (the retry loop sleeps, the hedge loop sets a timer) and in what runs
// beside them.
type step struct {
	kind stepKind
	// attempt is the attempt the step is about: the one that follows a
	// wait or a resend, or the one a refusal keeps from being made.
	attempt int
	// wait is before that attempt; for a refusal by a hold or the pace,
	// how long the hold, or the wait for the slot, still lasts.
	wait    time.Duration
	reason  retrytrace.WaitReason    // why wait is as long as it is
	refusal retrytrace.RefusalReason // why no further attempt goes; "" when none was due
	backoff int                      // the retry policy's counter once the wait is over
	// at is when the wait ends: the time of the decision plus wait.
	at time.Time
	// hold is the hold that refused the attempt, for RefusedHeld, or
	// whose end lets a stepSend go first, a probe.
	hold  hold
	probe bool
	// wake, when not nil, ends a stepWait early: the answer a hold's
	// probe waits for has come, or a slot in line. reset, when not nil,
	// ends it when the host's owner resets it (see hosts.reset): the hold
	// or pace waited for is gone.
	wake, reset <-chan struct{}
	// pace says a stepSend takes a send slot of its host's pace; rate is
	// the pace's rate, for RefusedPaced, whose wait is the slot's, and
	// for a WaitPace.
	pace bool
	rate float64
	// acquire says a stepSend takes a slot under its host's concurrency
	// limit, waiting in line for one at most wait when none is free (a
	// wait that ends once a slot is taken); limit is the limit, for
	// RefusedShed.
	acquire bool
	limit   int
	// hedges is what a stepSend does to the host's hedge budget.
	hedges hedgeUse
	// resumed says a stepWait goes on with a wait reported already for
	// the attempt, looked at again before it was over: for the send slot
	// it holds, or in line. It is one wait: timed on, not reported or
	// counted again.
	resumed bool
}

// decided is when the step was decided: a wait lasts from then.
func (s step) decided() time.Time { return s.at.Add(-s.wait) }

// stepKind is the kind of a step.
type stepKind uint8

const (
	// stepSend: the gate lets the attempt go now.
	stepSend stepKind = iota
	// stepDeliver: the attempt's response goes back to the caller.
	stepDeliver
	// stepFail: the request ends with the attempt's error.
	stepFail
	// stepResend: the attempt is sent again at once under its number,
	// spending neither an attempt nor a token: the transparent resend of
	// one that never reached the server, once per request.
	stepResend
	// stepReady: the attempt, refused by its address's dial backoff
	// window, is sent again under its number once the window ends, for
	// a request that waits for ready.
	stepReady
	// stepNext: the next attempt goes after wait, if the gate lets it
	// then.
	stepNext
	// stepWait: the gate holds the attempt back for wait, after which it
	// is asked again.
	stepWait
	// stepNoMore: no further attempt goes; the last outcome goes back
	// once none is in flight.
	stepNoMore
)

// hedgeUse is what an attempt the gate lets go does to its host's hedge
// budget, under a plan that caps hedges.
type hedgeUse uint8

const (
	hedgeNone  hedgeUse = iota
	hedgeEarn           // a first attempt earns a fraction of a hedge
	hedgeSpend          // a hedge spends a whole one
)

// noMore is the step of an attempt n that a limit keeps from being made.
func noMore(n int, why retrytrace.RefusalReason) step {
	return step{kind: stepNoMore, attempt: n, refusal: why}
}

// gate decides whether attempt n may be sent now, again saying whether it
// is the resend of attempt n under its number. A hold on the host holds
// it back until the hold ends, and then until its own point of a short
// spread that rnd draws, before the deadline; or refuses it when the
// hold's end is past the deadline or maxServerDelay. When a capped hold
// has ended, the attempt goes first (a probe), or waits for the answer of
// the one that did, until the probe's lapse, or is refused when the lapse
// is past the deadline or maxServerDelay; the probe's own resend goes on.
// A retry or hedge (not a resend) needs the host's budgets and the
// request's body to allow it, and a hedge one of the host's hedge budget,
// which each first attempt earns. Under a host's
// concurrency limit, the attempt takes a slot, unless it holds one: when
// none is free, it waits in line up to maxWait within its deadline, or is
// refused when it cannot wait at all. On a paced host, the attempt takes
// a send slot, unless it holds one already, which it waits for until it
// is due: the gate refuses it when the next slot comes past the deadline
// or maxServerDelay.
func gate(f *facts, n int, again bool, rnd float64) step {
	h := &f.host
	if s, held := gateHold(f, n, rnd); held {
		return s
	}
	s := step{kind: stepSend, attempt: n}
	if h.holding == holdProbe {
		s.probe, s.hold = true, h.hold
	}
	if again {
		return s // it holds the slot, and spent the budgets, of its first try
	}
	if n > 1 {
		if why, ok := f.allowed(); !ok {
			return noMore(n, why)
		}
		if h.capped {
			if !h.hedgeLeft {
				return noMore(n, retrytrace.RefusedHedgeBudget)
			}
			s.hedges = hedgeSpend
		}
	} else if h.capped {
		s.hedges = hedgeEarn
	}
	if f.slotTaken && h.pace.rate > 0 && f.slotDue.After(f.now) {
		// Its send slot is not due yet: a non-fatal answer that asks
		// for the next hedge at once does not send it before its slot.
		return step{kind: stepWait, attempt: n, wait: f.slotDue.Sub(f.now), reason: retrytrace.WaitPace, rate: h.pace.rate,
			resumed: true}
	}
	if f.slotTaken && f.admitted && h.pace.rate > 0 && !f.deadline.IsZero() && !f.now.Add(h.pace.answer).Before(f.deadline) {
		// Its slot came, and then its place under the concurrency limit,
		// but the wait in line for that leaves no time for the answer
		// before the deadline: as when the slot is taken, the host's
		// quota is not spent on an answer that would come too late for
		// the caller.
		r := noMore(n, retrytrace.RefusedPaced)
		r.rate = h.pace.rate
		return r
	}
	if a := h.admit; a.limit > 0 && !f.admitted {
		wait := f.admitWait
		if !f.deadline.IsZero() {
			// Before the deadline, as fits asks of every wait: no slot
			// come, the attempt is shed while its caller still waits,
			// not at the instant its context ends.
			wait = min(wait, f.deadline.Sub(f.now)-1)
		}
		if wait <= 0 && (a.queued || a.inFlight >= a.limit) {
			r := noMore(n, retrytrace.RefusedShed)
			r.limit = a.limit
			return r
		}
		// In line, at most this long, should no slot be free when the
		// attempt takes one: the host full when the facts were read, or
		// its last slot taken since by another request.
		s.acquire, s.wait = true, max(wait, 0)
	}
	if p := h.pace; p.rate > 0 && !f.slotTaken {
		wait := p.slot(f.now).Sub(f.now)
		if wait > f.maxServerDelay || !f.fits(wait) {
			r := noMore(n, retrytrace.RefusedPaced)
			r.wait, r.rate = wait, p.rate
			return r
		}
		s.pace = true
	}
	return s
}

// gateHold is what a hold on the host asks of attempt n, when it asks
// anything: a wait for the hold's end, spread by rnd, or for the answer
// of the request that went first after a capped hold; or a refusal, when
// that comes past the deadline or maxServerDelay.
func gateHold(f *facts, n int, rnd float64) (step, bool) {
	h := &f.host
	var left time.Duration
	switch {
	case h.holding == holdHeld:
		left = h.hold.Until.Sub(f.now)
	case h.holding == holdProbing && !f.probing: // not the resend of the probe itself
		left = h.hold.lapse.Sub(f.now)
	default:
		return step{}, false
	}
	if left > f.maxServerDelay || !f.fits(left) {
		s := noMore(n, retrytrace.RefusedHeld)
		s.hold, s.wait = h.hold, left
		return s, true
	}
	if h.holding == holdProbing {
		return step{kind: stepWait, attempt: n, wait: left, reason: retrytrace.WaitHold, wake: h.hold.wake}, true
	}
	return step{kind: stepWait, attempt: n, wait: h.hold.release(rnd, f.deadline).Sub(f.now), reason: retrytrace.WaitHold}, true
}

// decide is what follows the attempt f.attempt; rnd, in [0, 1), draws
// the jitter of a server's delay.
func decide(f *facts, rnd float64) step {
	a := &f.attempt
	next := f.sent + 1
	switch a.out {
	case outDone:
		return step{kind: stepDeliver, attempt: a.n}
	case outFatal:
		return step{kind: stepFail, attempt: a.n}
	case outNoBody, outCancelled:
		return step{kind: stepNoMore, attempt: next}
	}
	if f.sendsAgain() {
		return f.again()
	}
	switch {
	case f.sent >= f.plan.attempts || !f.repeatable():
		return step{kind: stepNoMore, attempt: next}
	case a.delay.Kind == delayStop && !a.verdict.timed():
		return noMore(next, retrytrace.RefusedNoRetry) // unless a verdict's wait replaces the server's
	}
	if why, ok := f.allowed(); !ok {
		return noMore(next, why)
	}
	s := f.waitFor(rnd)
	switch {
	case s.refusal != "":
		return noMore(next, s.refusal)
	case !f.fits(s.wait):
		return noMore(next, retrytrace.RefusedDeadline)
	}
	if r, ok := f.outheld(next); !ok {
		return r
	}
	s.kind, s.attempt = stepNext, next
	return s
}

// outheld reports whether attempt n may outlast the hold on its host
// that is in force now, if any: a hold whose end is past the deadline or
// maxServerDelay would refuse it when its wait ends, so the wait is not
// started, and the last outcome goes back at once, as for a wait past
// the deadline. A hold's end only moves later, though its owner may end
// it; the turn of a request going first after a capped hold is left to
// the gate, since its answer may come at any time.
func (f *facts) outheld(n int) (step, bool) {
	if f.host.holding != holdHeld {
		return step{}, true
	}
	s, _ := gateHold(f, n, 0) // the gate's own judgement: a wait, or a refusal
	return s, s.kind != stepNoMore
}

// allowed reports whether a further attempt may start: the body must be
// replayable, and the host's budgets, the Transport's and the fleet's,
// must allow it. When they do not, why says which.
func (f *facts) allowed() (why retrytrace.RefusalReason, ok bool) {
	switch {
	case !f.replayable:
		return retrytrace.RefusedBuffer, false
	case !f.host.budget:
		return retrytrace.RefusedBudget, false
	case f.host.fleetSpent:
		return retrytrace.RefusedFleet, false
	}
	return "", true
}

// sendsAgain reports whether the attempt is sent again under its number:
// the transparent resend, once per request, of one that never reached the
// server or lost its connection to another request's cancellation; or,
// under any plan but hedging, for a request that waits for ready, the
// attempt a dial backoff window refused (under hedging that hedge is
// spent, and the next one waits). A resend the window refused waits too
// when no further attempt may follow, as with no retry rule: the next
// attempt would have waited the window for it, and without one the
// request would fail at once on a window within its deadline.
func (f *facts) sendsAgain() bool {
	a := &f.attempt
	return f.spare && f.resendable() ||
		f.plan.kind != planHedge && (!a.resend || f.sent >= f.plan.attempts) && a.window > 0 && f.ready && !f.callerDone
}

// again is the step of an attempt sent again under its number: at once,
// or when its dial backoff window ends, if that is within the deadline.
func (f *facts) again() step {
	a := &f.attempt
	if f.spare && f.resendable() {
		return step{kind: stepResend, attempt: a.n}
	}
	if !f.fits(a.window) {
		return noMore(a.n, retrytrace.RefusedDeadline)
	}
	return step{kind: stepReady, attempt: a.n, wait: a.window, reason: retrytrace.WaitDialBackoff}
}

// resendable reports whether the attempt may be resent at once,
// transparently: one that never reached the server, or, under a retry or
// hedging rule, an idempotent one whose connection another request's
// cancellation closed (see lostError), as net/http itself resends such a
// request on a connection it reused. Not when the caller's context has
// ended, nor when the dialer refused it for its address's backoff window,
// which an immediate resend would only meet again, nor when the body can
// no longer be replayed.
func (f *facts) resendable() bool {
	a := &f.attempt
	switch {
	case a.out == outNeverSent:
	case a.out == outNetwork && f.plan.kind != planNone && f.plan.idem && a.lost:
	default:
		return false
	}
	return !f.callerDone && a.window == 0 && f.replayable
}

// repeatable applies the idempotency rules to the attempt: a request that
// is not idempotent is sent again only when the server surely did not act
// on it (never sent, 429, a verdict saying so) or explicitly asked for a
// retry (pushback).
func (f *facts) repeatable() bool {
	a := &f.attempt
	switch {
	case f.plan.idem || a.out == outNeverSent || a.verdict.unprocessed():
		return true
	case a.out == outRetryStatus:
		return a.status == http.StatusTooManyRequests || a.delay.Kind == delayPushback
	}
	return false
}

// waitFor is the wait before the next attempt, with its reason and the
// retry counter after it; or a refusal, when the server asks for longer
// than the policy waits. A wait the caller's verdict asks for comes
// first, then the server's delay signals; without either, a retry waits
// its backoff (at least a second after a 429) and a hedge goes at once.
func (f *facts) waitFor(rnd float64) step {
	a := &f.attempt
	if d, ok := a.verdict.wait(); ok {
		return f.serverWait(d, retrytrace.WaitClassify, f.backoff+1, rnd)
	}
	switch a.delay.Kind {
	case delayPushback:
		return f.serverWait(a.delay.Wait, retrytrace.WaitPushback, 0, rnd) // A6: backoff restarts after a pushback
	case delayRetryAfter:
		return f.serverWait(a.delay.Wait, retrytrace.WaitRetryAfter, f.backoff+1, rnd)
	case delayHeader:
		return f.serverWait(a.delay.Wait, retrytrace.WaitServerDelay, f.backoff+1, rnd)
	}
	if f.plan.kind == planHedge {
		if a.window > 0 && f.ready {
			return step{wait: a.window, reason: retrytrace.WaitDialBackoff}
		}
		return step{reason: retrytrace.WaitHedgeDelay} // at once: the answer was non-fatal
	}
	// A caller's own Backoff may give a negative wait: none.
	s := step{wait: max(f.schedule, 0), reason: retrytrace.WaitBackoff, backoff: f.backoff + 1}
	if a.status == http.StatusTooManyRequests {
		// A rate limit with no delay signal is not answered faster
		// than a person would: at least a second, jittered up.
		if floor := jitterServerDelay(time.Second, rnd); floor > s.wait {
			s.wait, s.reason = floor, retrytrace.WaitRateLimited
		}
	}
	if a.window >= s.wait && f.ready {
		s.wait, s.reason = a.window, retrytrace.WaitDialBackoff
	}
	return s
}

// serverWait is the step of a wait of d that the server (or the caller's
// verdict) asks for, with a little positive jitter, rnd drawing it; a
// refusal when it asks for longer than the policy allows, or for a delay
// too large to represent.
func (f *facts) serverWait(d time.Duration, why retrytrace.WaitReason, backoff int, rnd float64) step {
	if d >= tooLong || d > f.maxServerDelay {
		return step{refusal: retrytrace.RefusedDelayTooLong}
	}
	return step{wait: jitterServerDelay(d, rnd), reason: why, backoff: backoff}
}

// fits reports whether a wait of d from now ends before the caller's
// deadline. A wait that would end at or past it is not started: the last
// outcome is worth more to the caller than an error at the deadline.
func (f *facts) fits(d time.Duration) bool {
	return f.deadline.IsZero() || f.now.Add(d).Before(f.deadline)
}
