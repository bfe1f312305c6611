package retryhttp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// After each attempt: the call judges its result, reports it, teaches the
// host what it showed, gathers the facts of the decision, asks it
// (decide.go), and keeps the result as the step says. The loops ask after
// once per result, and carry the step out.

// after takes attempt r's result, which the attempt has read already: it
// judges it, reads ahead the body of an answer about to be handed back
// when the rule asks for it, reports it to the hooks, teaches the host what it showed
// (unless the attempt is sent again under its number), gathers the facts,
// decides what follows, and keeps the result as that says (see take). The
// loops carry the step out and never touch the result again.
func (c *call) after(r *result) step {
	taken := false
	defer func() {
		if !taken { // a hook or the fleet panicked: the response goes with the request
			r.abort(errPanicked)
		}
	}()
	out := c.readAhead(r, c.judge(r))
	f, now, again := c.absorb(r, out)
	more := out == outRetryStatus || out == outNetwork || out == outNeverSent // a further attempt may follow
	if !again && more {
		// The host's budgets, now that they count this attempt.
		f.host = c.host.factsFor(c.rule, now, c.st.fleet, asks{budgets: true, capped: c.capped(),
			holds: c.pol.cfg.Hold != nil, maxServerDelay: f.maxServerDelay})
		if c.plan.retry != nil {
			f.schedule = c.plan.retry.Schedule().Duration(c.backoff)
		}
	}
	s := decide(&f, rand.Float64())
	s.at = now.Add(s.wait)
	c.take(r, out, s)
	taken = true
	return s
}

// absorb reports attempt r, whose outcome is out, to the hooks, and reads
// the request's facts at now with it; unless the attempt is sent again
// under its number (again), its host learns what it showed and gets its
// concurrency slot back.
func (c *call) absorb(r *result, out outcome) (f facts, now time.Time, again bool) {
	c.attemptDone(r, out)
	now = time.Now()
	f = c.facts(now)
	f.attempt = attemptFactsOf(r, out)
	if again = f.sendsAgain(); !again {
		if out != outCancelled { // cut off, as a hedge that lost: it showed nothing of its host
			c.learn(r, out, now)
		}
		c.readmit(r, out, now)
	}
	return f, now, again
}

// readmit gives back the concurrency slot of attempt r, whose outcome is
// out, at now, with what it showed of its host's load.
func (c *call) readmit(r *result, out outcome, now time.Time) {
	if c.admits&(1<<r.n) == 0 {
		return
	}
	c.admits &^= 1 << r.n
	c.host.admit.Load().release(now, r.latency, loadSign(r, out))
}

// loadSign is what attempt r, whose outcome is out, showed of its host's
// load. Lost work: a throttle or a 503, which is never a fast answer, or
// a timeout or a reset (a network error after the request may have
// reached the host), unless another request's cancellation closed the
// connection under it, which says nothing of the host. Another 5xx says
// nothing of the load (see admitSign). Any other answer is a sample of
// the host's latency.
func loadSign(r *result, out outcome) admitSign {
	switch {
	case throttle(r), out == outNetwork && !isLost(r.err),
		r.resp != nil && r.resp.StatusCode == http.StatusServiceUnavailable:
		return signLost
	case r.resp == nil:
		return signNone
	case r.resp.StatusCode >= http.StatusInternalServerError:
		return signError
	}
	return signAnswer
}

// attemptFactsOf is what attempt r, whose outcome is out, showed, as a decision
// reads it.
func attemptFactsOf(r *result, out outcome) attemptFacts {
	s := attemptFacts{n: r.n, resend: r.resend, out: out, delay: r.serverDelay, verdict: r.verdict}
	if r.resp != nil {
		s.status = r.resp.StatusCode
	}
	if r.err != nil {
		s.window = dialWindow(r.err)
		s.lost = out == outNetwork && isLost(r.err)
	}
	return s
}

// learn teaches the host what attempt r, whose outcome is out, showed at
// now, and counts what it did.
func (c *call) learn(r *result, out outcome, now time.Time) {
	if r.n > 1 && out != outDone {
		c.failed()
	}
	l := lesson{out: out, now: now, rule: c.rule, cfg: c.pol.cfg, fleet: c.st.fleet, hedged: c.plan.kind == planHedge,
		pacing: c.pol.pacing, sent: now.Add(-r.latency)}
	if c.slot == r.n {
		l.sent = c.slotAt // scheduled at the rate of then
	}
	if c.host.learn(r, l) {
		c.holdSet()
	}
	if r.n == c.probe.n {
		c.unprobe() // its outcome settled the hold, or could not
	}
}

// unresent makes the outcome of the try whose transparent resend a hold
// refused the one the caller gets, unless a later one is kept.
func (c *call) unresent() {
	if c.last.resp == nil && c.last.err == nil {
		c.last = c.resent
	}
	c.resent = result{}
}

// judge maps r to its outcome: the caller's classifier first, for an
// outcome that reached or may have reached the server while the caller
// still waits, then the rule's error table, then the server's own
// X-Should-Retry, then what the attempt read by the plan's lists.
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
		// The caller has gone since the attempt ended. A hedged
		// request's attempts are all cut off by it, whichever of them
		// the loop hears of first: each is cancelled, as those it cuts.
		if c.plan.kind == planHedge {
			return outCancelled
		}
		return outFatal
	case r.class == outNeverSent || ownError(r.err) || c.ctx.Err() != nil:
		return r.class
	}
	return judged(c.verdict(r), r, r.class)
}

// verdict asks the caller's classifier about r, then takes the verdict
// of its error code, then the server's own, while those before leave it to
// the policy (keeping the classifier's wait). A classifier that panics has
// its response closed, and the panic goes on up.
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
	return v.or(r.coded).or(r.server)
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
