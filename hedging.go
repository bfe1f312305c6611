package retryhttp

import (
	"context"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/retrytrace"
)

// hedger is the state of one hedged request's loop. The loop runs on the
// caller's goroutine from the first attempt to the end; each attempt is
// sent on a goroutine of its own, which only sends it and hands its result
// (or its base's panic) to results, where there is room for every attempt,
// so that none ever blocks. The hedger is kept with its call, and a call
// that ended cleanly keeps its channel and timer for the next request.
type hedger struct {
	results chan result
	timer   *time.Timer // when the next hedge is due, while armed
	armed   bool
	// wake and reset end the armed wait early (a probe's answer, a slot
	// in line; the host's owner resetting it); nil: only the timer.
	wake, reset <-chan struct{}
	dueNow      bool                         // the next hedge is due at once: no timer is set for it
	flights     [maxHedgeAttempts + 1]flight // by attempt number
	flying      int                          // attempts in flight
	// closed says no further hedge starts: a limit, the server or the
	// policy refused one, or the body can no longer be sent whole.
	closed bool
	// outgrew says the body outgrew its buffer and the attempts that
	// could not send it were cut off.
	outgrew bool
	// cutOff says every attempt in flight was cut off (see cancelAll):
	// a result that comes after is a loser's.
	cutOff bool
	// resend is the attempt whose transparent resend is due; 0: none.
	resend int
	// notBefore is when the server's delay, or a dial window, lets the
	// next hedge go; a non-fatal answer does not send it any earlier.
	notBefore time.Time
	// hedgeAt is when the hedging delay has the next hedge go (zero:
	// no delay sends one), so that a wait of a resend, which takes the
	// timer, gives it back to the hedge once the resend is sent.
	hedgeAt time.Time
	// waitWhy is why the loop waits, since waitSince (zero: it does not),
	// and waitIdle whether no attempt was in flight when the wait began:
	// what counting it at its end (see ended) needs.
	waitWhy   retrytrace.WaitReason
	waitSince time.Time
	waitIdle  bool
}

// flight is an attempt in flight.
type flight struct {
	live    bool
	cancel  context.CancelCauseFunc
	started time.Time
	addr    string // the backend it was routed to, if any
}

// hedge runs a hedged request: attempt 1 at once, each next one when the
// hedging delay ends (at once after a non-fatal status, later when the
// server asks), until one succeeds or fails fatally; then every other
// attempt is cancelled and closed. It is a state machine on three named
// predicates: another hedge may go (mayLaunch), one is due (the armed
// timer), and the request is over (over). Each event (a hedge due, a
// result, the body outgrowing its buffer, the caller gone) is handled by
// one method, which carries out what the call decides.
func (c *call) hedge() (*http.Response, error) {
	h := &c.hedger
	h.start()
	defer h.finish(c)
	h.due(c) // attempt 1 is due at once
	for {
		if h.over(c) {
			return c.answer(h.why())
		}
		if h.dueNow {
			h.dueNow = false
			h.ended(c)
			h.due(c)
			continue
		}
		select {
		case <-h.timerC(c):
			h.armed, h.wake, h.reset = false, nil, nil
			h.ended(c)
			h.due(c)
		case <-h.wakeC():
			h.disarm()
			h.ended(c)
			h.due(c)
		case <-h.resetC():
			h.disarm()
			h.ended(c)
			h.due(c)
		case <-h.outgrownC(c):
			if resp, err, done := h.outgrown(c); done {
				return resp, err
			}
		case r := <-h.results:
			if resp, err, done := h.landed(c, r); done {
				return resp, err
			}
		case <-c.ctx.Done():
			h.cancelAll(c, context.Cause(c.ctx))
			c.last.abort(context.Cause(c.ctx))
			return nil, c.fail(nil)
		}
	}
}

// why is what, beside the last outcome, ended a request with nothing in
// flight: the body, when it outgrew its buffer and so no hedge could
// follow; nothing otherwise (the attempts' own errors, or a refusal, say
// it all).
func (h *hedger) why() error {
	if h.outgrew {
		return errBodyCommitted
	}
	return nil
}

// mayLaunch reports whether another hedge may still go.
func (h *hedger) mayLaunch(c *call) bool { return !h.closed && c.sent < c.plan.attempts }

// over reports whether nothing is in flight and nothing may follow: no
// hedge, and no resend waiting for a hold to end.
func (h *hedger) over(c *call) bool { return h.flying == 0 && h.resend == 0 && !h.mayLaunch(c) }

// timerC is the timer's channel while a next hedge or a resend may be
// due, nil (never ready) otherwise.
func (h *hedger) timerC(c *call) <-chan time.Time {
	if h.armed && (h.mayLaunch(c) || h.resend > 0) {
		return h.timer.C
	}
	return nil
}

// wakeC is the channel that ends the wait of an armed timer early (the
// answer a hold's probe waits for has come, a slot in line), nil (never
// ready) otherwise.
func (h *hedger) wakeC() <-chan struct{} {
	if h.armed {
		return h.wake
	}
	return nil
}

// resetC is the channel that ends the wait of an armed timer for a hold
// or a pace when the host's owner resets it, nil (never ready) otherwise.
func (h *hedger) resetC() <-chan struct{} {
	if h.armed {
		return h.reset
	}
	return nil
}

// begin reports a wait of d before attempt n, for why, decided at
// since, and times it from then until it ends (see ended); the wait timed
// before ends now, replaced.
func (h *hedger) begin(c *call, n int, d time.Duration, why retrytrace.WaitReason, since time.Time, g retrytrace.Gauges) {
	h.ended(c)
	c.waiting(n, d, why, g)
	h.waitWhy, h.waitSince, h.waitIdle = why, since, h.flying == 0
}

// gated waits out s, the gate's wait before attempt s.attempt: it reports
// and times it (see begin), or only times it, from its decision, when it
// goes on with one reported already (s.resumed), and arms the timer.
func (h *hedger) gated(c *call, s step) {
	if s.resumed {
		h.ended(c)
		h.waitWhy, h.waitSince, h.waitIdle = s.reason, s.decided(), h.flying == 0
	} else {
		h.begin(c, s.attempt, s.wait, s.reason, s.decided(), c.gauges(s))
	}
	h.arm(time.Until(s.at), s.wake, s.reset)
}

// ended counts how long the wait timed lasted, now that it is over: its
// timer fired, or what it waited for came or went, another replaced it,
// or the request is over.
func (h *hedger) ended(c *call) {
	if h.waitSince.IsZero() {
		return
	}
	c.waited(h.waitWhy, time.Since(h.waitSince), h.waitIdle)
	h.waitSince = time.Time{}
}

// outgrownC is the channel closed when the body outgrows its buffer,
// until that has been handled; nil (never ready) after.
func (h *hedger) outgrownC(c *call) <-chan struct{} {
	if h.outgrew {
		return nil
	}
	return c.body.outgrown()
}

// start readies the hedger for a request, reusing the channel and timer
// of the call's last request: finish left the timer stopped and drained,
// and the channel is kept only when nothing can still report on it.
func (h *hedger) start() {
	if h.results == nil {
		h.results = make(chan result, maxHedgeAttempts+1)
	}
	if h.timer == nil {
		h.timer = time.NewTimer(time.Hour)
		h.timer.Stop()
	}
}

// arm makes the next hedge due after d, or at notBefore if that is later,
// or when wake or reset (if not nil) is closed; one due now goes at the
// loop's next turn, with no timer.
func (h *hedger) arm(d time.Duration, wake, reset <-chan struct{}) {
	if d = max(d, time.Until(h.notBefore)); d <= 0 {
		h.dueNow = true
		return
	}
	h.timer.Reset(d)
	h.armed, h.wake, h.reset = true, wake, reset
}

// disarm stops the armed timer, whose tick, if it came already, is
// drained so that the next arm starts clean: under the timers of
// GODEBUG=asynctimerchan=1 a tick that came while no hedge could go waits
// in the channel, and would send the next hedge at once.
func (h *hedger) disarm() {
	if !h.timer.Stop() {
		select {
		case <-h.timer.C:
		default:
		}
	}
	h.armed, h.wake, h.reset = false, nil, nil
}

// due sends what is due: an attempt's transparent resend, at once and
// ungated, or the next hedge, if the gate lets it go now that the hedging
// delay (or a hold) has ended. Every attempt starts here. A caller that
// has gone gets none, even when the timer and the caller's end were
// ready together.
func (h *hedger) due(c *call) {
	if n := h.resend; n > 0 {
		switch s := c.admit(n, true); s.kind { // a resend waits out a hold too
		case stepWait:
			h.gated(c, s)
		case stepNoMore:
			h.resend = 0
			c.unresent()
			h.close(c, s)
		default:
			h.resend = 0
			h.launch(c, n, how{hedged: true, resend: true})
			if at := h.hedgeAt; !at.IsZero() && h.mayLaunch(c) && !h.armed && !h.dueNow {
				// A wait of the resend (a hold) took the timer: the next
				// hedge is due again when its delay ends, at once if it has.
				h.arm(time.Until(at), nil, nil)
			}
		}
		return
	}
	if c.ctx.Err() != nil || !h.mayLaunch(c) {
		return
	}
	n := c.sent + 1
	s := c.admit(n, false)
	switch s.kind {
	case stepWait:
		h.gated(c, s)
	case stepNoMore:
		h.close(c, s)
	default:
		h.launch(c, n, how{hedged: true})
		h.hedgeAt = time.Time{}
		if d := c.hedgeDelay(); h.mayLaunch(c) && d < tooLong {
			h.begin(c, n+1, d, retrytrace.WaitHedgeDelay, time.Now(), retrytrace.Gauges{})
			h.hedgeAt = time.Now().Add(d)
			h.arm(d, nil, nil)
		}
	}
}

// launch sends attempt n, going as w says, on its own goroutine: a new
// hedge, or the transparent resend of attempt n. It is routed to a backend no other
// attempt in flight uses, nor one that failed, when the Transport owns
// its dials. An attempt that cannot get its body reports that at once, as
// its result.
func (h *hedger) launch(c *call, n int, w how) {
	c.sent = max(c.sent, n)
	var busy [maxHedgeAttempts + 1 + len(call{}.failedAddrs)]string
	avoid := append(busy[:0], c.avoid()...)
	for _, f := range h.flights {
		if f.live && f.addr != "" {
			avoid = append(avoid, f.addr)
		}
	}
	a, err := c.newAttempt(n, w, avoid)
	if err == nil {
		if err := c.prepare(&a); err != nil {
			// Its result ends the request; nothing more starts meanwhile.
			c.unspend(n, w)
			h.closed = true
			h.flights[n] = flight{live: true}
			h.flying++
			h.results <- result{n: n, hedge: w.hedge(n), resend: w.resend, err: err, unprepared: true}
			return
		}
		c.start(&a, w)
	} else {
		c.attemptStarted(n, w)
	}
	h.flights[n] = flight{live: true, cancel: a.cancel, started: time.Now(), addr: a.addr}
	h.flying++
	if err != nil {
		c.unspend(n, w) // no body to send: it is not sent
		h.results <- c.unsent(n, w, err)
		return
	}
	if !w.resend {
		c.tried++
	}
	go a.fly(h.results)
}

// landed carries out what the call decides of an attempt's result. It
// reports done with the response or error for the caller once the
// request is decided. A panic of the base is raised again here, on the
// caller's goroutine, once every attempt is cancelled and closed.
func (h *hedger) landed(c *call, r result) (*http.Response, error, bool) {
	h.flights[r.n] = flight{}
	h.flying--
	if r.panicked != nil {
		h.cancelAll(c, errPanicked)
		panic(r.panicked)
	}
	if r.unprepared {
		h.cancelAll(c, errUnprepared)
		c.last.abort(errUnprepared)
		return nil, c.fail(r.err), true
	}
	s := c.after(&r)
	switch s.kind {
	case stepDeliver, stepFail:
		// The others are cut off before the answer leaves c.last: a
		// loser's base or a hook that panics meanwhile then finds it
		// still kept, and the request's end closes it.
		h.cancelAll(c, errHedgeLost)
		if s.kind == stepDeliver && s.attempt > 1 {
			c.hedgeWon()
		}
		resp, err := c.answer(nil)
		return resp, err, true
	case stepResend:
		h.resend = s.attempt
		h.due(c)
	case stepNoMore:
		h.close(c, s)
	default: // stepNext
		if s.wait > 0 {
			h.begin(c, s.attempt, s.wait, s.reason, s.decided(), c.gauges(s))
			h.notBefore = later(h.notBefore, s.at)
			// The next hedge, in line for a slot, goes no sooner than
			// the server's delay: it leaves the line, and gives back a
			// slot handed to it, as nothing is in flight for it while it
			// waits; it takes one anew once the delay is over.
			c.leaveLine()
		}
		h.arm(0, nil, nil)
	}
	return nil, nil, false
}

// close lets no further hedge start, and reports why if one could have;
// a hold that refused it is what the caller learns if nothing else comes.
func (h *hedger) close(c *call, s step) {
	if h.mayLaunch(c) {
		c.refused(c.sent+1, s.refusal, c.gauges(s))
	}
	if err := c.refusal(s); err != nil && c.whyUnsent == nil {
		c.whyUnsent = err
	}
	h.closed = true
	c.leaveLine() // no further hedge goes: its place in line, and a slot handed to it, go back
	if h.resend == 0 {
		h.ended(c) // no hedge waits any more
	}
}

// outgrown ends, at once, every attempt in flight but the one sending the
// body, which has outgrown its buffer: the others can never send it whole,
// and waiting for them would hold back the sender's outcome. Attempts that
// have answered already are not cut off: their results are handled first,
// and may decide the request. No further hedge starts; as no hedge may be
// due yet, none is reported refused.
func (h *hedger) outgrown(c *call) (*http.Response, error, bool) {
	h.outgrew = true
	// Only the loop receives, so a result counted here is there.
	for len(h.results) > 0 {
		if resp, err, done := h.landed(c, <-h.results); done {
			return resp, err, true
		}
	}
	h.closed = true
	sender := c.body.sender()
	for n, f := range h.flights {
		if f.live && n != sender && f.cancel != nil {
			f.cancel(errHedgeCut)
		}
	}
	return nil, nil, false
}

// finish stops the timer and, when a panic cut the request short,
// cancels and closes every attempt.
func (h *hedger) finish(c *call) {
	h.disarm()
	h.ended(c)
	h.dueNow = false
	if h.flying > 0 {
		h.cancelAll(c, errPanicked)
	}
}

// keepable is what a pooled call keeps of h for its next request: the
// channel, when nothing can still report on it, and the timer.
func (h *hedger) keepable() hedger {
	return hedger{results: h.results, timer: h.timer}
}

// hedgeDelay is the wait before the next hedge: the chosen quantile of
// recent latencies to the host once enough are known, else hedgingDelay;
// or, under a hedge budget with neither, the delay that spends the budget
// (see latencyRing.budgetDelay), and no hedge until the host's latencies
// are known.
func (c *call) hedgeDelay() time.Duration {
	p := c.plan.hedge
	switch {
	case p.HedgingDelayQuantile > 0:
		if d, ok := c.host.latency().quantile(p.HedgingDelayQuantile); ok {
			return d
		}
	case p.HedgingDelay == 0 && p.MaxExtraLoad > 0:
		if d, ok := c.host.latency().budgetDelay(p.MaxExtraLoad); ok {
			return d
		}
		return tooLong
	}
	return p.HedgingDelay
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
