package retryhttp

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/retrytrace"
)

// call is one RoundTrip: the caller's request, the plan chosen for it
// once, and the state both loops share. Before each attempt and after it,
// the call gathers the facts of a decision and asks the pure gate or
// decide (decide.go); the loops (retry.go, hedging.go) carry out the step,
// and the call never calls them.
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
	// prepares are the Transport's Prepare and the request's, each nil
	// when unset.
	prepares [2]preparer
	req      *http.Request   // the caller's; never modified
	ctx      context.Context // req.Context(), ended also by req.Cancel when set
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
	// slot is the attempt that holds a send slot of its host's pace,
	// taken at slotAt by the gate before a wait for it, and due at
	// slotDue; 0: none.
	slot            int
	slotAt, slotDue time.Time
	// admits are the attempts that hold a slot under the host's
	// concurrency limit, one bit each; waiter is attempt waitFor's place
	// in line for one, until waitUntil.
	admits    uint32
	waiter    *admitWaiter
	waitFor   int
	waitUntil time.Time
	hedger    hedger // the hedge loop's state, kept with the call
	// probe is the turn to go first after a capped hold that an attempt
	// of the request took, until its outcome is learnt; zero: none.
	probe probeTurn
	// earned is the share of a hedge that the first attempt earned of
	// its host's hedge budget, in millionths, given back if it is not
	// sent.
	earned int64
}

// newCall readies req's call: its plan, its body, its host and its
// counters, with the Transport's hooks, classifier and preparer as they
// are now. It fails, before anything is sent, for a per-call rule that is
// invalid.
func (st *state) newCall(req *http.Request, hooks *retrytrace.Hooks, classifier func(int, *http.Response, error) Verdict,
	prep preparer) (*call, error) {
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
	c.prepares[0] = prep
	if opts != nil {
		c.prepares[1] = opts.prepare
	}
	c.host = st.hosts.get(strings.ToLower(req.URL.Host))
	c.spare = true

	rule, i := pol.cfg.Match(req)
	c.rule = pol.name(i) // a per-call rule keeps the holds of the rule matched
	own := retrytrace.ContextHooks(ctx)
	if opts != nil {
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
	c.unadmitAll()
	c.unprobe() // a probe cut off, or never sent
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

// newAttempt makes attempt n ready, going as w says, with its own body
// reader. A hedged attempt runs beside others and so gets a context of its
// own to be cancelled by. With the Transport's own base it goes to an address of the host
// that is not in avoid, when the host has several. The first attempt of a
// plain request goes as the caller's own request, under the caller's
// context: no copy, nothing to cancel; unless it is prepared, when every
// attempt is a copy with a header and URL of its own, for the caller's
// Prepare to change. It fails, matching errBodyCommitted, when the body
// cannot be sent again.
func (c *call) newAttempt(n int, w how, avoid []string) (attempt, error) {
	a := attempt{n: n, hedge: w.hedge(n), resend: w.resend, base: c.st.base, ctx: c.ctx,
		reading: reading{caller: c.ctx, listed: c.plan.listed, delays: c.pol.delayHeaders, holds: c.pol.cfg.Hold != nil,
			pace: c.pol.pacing, codes: c.plan.codes}}
	if d := c.st.dialer; d != nil {
		if rt, addr := d.Route(c.ctx, c.req, c.host.name, avoid); rt != nil {
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
	if n == 1 && w == (how{}) && a.timeout == 0 && c.body.mode != streamMode && c.unwatch == nil && !c.preparing() {
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
	if prepared := c.preparing(); prepared || n > 1 && !c.st.omitHeader {
		a.req.Header = c.req.Header.Clone()
		if prepared {
			u := *c.req.URL
			a.req.URL = &u
		}
	}
	if n > 1 && !c.st.omitHeader {
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

// pause waits out s, a wait before attempt s.attempt with no attempt in
// flight, reporting it first, and counting, once it is over, how long it
// lasted: from the decision to its end. The wait ends when the step said,
// s.at, so that the time spent since the decision (getting the next
// attempt's body, the hooks) is not added to it; or sooner, when what it
// waits for comes (a probe's answer, a slot in line: s.wake) or goes (the
// host's owner resets its hold or pace: s.reset). A wait that goes on
// with one reported already (s.resumed) is not reported again. It returns
// the caller's context's cause if that ends first.
func (c *call) pause(s step) error {
	if !s.resumed {
		c.waiting(s.attempt, s.wait, s.reason, c.gauges(s))
	}
	err := c.sleep(s)
	c.waited(s.reason, time.Since(s.decided()), true)
	return err
}

// sleep waits until s.at, or until s.wake, s.reset or the caller's
// context end the wait; it returns the context's cause if it ended.
func (c *call) sleep(s step) error {
	d := time.Until(s.at)
	if d <= 0 {
		return context.Cause(c.ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-s.wake: // nil, and never ready, but for a hold's probe or a place in line
		return nil
	case <-s.reset: // nil but for a hold's or a pace's wait
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
