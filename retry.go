package retryhttp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/policy"
)

// call is one RoundTrip: the caller's request and what governs it.
type call struct {
	st       *state
	req      *http.Request
	rule     *policy.Rule // nil: no rule matched
	body     *replayableBody
	bucket   *bucket
	idem     bool // the request may be sent more than once
	counters pair
	hooks    []*Hooks
	ruleName string // the rule's key in Stats.Rules, for the hooks
	// Figures for the Done hook.
	hedges, transparent int
	delay               time.Duration // waited with no attempt in flight
}

func newCall(t *Transport, st *state, req *http.Request) *call {
	rule, i := st.cfg.Match(req)
	host := strings.ToLower(req.URL.Host)
	c := &call{
		st:       st,
		req:      req,
		rule:     rule,
		body:     newReplayableBody(req, st.pool),
		bucket:   st.budgets.For(host),
		counters: pair{st.stats.rule(i), st.stats.host(host)},
		hooks:    hooksFor(t.Hooks, req),
		ruleName: st.stats.name(i),
	}
	c.idem = idempotent(req) || (rule != nil && rule.Retry != nil && rule.Retry.RetryNonIdempotent)
	if c.body.mode == streamMode {
		c.body.onCommitForSize(func() {
			c.counters.each(func(x *counters) { x.committedForSize.Add(1) })
		})
	}
	return c
}

// run sends the request as its rule says and reports the end.
func (c *call) run() (*http.Response, error) {
	c.observeStart()
	var (
		resp *http.Response
		err  error
		n    int
	)
	if c.rule != nil && c.rule.Hedge != nil && c.idem {
		resp, n, err = c.hedge()
	} else {
		resp, n, err = c.retry()
	}
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	c.finished(n, status, err)
	return resp, err
}

// attempt sends attempt n and classifies its result, with the
// observation points around it. resend says it sends attempt n again,
// which is then no further attempt.
func (c *call) attempt(n int, resend bool, timeout time.Duration) (result, outcome) {
	c.attemptStarted(n, false, resend)
	ctx, cancel := context.WithCancelCause(c.req.Context())
	r := c.send(ctx, cancel, n, timeout, c.st.base)
	r.resend = resend
	out := c.classify(&r)
	c.attemptDone(n, false, &r, out)
	return r, out
}

// retry is the retry loop: send, classify, and either hand the outcome
// back or wait and send again. It returns the number of attempts made.
func (c *call) retry() (*http.Response, int, error) {
	var p *policy.Retry
	if c.rule != nil {
		p = c.rule.Retry
	}
	var timeout time.Duration
	if p != nil {
		timeout = p.PerAttemptTimeout
	}
	transparentLeft := true
	backoffN := 0 // the policy's retry counter; pushback restarts it
	for n := 1; ; n++ {
		r, out := c.attempt(n, false, timeout)
		resent := false
		if out == outNeverSent && transparentLeft && c.resendNow(&r) {
			// It never reached the server: once, at once, for any
			// method, without spending an attempt or a token.
			transparentLeft, resent = false, true
			c.transparentRetry()
			first := r.err
			r, out = c.attempt(n, true, timeout)
			r.err = resendError(first, r.err)
		}
		if wait := dialWindow(&r); p != nil && !resent && wait > 0 && c.req.Context().Err() == nil {
			// The dialer refused it without touching the network:
			// the address is in its backoff window. Under a retry
			// policy the attempt is made again once the window ends,
			// without spending an attempt, so that maxAttempts counts
			// real ones. A transparent resend that met the window is
			// not made again: the failure before it opened the window
			// and is the attempt. With no policy the refusal comes
			// back at once, as gRPC fails fast a call that is not
			// wait-for-ready while its channel is in transient
			// failure.
			if !fitsDeadline(c.req.Context(), wait) {
				c.refused(n, RefusedDeadline)
				resp, err := c.giveUp(&r, n)
				return resp, n, err
			}
			r.discard()
			c.waiting(n, wait, WaitDialBackoff)
			c.delay += wait
			if err := sleep(c.req.Context(), wait); err != nil {
				return nil, n, &Error{Attempts: n, Err: err}
			}
			r, out = c.attempt(n, true, timeout)
		}
		c.account(n, out, &r)
		switch out {
		case outDone:
			return c.deliver(&r, n), n, nil
		case outFatal:
			return nil, n, c.fail(&r, n)
		}
		wait, why, refusal := c.nextWait(p, out, &r, n, &backoffN)
		if refusal != "" {
			c.refused(n+1, refusal)
		}
		if why == "" {
			resp, err := c.giveUp(&r, n)
			return resp, n, err
		}
		r.discard()
		c.waiting(n+1, wait, why)
		c.delay += wait
		if err := sleep(c.req.Context(), wait); err != nil {
			return nil, n, &Error{Attempts: n, Err: err}
		}
	}
}

// resendNow reports whether an attempt that never reached the server may
// be resent at once, transparently: not when the caller's context has
// ended, nor when the dialer refused it for its address's backoff window,
// which an immediate resend would only meet again, nor when the body can
// no longer be replayed.
func (c *call) resendNow(r *result) bool {
	return c.req.Context().Err() == nil && !errors.Is(r.err, ErrDialBackoff) && c.body.replayable()
}

// resendError is the error of a transparent resend that could not get its
// body (GetBody failed): it keeps the error that made the first try
// unsendable, which is what the caller most needs to know. Any other
// outcome of the resend stands alone.
func resendError(first, resend error) error {
	if first == nil || !errors.Is(resend, errBodyCommitted) {
		return resend
	}
	return fmt.Errorf("%w; its transparent resend: %w", first, resend)
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

// nextWait decides whether attempt n+1 may start and how long to wait for
// it. An empty reason means no further attempt; the refusal, if any, says
// which limit stopped it.
func (c *call) nextWait(p *policy.Retry, out outcome, r *result, n int, backoffN *int) (time.Duration, WaitReason, RefusalReason) {
	sd := r.delay
	switch {
	case p == nil || n >= p.MaxAttempts || !c.mayRepeat(out, r, sd):
		return 0, "", ""
	case sd.Kind == delayStop:
		return 0, "", RefusedServerDelay
	case !c.body.replayable():
		return 0, "", RefusedBuffer
	case !c.bucket.Allow():
		return 0, "", RefusedBudget
	}
	wait, why := c.serverWait(sd, backoffN)
	if why == "" {
		return 0, "", RefusedServerDelay
	}
	if why == WaitBackoff {
		wait = p.Schedule().Duration(*backoffN)
		*backoffN++
		if w := dialWindow(r); w >= wait {
			wait, why = w, WaitDialBackoff
		}
	}
	if !fitsDeadline(c.req.Context(), wait) {
		return 0, "", RefusedDeadline
	}
	return wait, why, ""
}

// serverWait applies a server delay signal: the wait it asks for, with a
// little positive jitter; WaitBackoff when there is none; or an empty
// reason when it asks for longer than the policy allows.
func (c *call) serverWait(sd serverDelay, backoffN *int) (time.Duration, WaitReason) {
	switch sd.Kind {
	case delayPushback, delayRetryAfter:
		if sd.Wait > c.st.cfg.ServerDelayLimit() {
			return 0, ""
		}
		if sd.Kind == delayPushback {
			*backoffN = 0 // A6: backoff restarts after a pushback
			return jitterServerDelay(sd.Wait, rand.Float64()), WaitPushback
		}
		*backoffN++
		return jitterServerDelay(sd.Wait, rand.Float64()), WaitRetryAfter
	}
	return 0, WaitBackoff
}

// mayRepeat applies the idempotency rules: a request that is not
// idempotent is sent again only when the server surely did not act on it
// (never sent, 429) or explicitly asked for a retry (pushback).
func (c *call) mayRepeat(out outcome, r *result, sd serverDelay) bool {
	switch {
	case c.idem || out == outNeverSent:
		return true
	case out == outRetryStatus:
		return r.resp.StatusCode == http.StatusTooManyRequests || sd.Kind == delayPushback
	}
	return false
}

// fitsDeadline reports whether a wait of d ends before ctx's deadline.
// A wait that would end at or past it is not started: the last outcome is
// worth more to the caller than an error at the deadline.
func fitsDeadline(ctx context.Context, d time.Duration) bool {
	dl, ok := ctx.Deadline()
	return !ok || time.Now().Add(d).Before(dl)
}

// sleep waits for d or until ctx ends, whichever is first, and then
// returns ctx's cause.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// deliver hands attempt n's response to the caller.
func (c *call) deliver(r *result, n int) *http.Response {
	resp := r.resp
	resp.Request = c.req
	if resp.Header == nil {
		resp.Header = make(http.Header)
	}
	if n > 1 {
		resp.Header.Set(AttemptsHeader, strconv.Itoa(n-1))
	}
	return resp
}

// giveUp ends the request with attempt n's outcome: its response if it
// had one (with a nil error, whatever its status), else its error.
func (c *call) giveUp(r *result, n int) (*http.Response, error) {
	if r.resp != nil {
		return c.deliver(r, n), nil
	}
	return nil, c.fail(r, n)
}

// fail builds the error for a request that got no response.
func (c *call) fail(r *result, n int) error {
	err := r.err
	if cerr := c.body.callerErr(); cerr != nil {
		err = cerr
	} else if cause := context.Cause(c.req.Context()); cause != nil {
		err = cause
	}
	return &Error{Attempts: n, Err: err}
}

// idempotent reports whether req may be sent more than once by the rules
// of RFC 9110 section 9.2.2, or because it carries an idempotency key.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	return req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != ""
}
