package retryhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/policy"
)

// call is one RoundTrip: the caller's request, the plan chosen for it
// once, and the state both loops share. The loops (retry.go, hedging.go)
// drive it and carry out what it decides (decide.go); it never calls
// them.
//
// Calls are pooled by their state: nothing may keep a *call once
// RoundTrip has returned, and nothing does, as every attempt of a request
// has ended by then (or been handed, with a channel of its own, to a
// goroutine that only closes what it gets) and what outlives it (a body
// still being sent) keeps its own state.
type call struct {
	observer
	st         *state
	pol        *active
	classifier func(int, *http.Response, error) Verdict
	req        *http.Request   // the caller's; never modified
	ctx        context.Context // req.Context(), ended also by req.Cancel when set
	// unwatch ends ctx when it watches req.Cancel (see watchCancel); nil
	// otherwise.
	unwatch context.CancelCauseFunc
	host    *host  // the request's host: req.URL.Host, lowercased once here
	rule    string // the Config rule matched, the key of its holds with the host
	plan    plan
	opts    *options // nil: none set

	body *replayableBody // &own, or a body of its own when streamed
	own  replayableBody

	// What the loops share. sent is the number of the latest attempt
	// started; tried counts the attempts handed to the base, transparent
	// resends not; backoff is the retry policy's counter, which a
	// pushback restarts; spare says the transparent resend is unused.
	sent, tried int
	backoff     int
	spare       bool
	// last is the latest outcome, kept for the caller until a later one
	// replaces it or the next attempt goes; whyUnsent is why an attempt
	// could not be sent (no body, a hold), for a request that has nothing
	// else to hand back; resent is the outcome whose transparent resend is
	// under way.
	last, resent result
	whyUnsent    error
	// failedAddrs are the addresses whose attempts failed (a network
	// error, a 5xx), which later attempts avoid when the host has
	// others; a few are enough to remember.
	failedAddrs [4]string
	failedAt    int
	hedger      hedger // the hedge loop's state, kept with the call
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
	kind     planKind
	attempts int           // the most attempts the plan makes
	retry    *policy.Retry // set for planRetry
	hedge    *policy.Hedge // set for planHedge
	// listed are the statuses that are retried (or are non-fatal, under
	// a hedging policy).
	listed []int
	// idem says the request may be sent again after it may have reached
	// the server.
	idem bool
}

// maxHedgeAttempts bounds the attempts of a hedged request, as gRPC bounds
// maxAttempts: a policy's larger MaxAttempts counts as this many. Every
// attempt of a hedged request may be in flight at once, so the bound keeps
// one request from flooding its host and its memory from growing with a
// policy's figure. Retries, one at a time, have no such bound.
const maxHedgeAttempts = 5

// newPlan reduces rule, matched for req, to a plan. A hedging rule hedges
// only what may be sent more than once: any other request is sent once.
func newPlan(rule *policy.Rule, req *http.Request) plan {
	idem := idempotent(req)
	switch {
	case rule == nil:
	case rule.Retry != nil:
		return plan{kind: planRetry, attempts: rule.Retry.Attempts(), retry: rule.Retry,
			listed: rule.Retry.RetryableStatusCodes, idem: idem || rule.Retry.RetryNonIdempotent}
	case rule.Hedge != nil && idem:
		return plan{kind: planHedge, attempts: min(rule.Hedge.MaxAttempts, maxHedgeAttempts), hedge: rule.Hedge,
			listed: rule.Hedge.NonFatalStatusCodes, idem: true}
	}
	return plan{attempts: 1, idem: idem}
}

// newCall prepares req's call: its plan, its body, its host and its
// counters, with the Transport's hooks and classifier as they are now. It
// fails, before anything is sent, for a per-call rule that is invalid.
func (st *state) newCall(req *http.Request, hooks *Hooks, classifier func(int, *http.Response, error) Verdict) (*call, error) {
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
		ctx, c.unwatch = watchCancel(ctx, ch)
	}
	c.st, c.pol, c.classifier, c.req, c.ctx, c.opts = st, pol, classifier, req, ctx, opts
	c.host = st.hosts.get(strings.ToLower(req.URL.Host))
	c.spare = true

	rule, i := pol.cfg.Match(req)
	c.rule = pol.name(i) // a per-call rule keeps the holds of the rule matched
	var own *Hooks
	if opts != nil {
		own = opts.hooks
		switch {
		case opts.noRetries:
			rule = nil
		case opts.rule != nil:
			rule, i = opts.rule, perCallRule
		}
	}
	c.plan = newPlan(rule, req)
	c.observer = observer{req: req, rule: pol.name(i), counters: pair{pol.rule(i), c.host.counters}}
	c.setHooks(hooks, own)
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

// end lets the body's buffer go, closes an outcome kept and not handed
// back (the caller's context ended during a wait), and puts c back in the
// pool.
//
// A request cut short by a panic (of a hook, the caller's classifier or
// GetBody, or the base) is left to the garbage collector instead, never
// put back for another request to share: the loop that panicked may not
// have put its state in order.
func (c *call) end(completed bool) {
	c.body.release()
	c.last.abort(errCallDone) // an outcome kept, and not handed back
	if !completed {
		if c.unwatch != nil {
			c.unwatch(errPanicked)
		}
		return
	}
	st, h := c.st, c.hedger.keepable()
	*c = call{hedger: h}
	st.calls.Put(c)
}

// newAttempt prepares attempt n, going as w says, with its own body
// reader. A hedged attempt runs beside others and so gets a context of its
// own to be cancelled by. With the Transport's own base it goes to an address of the host
// that is not in avoid, when the host has several. The first attempt of a
// plain request goes as the caller's own request, under the caller's
// context: no copy, nothing to cancel. It fails, matching
// errBodyCommitted, when the body cannot be sent again.
func (c *call) newAttempt(n int, w how, avoid []string) (attempt, error) {
	a := attempt{n: n, hedge: w.hedge(n), resend: w.resend, base: c.st.base, ctx: c.ctx,
		reading: reading{caller: c.ctx, listed: c.plan.listed, delays: c.pol.delayHeaders, holds: c.pol.cfg.Hold != nil}}
	if s := c.st.spread; s != nil {
		if rt, addr := s.route(c.ctx, c.req, c.host.name, avoid); rt != nil {
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
	if n == 1 && w == (how{}) && a.timeout == 0 && c.body.mode != streamMode && c.unwatch == nil {
		a.req = c.req
		return a, nil
	}
	if w.hedged || a.timeout > 0 {
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

// unsent is the result of attempt n, going as w says, which could not get
// its body.
func (c *call) unsent(n int, w how, err error) result {
	return result{n: n, hedge: w.hedge(n), resend: w.resend, err: err, ctx: c.ctx, class: outNoBody}
}

// deliver hands attempt n's response to the caller: its Request is the
// caller's, and its attempts header says how many went before it, and
// nothing else: one the server sent on the first attempt is not kept.
// The response is the caller's from then on: r no longer holds it.
func (c *call) deliver(r *result) *http.Response {
	resp := r.resp
	r.resp = nil
	resp.Request = c.req
	switch {
	case c.st.omitHeader:
	case r.n > 1:
		resp.Header.Set(AttemptsHeader, strconv.Itoa(r.n-1))
	case resp.Header[AttemptsHeader] != nil:
		resp.Header.Del(AttemptsHeader)
	}
	return resp
}

// answer ends the request with what it kept: the latest outcome's
// response, with a nil error whatever its status; else its error, with
// why (a hold's refusal, say) after it; else why no attempt could be sent:
// whyUnsent, or why.
func (c *call) answer(why error) (*http.Response, error) {
	if c.last.resp != nil {
		return c.deliver(&c.last), nil
	}
	err := c.last.err
	switch {
	case err != nil && why != nil:
		err = fmt.Errorf("%w; then %w", err, why)
	case err != nil:
	case c.whyUnsent != nil:
		err = c.whyUnsent
	default:
		err = why
	}
	return nil, c.fail(err)
}

// avoid returns the addresses later attempts avoid.
func (c *call) avoid() []string { return c.failedAddrs[:c.failedAt] }

// ErrGiveUp is matched by every [*Error]: a request that obtained no
// response after all the attempts its policy allowed.
var ErrGiveUp = errors.New("retryhttp: no response")

// Error is returned by [Transport.RoundTrip] when no response was obtained.
// It carries the number of attempts sent and wraps the last cause, so that
// errors.Is(err, context.DeadlineExceeded), errors.As(err, *net.OpError)
// and the like see through it.
type Error struct {
	// Attempts is the number of attempts sent, transparent retries not
	// counted.
	Attempts int
	// Err is the last attempt's error, or the cause of the caller's
	// context when that ended the request.
	Err error
}

// Error implements error: "retryhttp: no response after 3 attempt(s): "
// and the cause, or, for a request not sent at all (a hold refused it),
// "retryhttp: not sent: " and the cause.
func (e *Error) Error() string {
	if e.Attempts == 0 {
		return fmt.Sprintf("retryhttp: not sent: %v", e.Err)
	}
	return fmt.Sprintf("retryhttp: no response after %d attempt(s): %v", e.Attempts, e.Err)
}

// Unwrap returns the last cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is [ErrGiveUp].
func (e *Error) Is(target error) bool { return target == ErrGiveUp }

// Timeout reports whether the last cause was a timeout, as [net.Error]
// does, so that http.Client and callers that test for timeouts keep
// working.
func (e *Error) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.Err, &t) && t.Timeout()
}

// fail builds the error for a request that got no response, err being
// the last attempt's error.
func (c *call) fail(err error) error {
	if cerr := c.body.callerErr(); cerr != nil {
		err = cerr
	} else if cause := context.Cause(c.ctx); cause != nil {
		err = cause
	}
	return &Error{Attempts: c.tried, Err: err}
}

// pause waits out s, a wait before attempt s.attempt with no attempt in
// flight, reporting it first. The wait ends when the step said, s.at, so
// that the time spent since the decision (getting the next attempt's
// body, the hooks) is not added to it. It returns the caller's context's
// cause if that ends first.
func (c *call) pause(s step) error {
	c.waiting(s.attempt, s.wait, s.reason, true)
	d := time.Until(s.at)
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

// waitsForReady reports whether the request waits out a dial backoff
// window instead of failing fast.
func (c *call) waitsForReady() bool {
	return c.opts != nil && c.opts.waitForReady
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
