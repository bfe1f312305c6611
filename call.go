package retryhttp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/policy"
)

// call is one RoundTrip: the caller's request, the plan chosen for it
// once, and what decides whether another attempt may follow. The loops
// (retry.go, hedging.go) drive it; it never calls them.
//
// Calls are pooled by their state: nothing may keep a *call once
// RoundTrip has returned, and nothing does, as every attempt of a request
// has ended by then and what outlives it (a body still being sent) keeps
// its own state.
type call struct {
	observer
	st  *state
	pol *active
	req *http.Request   // the caller's; never modified
	ctx context.Context // req.Context(), ended also by req.Cancel when set
	// stop ends ctx when it watches req.Cancel (see watchCancel); nil
	// otherwise.
	stop context.CancelCauseFunc
	host string // req.URL.Host, lowercased once here
	plan plan
	opts *options // nil: none set

	body   *replayableBody // &own, or a body of its own when streamed
	own    replayableBody
	bucket *bucket
	hedger hedger // the hedge loop's state, kept with the call
	// panicked is what the caller's classifier panicked with, if it did.
	panicked any
}

// planKind is what is done with a request: decided once, when it starts.
type planKind uint8

const (
	planNone  planKind = iota // one attempt, and the transparent resend
	planRetry                 // the retry loop
	planHedge                 // the hedge loop
)

// plan is the rule chosen for a request, reduced to what the loops read.
type plan struct {
	kind  planKind
	retry *policy.Retry // set for planRetry
	hedge *policy.Hedge // set for planHedge
	// listed are the statuses that are retried (or are non-fatal, under
	// a hedging policy).
	listed []int
	// idem says the request may be sent again after it may have reached
	// the server.
	idem bool
}

// newPlan reduces rule, matched for req, to a plan. A hedging rule hedges
// only what may be sent more than once: any other request is sent once.
func newPlan(rule *policy.Rule, req *http.Request) plan {
	idem := idempotent(req)
	switch {
	case rule == nil:
	case rule.Retry != nil:
		return plan{kind: planRetry, retry: rule.Retry, listed: rule.Retry.RetryableStatusCodes,
			idem: idem || rule.Retry.RetryNonIdempotent}
	case rule.Hedge != nil && idem:
		return plan{kind: planHedge, hedge: rule.Hedge, listed: rule.Hedge.NonFatalStatusCodes, idem: true}
	}
	return plan{idem: idem}
}

// newCall prepares req's call: its plan, its body, its budget and its
// counters. It fails, before anything is sent, for a per-call rule that
// is invalid.
func (st *state) newCall(req *http.Request) (*call, error) {
	ctx := req.Context()
	opts := optionsOf(ctx)
	if opts != nil && opts.ruleErr != nil && !opts.noRetries { // WithoutRetries wins
		return nil, opts.ruleErr
	}
	pol := st.pol.Load()
	if pol.err != nil {
		return nil, pol.err
	}
	c := st.calls.Get().(*call)
	//lint:ignore SA1019 a caller's Request.Cancel is still honoured, as net/http does.
	if ch := req.Cancel; ch != nil {
		ctx, c.stop = watchCancel(ctx, ch)
	}
	c.st, c.pol, c.req, c.ctx, c.opts = st, pol, req, ctx, opts
	c.host = strings.ToLower(req.URL.Host)

	rule, i := pol.cfg.Match(req)
	var hooks *Hooks
	if opts != nil {
		hooks = opts.hooks
		switch {
		case opts.noRetries:
			rule = nil
		case opts.rule != nil:
			rule, i = opts.rule, perCallRule
		}
	}
	c.plan = newPlan(rule, req)
	c.observer = observer{req: req, rule: pol.name(i), counters: pair{pol.rule(i), st.hosts.get(c.host)}}
	c.setHooks(st.hooks, hooks)
	c.bucket = st.budgets.forLowered(c.host)
	c.body = &c.own
	if streamed(req) {
		c.body = new(replayableBody)
	}
	c.body.init(req, st.pool)
	if c.body.mode == streamMode {
		both := c.counters // not c, which goes back to the pool
		c.body.onCommitForSize(func() {
			both.each(func(x *counters) { x.committedForSize.Add(1) })
		})
	}
	return c, nil
}

// end lets the body's buffer go and puts c back in the pool.
//
// A request cut short by a panic (of a hook, or of the base on the
// caller's goroutine) may still have attempts in flight that hold c: its
// call is then left to the garbage collector, never put back for another
// request to share.
func (c *call) end(completed bool) {
	c.body.release()
	if !completed {
		return
	}
	st := c.st
	*c = call{}
	st.calls.Put(c)
}

// newAttempt prepares attempt n, with its own body reader. hedge says it
// runs beside others and so needs a context of its own to be cancelled
// by. With the Transport's own base it goes to an address of the host
// that is not in avoid, when the host has several. The first attempt of a
// plain request goes as the caller's own request, under the caller's
// context: no copy, nothing to cancel. It fails, matching
// errBodyCommitted, when the body cannot be sent again.
func (c *call) newAttempt(n int, hedge, resend bool, avoid []string) (attempt, error) {
	a := attempt{n: n, hedge: hedge, resend: resend, base: c.st.base, ctx: c.ctx}
	if s := c.st.spread; s != nil {
		if rt, addr := s.route(c.ctx, c.req, c.host, avoid); rt != nil {
			a.base, a.addr = rt, addr
		}
	}
	if c.plan.retry != nil {
		a.timeout = c.plan.retry.PerAttemptTimeout
	}
	body, length, err := c.body.newReader(n)
	if err != nil {
		return a, err
	}
	if n == 1 && !resend && !hedge && a.timeout == 0 && c.body.mode != streamMode && c.stop == nil {
		a.req = c.req
		return a, nil
	}
	if hedge || a.timeout > 0 {
		a.ctx, a.cancel = context.WithCancelCause(a.ctx)
	}
	if c.body.mode == streamMode {
		// net/http cannot rewind such a body, so it does not resend it
		// on a reused connection that wrote nothing; the trace shows
		// when the Transport may. Any other body it rewinds itself.
		a.trace = newWriteTrace()
		a.ctx = httptrace.WithClientTrace(a.ctx, &a.trace.ct)
	}
	a.req = c.req.WithContext(a.ctx) // shallow: the caller's header is only read
	a.req.Body, a.req.ContentLength = body, length
	//lint:ignore SA1019 watched by c.ctx instead: see watchCancel.
	a.req.Cancel = nil
	if n > 1 && !c.st.omitHeader {
		a.req.Header = c.req.Header.Clone()
		a.req.Header.Set(AttemptsHeader, strconv.Itoa(n-1))
	}
	return a, nil
}

// classify maps an attempt's result to its outcome: the caller's
// classifier first, for an outcome that reached or may have reached the
// server while the caller still waits, then the plan's lists. A
// classifier that panics decides the request: the panic is kept, to be
// raised again on the caller's goroutine once the request has let go of
// everything, and the outcome is fatal.
func (c *call) classify(r *result) outcome {
	callerDone := c.ctx.Err() != nil
	out := classify(r, c.plan.listed, callerDone)
	f := c.st.classifier
	if f == nil || callerDone || out == outNeverSent || ownError(r.err) {
		return out
	}
	v, ok := c.verdict(f, r)
	if !ok {
		return outPanicked
	}
	return judged(v, r, out)
}

// verdict asks f about r, recovering a panic into c.panicked.
func (c *call) verdict(f func(int, *http.Response, error) Verdict, r *result) (v Verdict, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			c.panicked, ok = p, false
		}
	}()
	return f(r.n, r.resp, r.err), true
}

// account records the final outcome of an attempt in the host's budget,
// where failures drain it and successes refill it, and counts a retry
// attempt that failed. It is called once per attempt: an outcome followed
// by a transparent resend is not counted, as it never reached the server.
func (c *call) account(r *result, out outcome) {
	if r.n > 1 && out != outDone {
		c.failed()
	}
	switch {
	case out == outNeverSent && errors.Is(r.err, ErrDialBackoff):
		// Refused by the dialer's backoff window, it says nothing new
		// of the host: the failure that opened the window was counted.
	case out == outRetryStatus, out == outNetwork, out == outNeverSent:
		c.bucket.Failure()
	case out == outDone:
		if r.resp.StatusCode >= 400 && r.delay.Kind == delayStop {
			c.bucket.Failure()
			return
		}
		c.bucket.Success()
	}
}

// readDelay reads what a response asks of the next attempt, once its
// outcome is known. A success asks nothing, and its headers are not read.
func (c *call) readDelay(r *result, out outcome) {
	if r.resp != nil && (out != outDone || r.resp.StatusCode >= 400) {
		r.delay = parseServerDelay(r.resp.Header, time.Now(), c.pol.delayHeaders)
	}
}

// mayResend reports whether an attempt whose outcome is out may be resent
// at once, transparently, without spending an attempt: one that never
// reached the server, or, under a retry or hedging rule, an idempotent one
// whose connection another request's cancellation closed (see lostError),
// as net/http itself resends such a request on a connection it reused. Not when the caller's
// context has ended, nor when the dialer refused it for its address's
// backoff window, which an immediate resend would only meet again, nor
// when the body can no longer be replayed.
func (c *call) mayResend(r *result, out outcome) bool {
	var lost *lostError
	switch {
	case out == outNeverSent:
	case out == outNetwork && c.plan.kind != planNone && c.plan.idem && errors.As(r.err, &lost):
	default:
		return false
	}
	return c.ctx.Err() == nil && !errors.Is(r.err, ErrDialBackoff) && c.body.replayable()
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

// mayRepeat applies the idempotency rules: a request that is not
// idempotent is sent again only when the server surely did not act on it
// (never sent, 429) or explicitly asked for a retry (pushback).
func (c *call) mayRepeat(out outcome, r *result) bool {
	switch {
	case c.plan.idem || out == outNeverSent || r.unprocessed:
		return true
	case out == outRetryStatus:
		return r.resp.StatusCode == http.StatusTooManyRequests || r.delay.Kind == delayPushback
	}
	return false
}

// gate decides whether a further attempt may start at all: the host's
// budget and the body must allow it. When they do not, why says which.
func (c *call) gate() (why RefusalReason, ok bool) {
	switch {
	case !c.body.replayable():
		return RefusedBuffer, false
	case !c.bucket.Allow():
		return RefusedBudget, false
	}
	return "", true
}

// serverWait is the wait a server's delay signal asks for, with a little
// positive jitter. ok is false when it asks for longer than the policy
// allows, or for a delay too large to represent.
func (c *call) serverWait(sd serverDelay) (wait time.Duration, why WaitReason, ok bool) {
	if sd.Wait >= tooLong || sd.Wait > c.pol.cfg.ServerDelayLimit() {
		return 0, "", false
	}
	switch sd.Kind {
	case delayPushback:
		why = WaitPushback
	case delayHeader:
		why = WaitServerDelay
	default:
		why = WaitRetryAfter
	}
	return jitterServerDelay(sd.Wait, rand.Float64()), why, true
}

// fits reports whether a wait of d ends before the caller's deadline. A
// wait that would end at or past it is not started: the last outcome is
// worth more to the caller than an error at the deadline.
func (c *call) fits(d time.Duration) bool {
	dl, ok := c.ctx.Deadline()
	return !ok || time.Now().Add(d).Before(dl)
}

// deliver hands attempt n's response to the caller: its Request is the
// caller's, and its attempts header says how many went before it, and
// nothing else: one the server sent on the first attempt is not kept.
func (c *call) deliver(r *result) *http.Response {
	resp := r.resp
	resp.Request = c.req
	switch {
	case c.st.omitHeader:
	case r.n > 1:
		if resp.Header == nil {
			resp.Header = make(http.Header)
		}
		resp.Header.Set(AttemptsHeader, strconv.Itoa(r.n-1))
	case resp.Header[AttemptsHeader] != nil:
		resp.Header.Del(AttemptsHeader)
	}
	return resp
}

// giveUp ends the request with an attempt's outcome: its response if it
// had one (with a nil error, whatever its status), else its error.
func (c *call) giveUp(r *result, attempts int) (*http.Response, error) {
	if r.resp != nil {
		return c.deliver(r), nil
	}
	return nil, c.fail(r.err, attempts)
}

// fail builds the error for a request that got no response after
// attempts attempts, err being the last one's error.
func (c *call) fail(err error, attempts int) error {
	if cerr := c.body.callerErr(); cerr != nil {
		err = cerr
	} else if cause := context.Cause(c.ctx); cause != nil {
		err = cause
	}
	return &Error{Attempts: attempts, Err: err}
}

// sleep waits for d or until the caller's context ends, whichever is
// first, and then returns the context's cause.
func (c *call) sleep(d time.Duration) error {
	if d <= 0 {
		return context.Cause(c.ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-c.ctx.Done():
		return context.Cause(c.ctx)
	}
}

// waitForReady reports whether the request waits out a dial backoff
// window instead of failing fast.
func (c *call) waitForReady() bool {
	return c.opts != nil && c.opts.waitForReady
}

// latency returns the latency sketch of the request's host.
func (c *call) latency() *latencyRing {
	return c.st.latencies.get(c.host)
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
