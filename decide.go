package retryhttp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// step is what follows an attempt, or what the gate says before one: the
// one decision both loops carry out. They differ only in how they wait
// (the retry loop sleeps, the hedge loop sets a timer) and in what runs
// beside them.
type step struct {
	kind stepKind
	// attempt is the attempt the step is about: the one that follows a
	// wait or a resend, or the one a refusal keeps from being made.
	attempt int
	wait    time.Duration // before that attempt
	reason  WaitReason    // why wait is as long as it is
	refusal RefusalReason // why no further attempt goes; "" when none was due
	backoff int           // the retry policy's counter once the wait is over
	// at is when the wait ends: the time of the decision plus wait.
	at time.Time
	// resp and err are the request's answer, for stepDeliver and
	// stepFail: the response (with a nil error, whatever its status),
	// or the error; for the stepNoMore of a gate, err says why the
	// attempt was refused (a hold's HoldError).
	resp *http.Response
	err  error
}

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

// after takes attempt r's result, which the attempt has read already: it
// judges it, reports it to the hooks, learns from it what the host showed
// (unless the attempt is sent again under its number), decides what
// follows, and keeps the result as that says (see take). The loops carry
// the step out and never touch the result again.
func (c *call) after(r *result) step {
	taken := false
	defer func() {
		if !taken { // a hook or the fleet panicked: the response goes with the request
			r.abort(errPanicked)
		}
	}()
	out := c.judge(r)
	c.attemptDone(r, out)
	now := time.Now()
	if !c.sendsAgain(r, out) {
		c.learn(r, out, now)
	}
	s := c.decide(r, out, now, rand.Float64())
	s.at = now.Add(s.wait)
	c.take(r, out, s)
	taken = true
	if s.kind == stepDeliver || s.kind == stepFail {
		s.resp, s.err = c.answer(nil)
	}
	return s
}

// judge maps r to its outcome: the caller's classifier first, for an
// outcome that reached or may have reached the server while the caller
// still waits, then the server's own X-Should-Retry, then what the
// attempt read by the plan's lists.
func (c *call) judge(r *result) outcome {
	switch {
	case isNoBody(r.err) || r.ctx != nil && isNoBody(context.Cause(r.ctx)):
		// It had no body to send, or lost it: for a hedge, cut off
		// because another attempt sends the body, or GetBody failed.
		if c.plan.kind == planHedge {
			return outCancelled
		}
		return outNoBody
	case r.err != nil && c.ctx.Err() != nil:
		return outFatal // the caller has gone since the attempt ended
	case r.class == outNeverSent || ownError(r.err) || c.ctx.Err() != nil:
		return r.class
	}
	return judged(c.verdict(r), r, r.class)
}

// verdict asks the caller's classifier about r, then takes the server's
// own verdict when the classifier leaves it to the policy (keeping the
// classifier's wait). A classifier that panics has its response closed,
// and the panic goes on up.
func (c *call) verdict(r *result) Verdict {
	v := UsePolicy
	if f := c.classifier; f != nil {
		answered := false
		defer func() {
			if !answered {
				r.abort(errPanicked)
			}
		}()
		v = f(r.n, r.resp, r.err)
		answered = true
	}
	return v.or(r.server)
}

// take keeps r, whose outcome is out and whose step is s, as what the
// caller may get: the latest outcome replaces the one kept, and is read
// ahead when the request goes on, so that its connection is free during
// the wait; an attempt that had no body to send is never handed back,
// only why it could not be sent; an attempt sent again leaves its error
// for its resend's.
func (c *call) take(r *result, out outcome, s step) {
	switch {
	case s.kind == stepResend:
		c.resent = *r
		c.spare = false
		c.transparentRetry()
		return
	case out == outNoBody || out == outCancelled:
		switch {
		case r.resend && r.n == c.resent.n && r.err != nil:
			// The resend's failure says the most: why attempt n was
			// not sent, then why it was not sent again.
			c.whyUnsent = resendError(c.resent.err, r.err)
		case c.whyUnsent == nil:
			c.whyUnsent = r.err
		}
		r.abort(errBodyCommitted)
		return
	}
	if r.addr != "" && (r.err != nil || r.resp.StatusCode >= 500) && c.failedAt < len(c.failedAddrs) {
		c.failedAddrs[c.failedAt] = r.addr
		c.failedAt++
	}
	c.last.abort(errSuperseded)
	c.last = *r
	if s.kind == stepNext || s.kind == stepNoMore && c.plan.kind == planHedge {
		c.last.keep()
	}
}

// decide is what follows attempt r, whose outcome is out, at now; rnd, in
// [0, 1), draws the jitter of a server's delay. It reads the call's
// state and changes nothing: the loops carry the step out.
func (c *call) decide(r *result, out outcome, now time.Time, rnd float64) step {
	next := c.sent + 1
	switch out {
	case outDone:
		return step{kind: stepDeliver, attempt: r.n}
	case outFatal:
		return step{kind: stepFail, attempt: r.n}
	case outNoBody, outCancelled:
		return step{kind: stepNoMore, attempt: next}
	}
	if c.sendsAgain(r, out) {
		return c.again(r, out, now)
	}
	switch {
	case c.sent >= c.plan.attempts || !c.repeatable(r, out):
		return step{kind: stepNoMore, attempt: next}
	case r.serverDelay.Kind == delayStop && !r.verdict.timed():
		return noMore(next, RefusedServerDelay) // unless a verdict's wait replaces the server's
	}
	if why, ok := c.allowed(); !ok {
		return noMore(next, why)
	}
	s := c.waitFor(r, out, rnd)
	switch {
	case s.refusal != "":
		return noMore(next, s.refusal)
	case !c.fits(s.wait, now):
		return noMore(next, RefusedDeadline)
	}
	s.kind, s.attempt = stepNext, next
	return s
}

// sendsAgain reports whether attempt r, whose outcome is out, is sent
// again under its number: the transparent resend, once per request, of
// one that never reached the server or lost its connection to another
// request's cancellation; or, under any plan but hedging, for a request
// that waits for ready, the attempt a dial backoff window refused
// (under hedging that hedge is spent, and the next one waits).
func (c *call) sendsAgain(r *result, out outcome) bool {
	return c.spare && c.resendable(r, out) ||
		c.plan.kind != planHedge && !r.resend && r.dialWindow() > 0 && c.waitsForReady() && c.ctx.Err() == nil
}

// again is the step of an attempt sent again under its number: at once,
// or when its dial backoff window ends, if that is within the deadline.
func (c *call) again(r *result, out outcome, now time.Time) step {
	if c.spare && c.resendable(r, out) {
		return step{kind: stepResend, attempt: r.n}
	}
	w := r.dialWindow()
	if !c.fits(w, now) {
		return noMore(r.n, RefusedDeadline)
	}
	return step{kind: stepReady, attempt: r.n, wait: w, reason: WaitDialBackoff}
}

// waitFor is the wait before the next attempt after r, whose outcome is
// out, with its reason and the retry counter after it; or a refusal, when
// the server asks for longer than the policy waits. A wait the caller's
// verdict asks for comes first, then the server's delay signals; without
// either, a retry waits its backoff (at least a second after a 429) and a
// hedge goes at once.
func (c *call) waitFor(r *result, out outcome, rnd float64) step {
	if d, ok := r.verdict.wait(); ok {
		return c.serverWait(d, WaitClassify, c.backoff+1, rnd)
	}
	switch r.serverDelay.Kind {
	case delayPushback:
		return c.serverWait(r.serverDelay.Wait, WaitPushback, 0, rnd) // A6: backoff restarts after a pushback
	case delayRetryAfter:
		return c.serverWait(r.serverDelay.Wait, WaitRetryAfter, c.backoff+1, rnd)
	case delayHeader:
		return c.serverWait(r.serverDelay.Wait, WaitServerDelay, c.backoff+1, rnd)
	}
	w := r.dialWindow()
	if c.plan.kind == planHedge {
		if w > 0 && c.waitsForReady() {
			return step{wait: w, reason: WaitDialBackoff}
		}
		return step{reason: WaitHedgeDelay} // at once: the answer was non-fatal
	}
	// A caller's own Backoff may give a negative wait: none.
	s := step{wait: max(c.plan.retry.Schedule().Duration(c.backoff), 0), reason: WaitBackoff, backoff: c.backoff + 1}
	if r.resp != nil && r.resp.StatusCode == http.StatusTooManyRequests {
		// A rate limit with no delay signal is not answered faster
		// than a person would: at least a second, jittered up.
		if floor := jitterServerDelay(time.Second, rnd); floor > s.wait {
			s.wait, s.reason = floor, WaitRateLimited
		}
	}
	if w >= s.wait && c.waitsForReady() {
		s.wait, s.reason = w, WaitDialBackoff
	}
	return s
}

// serverWait is the step of a wait of d that the server (or the caller's
// verdict) asks for, with a little positive jitter, rnd drawing it; a
// refusal when it asks for longer than the policy allows, or for a delay
// too large to represent.
func (c *call) serverWait(d time.Duration, why WaitReason, backoff int, rnd float64) step {
	if d >= tooLong || d > c.pol.cfg.ServerDelayLimit() {
		return step{refusal: RefusedServerDelay}
	}
	return step{wait: jitterServerDelay(d, rnd), reason: why, backoff: backoff}
}

// fits reports whether a wait of d from now ends before the caller's
// deadline. A wait that would end at or past it is not started: the last
// outcome is worth more to the caller than an error at the deadline.
func (c *call) fits(d time.Duration, now time.Time) bool {
	dl, ok := c.ctx.Deadline()
	return !ok || now.Add(d).Before(dl)
}

// resendable reports whether attempt r, whose outcome is out, may be
// resent at once, transparently: one that never reached the server, or,
// under a retry or hedging rule, an idempotent one whose connection
// another request's cancellation closed (see lostError), as net/http
// itself resends such a request on a connection it reused. Not when the
// caller's context has ended, nor when the dialer refused it for its
// address's backoff window, which an immediate resend would only meet
// again, nor when the body can no longer be replayed.
func (c *call) resendable(r *result, out outcome) bool {
	switch {
	case out == outNeverSent:
	case out == outNetwork && c.plan.kind != planNone && c.plan.idem && isLost(r.err):
	default:
		return false
	}
	return c.ctx.Err() == nil && !errors.Is(r.err, ErrDialBackoff) && c.body.replayable()
}

// repeatable applies the idempotency rules to attempt r, whose outcome is
// out: a request that is not idempotent is sent again only when the
// server surely did not act on it (never sent, 429, a verdict saying so)
// or explicitly asked for a retry (pushback).
func (c *call) repeatable(r *result, out outcome) bool {
	switch {
	case c.plan.idem || out == outNeverSent || r.unprocessed():
		return true
	case out == outRetryStatus:
		return r.resp.StatusCode == http.StatusTooManyRequests || r.serverDelay.Kind == delayPushback
	}
	return false
}

// resendError is the error of a transparent resend that could not get its
// body (GetBody failed): it keeps the error that made the first try
// unsendable, which is what the caller most needs to know. Any other
// outcome of the resend stands alone.
func resendError(first, resend error) error {
	if first == nil || !isNoBody(resend) {
		return resend
	}
	return fmt.Errorf("%w; its transparent resend: %w", first, resend)
}

// isLost reports whether err is a connection lost to another request's
// cancellation (see lostError).
func isLost(err error) bool {
	var lost *lostError
	return errors.As(err, &lost)
}

// isNoBody reports whether err says an attempt had no body to send: the
// body cannot be replayed (it outgrew its buffer, or GetBody failed).
func isNoBody(err error) bool {
	return err != nil && errors.Is(err, errBodyCommitted)
}

// dialWindow returns how long the address of an attempt refused by its
// dialer's backoff window stays closed, or 0 for any other outcome.
func (r *result) dialWindow() time.Duration {
	if r.err == nil {
		return 0 // the common case, without the allocation of errors.As
	}
	var dbe *DialBackoffError
	if errors.As(r.err, &dbe) {
		return max(dbe.Remaining, time.Nanosecond)
	}
	return 0
}

// maxServerDelayJitter caps the jitter that jitterServerDelay adds.
const maxServerDelayJitter = time.Second

// jitterServerDelay lengthens a server-directed delay d by
// r * min(d/10, 1s), r being a random value in [0, 1).
//
// A server that tells a whole herd of clients "come back in 5s" would get
// them all back in the same instant; spreading the returns over up to a
// tenth of the delay avoids that, while the jitter is only ever added, so
// the client never comes back earlier than the server asked. The spread is
// capped at one second, the resolution of Retry-After's delay-seconds, so a
// long delay is not stretched by much more than the server could have meant.
// A delay of 0 (retry at once) stays exactly 0, and a negative d, which
// parseServerDelay never gives, becomes 0. The result saturates at tooLong
// instead of overflowing; an r outside [0, 1] (or NaN) is clamped into it.
func jitterServerDelay(d time.Duration, r float64) time.Duration {
	if d <= 0 {
		return max(d, 0)
	}
	if !(r > 0) { // also NaN
		return d
	}
	r = min(r, 1)
	spread := min(d/10, maxServerDelayJitter)
	j := time.Duration(r * float64(spread)) // exact enough: spread <= 1e9 ns
	if d > tooLong-j {
		return tooLong
	}
	return d + j
}
