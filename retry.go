package retryhttp

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/policy"
)

// retry is the retry loop: send, classify, and either hand the outcome
// back or wait and send again. Without a retry policy it sends once, and
// resends once what never reached the server.
func (c *call) retry() (*http.Response, error) {
	p := c.plan.retry
	backoff := 0 // the policy's retry counter; pushback restarts it
	spare := true
	var ready *attempt // the next attempt, made ready before the wait
	// The addresses that failed, which retries avoid when the host has
	// others; a few are enough to remember.
	var failedAt [4]string
	failed := failedAt[:0]
	for n := 1; ; n++ {
		r, out := c.send(n, ready, failed)
		ready = nil
		if spare && c.mayResend(&r, out) {
			spare = false
			r, out = c.resendTransparently(r, failed)
		}
		if w := dialWindow(&r); w > 0 && c.waitForReady() && !r.resend && c.ctx.Err() == nil {
			if !c.fits(w) {
				c.refused(n, RefusedDeadline)
				return c.giveUp(&r, n)
			}
			var err error
			if r, out, err = c.waitReady(n, w, failed); err != nil {
				return nil, &Error{Attempts: n, Err: err}
			}
		}
		c.readDelay(&r, out)
		c.account(&r, out)
		switch out {
		case outDone:
			return c.deliver(&r), nil
		case outFatal:
			return nil, c.fail(r.err, n)
		case outPanicked:
			r.abort(errClassifyPanicked)
			return nil, c.fail(errClassifyPanicked, n)
		}
		d := c.next(p, out, &r, backoff)
		if d.stop {
			if d.refusal != "" {
				c.refused(n+1, d.refusal)
			}
			return c.giveUp(&r, n)
		}
		backoff = d.backoff
		if r.addr != "" && len(failed) < cap(failed) && (out == outNetwork || r.resp != nil && r.resp.StatusCode >= 500) {
			failed = append(failed, r.addr)
		}
		// The last outcome is kept until the next attempt has its
		// body: when GetBody fails, it is what the caller gets.
		a, err := c.newAttempt(n+1, false, false, failed)
		if err != nil {
			return c.noBody(&r, err)
		}
		ready = &a
		r.discard()
		c.waiting(n+1, d.wait, d.reason, true)
		if err := c.sleep(d.wait); err != nil {
			a.abandon()
			return nil, &Error{Attempts: n, Err: err}
		}
	}
}

// resendTransparently resends r's attempt, which never reached the server
// or lost its connection to another request's cancellation: once, at
// once, without spending an attempt or a token. The resend's outcome
// keeps why the first was not sent when it could not get its body.
func (c *call) resendTransparently(r result, avoid []string) (result, outcome) {
	c.transparentRetry()
	first := r.err
	r, out := c.resend(r.n, avoid)
	r.err = resendError(first, r.err)
	return r, out
}

// waitReady waits out w, the dial backoff window that refused attempt n
// without touching the network, and makes the attempt again: a request
// that waits for ready does so without spending an attempt, within its
// deadline, which the caller has checked. A transparent resend that met
// the window is not made again: the failure before it opened the window
// and is the attempt. Any other request fails fast, as a gRPC call does
// on a channel in transient failure: the refusal is an attempt that never
// reached the server, and the next one waits the policy's backoff, not
// the window. The error is the caller's context's cause, when it ended.
func (c *call) waitReady(n int, w time.Duration, avoid []string) (result, outcome, error) {
	c.waiting(n, w, WaitDialBackoff, true)
	if err := c.sleep(w); err != nil {
		return result{}, outFatal, err
	}
	r, out := c.resend(n, avoid)
	return r, out, nil
}

// noBody ends a request whose next attempt could not get its body (GetBody
// failed) with the last outcome r, kept for that: its response, or its
// error together with the body's.
func (c *call) noBody(r *result, err error) (*http.Response, error) {
	c.refused(r.n+1, RefusedBuffer)
	if r.resp == nil {
		r.err = fmt.Errorf("%w; no body for attempt %d: %w", r.err, r.n+1, err)
	}
	return c.giveUp(r, r.n)
}

// send sends attempt n, made ready already or else now to an address not
// in avoid, and classifies its result.
func (c *call) send(n int, ready *attempt, avoid []string) (result, outcome) {
	c.attemptStarted(n, false, false)
	if ready == nil {
		a, err := c.newAttempt(n, false, false, avoid)
		if err != nil {
			return c.unsent(n, false, err)
		}
		ready = &a
	}
	r := ready.send()
	out := c.classify(&r)
	c.attemptDone(&r, out)
	return r, out
}

// resend sends attempt n again, transparently, and classifies its result.
func (c *call) resend(n int, avoid []string) (result, outcome) {
	c.attemptStarted(n, false, true)
	a, err := c.newAttempt(n, false, true, avoid)
	if err != nil {
		return c.unsent(n, true, err)
	}
	r := a.send()
	out := c.classify(&r)
	c.attemptDone(&r, out)
	return r, out
}

// unsent is the outcome of an attempt that could not get its body.
func (c *call) unsent(n int, resend bool, err error) (result, outcome) {
	r := result{n: n, resend: resend, err: err, ctx: c.ctx}
	out := c.classify(&r)
	c.attemptDone(&r, out)
	return r, out
}

// decision is what follows an attempt that did not end the request: a
// wait before the next one, or a stop.
type decision struct {
	stop    bool
	refusal RefusalReason // why it stopped, when a limit stopped it
	wait    time.Duration
	reason  WaitReason
	backoff int // the policy's retry counter once the wait is over
}

// next decides whether attempt r.n+1 may start and how long to wait for
// it. backoff is the policy's retry counter.
func (c *call) next(p *policy.Retry, out outcome, r *result, backoff int) decision {
	sd := r.delay
	switch {
	case p == nil || r.n >= p.MaxAttempts || !c.mayRepeat(out, r):
		return decision{stop: true}
	case sd.Kind == delayStop:
		return decision{stop: true, refusal: RefusedServerDelay}
	}
	if why, ok := c.gate(); !ok {
		return decision{stop: true, refusal: why}
	}
	d := decision{backoff: backoff + 1}
	switch sd.Kind {
	case delayPushback, delayRetryAfter, delayHeader:
		wait, why, ok := c.serverWait(sd)
		if !ok {
			return decision{stop: true, refusal: RefusedServerDelay}
		}
		d.wait, d.reason = wait, why
		if sd.Kind == delayPushback {
			d.backoff = 0 // A6: backoff restarts after a pushback
		}
	default:
		// A caller's own Backoff may give a negative wait: none.
		d.wait, d.reason = max(p.Schedule().Duration(backoff), 0), WaitBackoff
		if w := dialWindow(r); w >= d.wait && c.waitForReady() {
			d.wait, d.reason = w, WaitDialBackoff
		}
	}
	if !c.fits(d.wait) {
		return decision{stop: true, refusal: RefusedDeadline}
	}
	return d
}

// dialWindow returns how long the address of an attempt refused by its
// dialer's backoff window stays closed, or 0 for any other outcome.
func dialWindow(r *result) time.Duration {
	if r.err == nil {
		return 0 // the common case, without the allocation of errors.As
	}
	var dbe *DialBackoffError
	if errors.As(r.err, &dbe) {
		return max(dbe.Remaining, time.Nanosecond)
	}
	return 0
}
