package retryhttp

import (
	"fmt"
	"net/http"

	"github.com/retryhttp/retryhttp/retrytrace"
)

// retry is the retry loop: one attempt at a time, each let go by the gate
// and followed by what the decision after it says, the waits slept on the
// caller's goroutine. Without a retry policy it sends once, and resends
// once what never reached the server.
func (c *call) retry() (*http.Response, error) {
	// ready is the next attempt, made ready (its body in hand) before the
	// wait; once sent it is zero, and letting it go is a no-op.
	var ready attempt
	defer ready.abandon(errCallDone)
	for n := 1; ; n++ {
		if s := c.await(n, false); s.kind != stepSend {
			if c.ctx.Err() != nil { // the caller has gone during a wait
				return nil, c.fail(nil)
			}
			c.refused(s.attempt, s.refusal, c.gauges(s))
			return c.answer(c.refusal(s)) // when there is nothing else to hand back
		}
		if c.ctx.Err() != nil { // the caller has gone: nothing more is sent, nor counted as sent
			return nil, c.fail(nil)
		}
		c.last.discard() // the next attempt goes: the last outcome is no longer needed
		r, err := c.send(n, &ready)
		if err != nil {
			return nil, c.fail(err)
		}
		s := c.after(&r)
		for s.kind == stepResend || s.kind == stepReady {
			s = c.sendAgain(s)
		}
		switch s.kind {
		case stepDeliver, stepFail:
			return c.answer(nil)
		case stepNoMore:
			c.refused(s.attempt, s.refusal, c.gauges(s))
			return c.answer(c.refusal(s))
		}
		c.backoff = s.backoff
		if ready, err = c.newAttempt(n+1, how{}, c.avoid()); err != nil {
			return c.noBody(n+1, err)
		}
		if err := c.pause(s); err != nil {
			return nil, c.fail(err)
		}
	}
}

// await asks the gate whether attempt n (its resend, when again is set)
// may go, waiting as long as it says while it holds the attempt back. Its
// step is stepSend, or the stepNoMore of a refusal, or, when the caller's
// context ended during a wait, a stepNoMore with no refusal.
func (c *call) await(n int, again bool) step {
	for {
		s := c.admit(n, again)
		if s.kind != stepWait {
			return s
		}
		if c.pause(s) != nil {
			return step{kind: stepNoMore, attempt: n}
		}
	}
}

// send sends attempt n, made ready already or else now, once it is
// prepared; it fails, nothing sent, when a Prepare does. Until it is
// sent, the attempt stays in ready, which the loop lets go of should a
// hook panic.
func (c *call) send(n int, ready *attempt) (result, error) {
	var err error
	if ready.req == nil {
		*ready, err = c.newAttempt(n, how{}, c.avoid())
	}
	if err == nil {
		if err := c.prepare(ready); err != nil {
			return result{}, err
		}
	}
	c.sent = n
	c.attemptStarted(n, how{})
	if err != nil {
		return c.unsent(n, how{}, err), nil
	}
	a := *ready
	*ready = attempt{}
	c.tried++
	return a.send(), nil
}

// sendAgain carries out s, a resend of attempt s.attempt: at once and
// transparently, or once its dial backoff window has ended, and once no
// hold keeps it back: a resend is sent no sooner than a new attempt would
// be. It returns what follows the new try.
func (c *call) sendAgain(s step) step {
	if s.kind == stepReady && c.pause(s) != nil {
		return step{kind: stepNoMore, attempt: s.attempt}
	}
	if g := c.await(s.attempt, true); g.kind != stepSend {
		c.unresent()
		return g
	}
	again := how{resend: true}
	a, err := c.newAttempt(s.attempt, again, c.avoid())
	if err != nil {
		c.attemptStarted(s.attempt, again)
		r := c.unsent(s.attempt, again, err) // take joins it to the first try's error
		return c.after(&r)
	}
	if err := c.prepare(&a); err != nil {
		c.last = result{n: s.attempt, err: err} // nothing else is kept: the first try's outcome is c.resent
		return step{kind: stepFail, attempt: s.attempt}
	}
	c.start(&a, again)
	r := a.send()
	return c.after(&r)
}

// noBody ends a request whose attempt n could not get its body (GetBody
// failed) with the last outcome, kept for that: its response, or its
// error together with the body's.
func (c *call) noBody(n int, err error) (*http.Response, error) {
	c.refused(n, retrytrace.RefusedBuffer, retrytrace.Gauges{})
	if c.last.resp == nil {
		c.last.err = fmt.Errorf("%w; no body for attempt %d: %w", c.last.err, n, err)
	}
	return c.answer(nil)
}
