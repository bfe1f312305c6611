package retryhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/policy"
)

// errHedgeLost cancels the attempts that lost to another.
var errHedgeLost = errors.New("retryhttp: another hedge won")

// errHedgeCut cancels the attempts that cannot send a body which outgrew
// its buffer under another attempt. It matches errBodyCommitted, yet is
// distinct from a body reader's own errBodyCommitted: net/http may hand it
// to another request (see lostError), which must take it for a lost
// connection, not for the end of its own body.
var errHedgeCut = fmt.Errorf("%w: another attempt is sending it", errBodyCommitted)

// maxHedgeAttempts bounds the attempts of a hedged request, as gRPC bounds
// maxAttempts: a policy's larger MaxAttempts counts as this many. Every
// attempt of a hedged request may be in flight at once, so the bound keeps
// one request from flooding its host and its memory from growing with a
// policy's figure. Retries, one at a time, have no such bound.
const maxHedgeAttempts = 5

// hedger is the state of one hedged request. Only the goroutine that runs
// the hedge loop touches it: the caller's, or the one the hedging delay
// starts while the caller's goroutine is still sending attempt 1.
// Attempts report through results, which has room for every attempt so
// that none ever blocks on it.
type hedger struct {
	c       *call
	p       *policy.Hedge
	max     int // attempts allowed: MaxAttempts, up to maxHedgeAttempts
	results chan result
	flights [maxHedgeAttempts + 1]flight // by attempt number
	flying  int                          // attempts in flight
	sent    int                          // attempts started, transparent resends not counted
	tried   int                          // of them, those that went to the base
	last    *result                      // the latest non-fatal outcome, kept for the caller
	stopped bool                         // no further hedge may start
	spare   bool                         // the transparent resend is still unused
	resent  result                       // the outcome that used it, never sent
	lost    error                        // why an attempt got no body, for giveUp
	// notBefore is when the server's pushback lets the next hedge go; a
	// non-fatal status without pushback does not send it any earlier.
	notBefore time.Time
}

// flight is an attempt in flight.
type flight struct {
	live    bool
	cancel  context.CancelCauseFunc
	started time.Time
	addr    string // the backend it was routed to, if any
}

// hedge runs a hedged request: attempt 1 at once, each next one after the
// hedging delay (at once after a non-fatal status), until one succeeds or
// fails fatally; then every other attempt is cancelled and closed. It
// returns only when no attempt is running any more.
//
// Attempt 1 is sent on the caller's goroutine. The hedging machinery (the
// loop's goroutine, its channels and timer) starts only if the delay ends
// first; a request answered within it costs none of that.
func (c *call) hedge() (*http.Response, error) {
	h := &c.hedger
	h.c, h.p, h.spare = c, c.plan.hedge, true
	h.max = min(h.p.MaxAttempts, maxHedgeAttempts)
	d := h.delay()
	if d <= 0 {
		return h.run(nil, 0, 0) // every attempt at once
	}
	a, err := h.prepare(1, false)
	if err != nil {
		r := h.unsent(1, false, err)
		return h.run(&r, c.classify(&r), d)
	}
	h.wait(d)
	ho := &handoff{h: h}
	start := time.Now()
	timer := time.AfterFunc(d, ho.takeOver)
	r := a.send()
	if ho.answer() {
		timer.Stop()
		out := c.classify(&r)
		if out == outDone || out == outFatal || out == outPanicked {
			// Decided: the loop, its channel and its timer are not
			// needed.
			if resp, done, err := h.handle(r, out, nil); done {
				return resp, err
			}
			return h.giveUp()
		}
		// The delay has not ended: what is left of it still holds the
		// next hedge back, unless attempt 1's outcome sends it sooner.
		return h.run(&r, out, d-time.Since(start))
	}
	h.results <- r
	f := <-ho.final
	return f.resp, f.err
}

// run is the hedge loop. first, when set, is attempt 1's answer, which
// came before the loop started, and out its outcome; due is the wait
// before the next hedge.
func (h *hedger) run(first *result, out outcome, due time.Duration) (*http.Response, error) {
	c := h.c
	if h.results == nil {
		h.results = make(chan result, h.max+1)
	}
	if h.sent == 0 {
		h.launch(1, false)
		due = h.delay()
		h.wait(due)
	}
	outgrown := c.body.outgrown()
	timer := time.NewTimer(due)
	defer timer.Stop()
	if first != nil {
		if resp, done, err := h.handle(*first, out, timer); done {
			return resp, err
		}
	}
	for {
		var next <-chan time.Time
		if !h.stopped && h.sent < h.max {
			next = timer.C
		}
		if h.flying == 0 && next == nil {
			return h.giveUp()
		}
		select {
		case <-next:
			// The timer and the caller's end may be ready together:
			// no hedge starts for a caller that has gone.
			if c.ctx.Err() == nil && h.gate() {
				h.launch(h.sent+1, false)
				d := h.delay()
				h.wait(d)
				timer.Reset(d)
			}
		case <-outgrown:
			outgrown = nil
			if resp, done, err := h.bodyOutgrown(timer); done {
				return resp, err
			}
		case r := <-h.results:
			if resp, done, err := h.handle(r, c.classify(&r), timer); done {
				return resp, err
			}
		case <-c.ctx.Done():
			cause := context.Cause(c.ctx)
			h.cancelAll(cause)
			return nil, &Error{Attempts: h.tried, Err: cause}
		}
	}
}

// prepare makes attempt n ready and records it in flight: routed to a
// backend no other attempt in flight uses, when the Transport owns its
// dials. It fails when the body cannot be sent again.
func (h *hedger) prepare(n int, resend bool) (attempt, error) {
	c := h.c
	h.sent = max(h.sent, n)
	c.attemptStarted(n, n > 1, resend)
	var busy [maxHedgeAttempts + 1]string
	list := busy[:0]
	for _, f := range h.flights {
		if f.live && f.addr != "" {
			list = append(list, f.addr)
		}
	}
	a, err := c.newAttempt(n, true, resend, list)
	if err != nil {
		return a, err
	}
	if !resend {
		h.tried++
	}
	h.flights[n] = flight{live: true, cancel: a.cancel, started: time.Now(), addr: a.addr}
	h.flying++
	return a, nil
}

// launch sends attempt n on its own goroutine, which ends when the
// attempt has its response headers or its error. resend says it sends
// attempt n again, transparently. An attempt that cannot get its body
// reports that at once, as its result.
func (h *hedger) launch(n int, resend bool) {
	a, err := h.prepare(n, resend)
	if err != nil {
		h.results <- h.unsent(n, resend, err)
		return
	}
	go func() { h.results <- a.send() }()
}

// unsent is the result of attempt n, which could not get its body, kept in
// flight until it is handled like any other.
func (h *hedger) unsent(n int, resend bool, err error) result {
	h.flights[n] = flight{live: true}
	h.flying++
	return result{n: n, hedge: n > 1, resend: resend, err: err, ctx: h.c.ctx}
}

// landed takes attempt n out of flight.
func (h *hedger) landed(n int) flight {
	f := h.flights[n]
	if f.live {
		h.flights[n] = flight{}
		h.flying--
	}
	return f
}

// gate decides whether the next hedge may start: the host's budget and the
// body must allow it.
func (h *hedger) gate() bool {
	if why, ok := h.c.gate(); !ok {
		h.stop(why)
		return false
	}
	return true
}

// stop lets no further hedge start, and reports why if one could have.
func (h *hedger) stop(why RefusalReason) {
	if !h.stopped && h.sent < h.max {
		h.c.refused(h.sent+1, why)
	}
	h.stopped = true
}

// bodyOutgrown ends, at once, every attempt in flight but the one sending the
// body, which has outgrown its buffer: the others can never send it whole,
// and waiting for them would hold back the sender's outcome. Attempts that
// have answered already are not cut off: their results are handled first,
// and may decide the request, as handle reports. No further hedge starts;
// as no hedge may be due yet, none is reported refused.
func (h *hedger) bodyOutgrown(timer *time.Timer) (*http.Response, bool, error) {
	// Only the hedge loop receives, so a result counted here is there.
	for len(h.results) > 0 {
		r := <-h.results
		if resp, done, err := h.handle(r, h.c.classify(&r), timer); done {
			return resp, true, err
		}
	}
	h.stopped = true
	sender := h.c.body.sender()
	for n, f := range h.flights {
		if f.live && n != sender && f.cancel != nil {
			f.cancel(errHedgeCut)
		}
	}
	return nil, false, nil
}

// wait reports the delay before the next hedge, when a next hedge may
// follow.
func (h *hedger) wait(d time.Duration) {
	if !h.stopped && h.sent < h.max {
		h.c.waiting(h.sent+1, d, WaitHedgeDelay, false)
	}
}

// delay is the wait before the next hedge: the chosen quantile of recent
// latencies to the host once enough are known, else hedgingDelay.
func (h *hedger) delay() time.Duration {
	if q := h.p.HedgingDelayQuantile; q > 0 {
		if d, ok := h.c.latency().quantile(q); ok {
			return d
		}
	}
	return h.p.HedgingDelay
}

// handle takes one attempt's result, whose outcome is out. It reports
// done with the response or error for the caller once the request is
// decided. timer holds the next hedge back; it is nil when out decides
// the request.
func (h *hedger) handle(r result, out outcome, timer *time.Timer) (*http.Response, bool, error) {
	h.landed(r.n)
	c := h.c
	if h.spare && c.mayResend(&r, out) {
		h.spare = false
		c.attemptDone(&r, out)
		c.transparentRetry()
		h.resent = r
		h.launch(r.n, true)
		return nil, false, nil
	}
	if errors.Is(r.err, errBodyCommitted) || errors.Is(context.Cause(r.ctx), errBodyCommitted) {
		// This attempt got no body, or lost it: the body outgrew its
		// buffer under another attempt, which goes on, or GetBody
		// failed. It could never have been sent whole, and if it
		// answered as bodyOutgrown cancelled it, its answer is aborted too.
		// No further hedge starts; gate would refuse it anyway.
		h.stopped = true
		switch {
		case r.n == h.resent.n && r.err != nil:
			// The resend's failure says the most: why attempt n
			// was not sent, then why it was not sent again.
			h.lost = resendError(h.resent.err, r.err)
		case h.lost == nil:
			h.lost = r.err
		}
		c.attemptDone(&r, outCancelled)
		r.abort(errBodyCommitted)
		return nil, false, nil
	}
	c.attemptDone(&r, out)
	c.readDelay(&r, out)
	c.account(&r, out)
	if r.resp != nil {
		c.latency().add(r.latency)
	}
	switch out {
	case outDone:
		h.cancelAll(errHedgeLost)
		if r.n > 1 {
			c.hedgeWon()
		}
		return c.deliver(&r), true, nil
	case outFatal:
		h.cancelAll(errHedgeLost)
		return nil, true, c.fail(r.err, h.tried)
	case outPanicked:
		r.abort(errClassifyPanicked)
		h.cancelAll(errClassifyPanicked)
		return nil, true, c.fail(errClassifyPanicked, h.tried)
	}
	h.keep(r)
	h.nonFatal(&r, timer)
	return nil, false, nil
}

// nonFatal sets when the next hedge goes after a non-fatal outcome: at
// once, or when the server's pushback says, or never. When no hedge can
// follow anyway, there is nothing to set or report.
func (h *hedger) nonFatal(r *result, timer *time.Timer) {
	if h.stopped || h.sent >= h.max {
		return
	}
	sd := r.delay
	switch sd.Kind {
	case delayStop:
		h.stop(RefusedServerDelay)
	case delayPushback, delayRetryAfter, delayHeader:
		// The deadline is checked against the wait with its jitter, as
		// in the retry loop.
		wait, why, ok := h.c.serverWait(sd)
		switch {
		case !ok:
			h.stop(RefusedServerDelay)
		case !h.c.fits(wait):
			h.stop(RefusedDeadline)
		default:
			h.c.waiting(h.sent+1, wait, why, h.flying == 0)
			h.notBefore = time.Now().Add(wait)
			timer.Reset(wait)
		}
	default:
		if w := dialWindow(r); w > 0 && h.c.waitForReady() {
			// Refused by its address's dial backoff window: a request
			// that waits for ready sends the next hedge once it ends.
			if !h.c.fits(w) {
				h.stop(RefusedDeadline)
				return
			}
			h.c.waiting(h.sent+1, w, WaitDialBackoff, h.flying == 0)
			h.notBefore = time.Now().Add(w)
		}
		timer.Reset(max(time.Until(h.notBefore), 0))
	}
}

// keep makes r the outcome handed back if every attempt fails, closing
// the one it replaces.
func (h *hedger) keep(r result) {
	if h.last != nil {
		h.last.abort(errHedgeLost)
	}
	h.last = &r
}

// giveUp ends a request whose attempts all failed: the last non-fatal
// outcome goes back, or, if none had a body to send, why.
func (h *hedger) giveUp() (*http.Response, error) {
	if h.last == nil {
		lost := h.lost
		if lost == nil {
			lost = errBodyCommitted
		}
		return nil, h.c.fail(lost, h.tried)
	}
	return h.c.giveUp(h.last, h.tried)
}

// cancelAll cancels every attempt still in flight and waits for each to
// end, closing what it got: after it returns, no attempt of the request is
// running.
func (h *hedger) cancelAll(cause error) {
	if h.flying > 0 {
		for _, f := range h.flights {
			if f.live && f.cancel != nil {
				f.cancel(cause)
			}
		}
		tail := h.delay()
		for h.flying > 0 {
			r := <-h.results
			f := h.landed(r.n)
			if took := time.Since(f.started); took >= tail {
				// Cut off past the delay, it was as slow as the
				// tail that hedges are sent for, and the time it
				// took, a lower bound, counts there. One cut off
				// sooner tells nothing of the tail: counted, it
				// would drag the delay down and send more hedges.
				h.c.latency().add(took)
			}
			h.c.attemptDone(&r, outCancelled)
			r.discard()
		}
	}
	if h.last != nil {
		// Superseded by the winner or by the caller's end.
		h.last.abort(cause)
		h.last = nil
	}
}
