package retryhttp

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	// taken at slotAt by the gate before a wait for it; 0: none.
	slot   int
	slotAt time.Time
	// admits are the attempts that hold a slot under the host's
	// concurrency limit, one bit each; waiter is attempt waitFor's place
	// in line for one, until waitUntil.
	admits    uint32
	waiter    *admitWaiter
	waitFor   int
	waitUntil time.Time
	hedger    hedger // the hedge loop's state, kept with the call
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
	case <-s.wake: // nil, and never ready, but for a hold's probe
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

// admit asks the gate whether attempt n (its resend under its number,
// when again is set) may go now, and carries out what it says of the
// host's limits: an attempt takes a slot under the host's concurrency
// limit, or waits in line for one; takes a send slot of the host's pace,
// and waits for it; goes first after a capped hold, or looks again at
// once if another request did; and, a first attempt, earns its share of
// a hedge, or, a hedge, spends one, refused if another request took the
// last one since the facts were read. An attempt refused gives its
// concurrency slot back.
func (c *call) admit(n int, again bool) step {
	now := time.Now()
	if s, waiting := c.inLine(n, now); waiting {
		return s
	}
	f := c.facts(now)
	f.host = c.host.factsFor(c.rule, now, c.st.fleet, asks{holds: c.pol.cfg.Hold != nil, pace: c.pol.pacing,
		budgets: n > 1 && !again, capped: c.capped()})
	f.slotTaken = c.slot == n && !c.slotAt.Before(f.host.pace.cut)
	if a := c.pol.cfg.Admission; a != nil {
		f.host.admit, f.admitted, f.admitWait = c.host.admission(a.Concurrency()).facts(), c.admits&(1<<n) != 0, a.Wait()
	}
	s := gate(&f, n, again, rand.Float64())
	s.at = now.Add(s.wait)
	switch {
	case s.kind == stepNoMore:
		c.unadmit(n)
		return s
	case s.kind == stepWait && s.reason == retrytrace.WaitHold:
		c.slot = 0 // a slot taken before the hold has passed unused: the attempt takes a new one after it
	}
	if s.acquire {
		if w, ok := c.host.admit.Load().acquire(); !ok {
			c.waiter, c.waitFor, c.waitUntil = w, n, now.Add(s.wait)
			return step{kind: stepWait, attempt: n, wait: s.wait, reason: retrytrace.WaitAdmission, at: s.at, wake: w.ch}
		}
		c.admits |= 1 << n
		s.wait, s.at = 0, now // a slot came free since the facts were read
	}
	if s.pace {
		at := c.host.paces.take(c.rule, now)
		c.slot, c.slotAt = n, now
		if wait := at.Sub(now); wait > 0 {
			return step{kind: stepWait, attempt: n, wait: wait, reason: retrytrace.WaitPace, at: at}
		}
	}
	if s.probe {
		if _, ok := c.host.holds.probe(c.rule, s.hold.until, now, now.Add(f.maxServerDelay)); !ok {
			return c.admit(n, again) // another went first: wait for its answer
		}
	}
	if !again {
		c.host.sendingAt(now)
	}
	switch s.hedges {
	case hedgeEarn:
		c.host.hedges.earn(c.plan.hedge.MaxExtraLoad)
	case hedgeSpend:
		if !c.host.hedges.spend() {
			c.unadmit(n)
			s = noMore(n, retrytrace.RefusedHedgeBudget)
		}
	}
	return s
}

// inLine settles the wait of attempt n in line for a concurrency slot at
// now: a slot handed to it is its own, and the gate is asked again; a
// wait that is not over goes on; one that is over leaves the line, and
// the attempt is shed. It reports whether the attempt still waits (or is
// shed), with its step.
func (c *call) inLine(n int, now time.Time) (step, bool) {
	w := c.waiter
	if w == nil || c.waitFor != n {
		return step{}, false
	}
	a := c.host.admit.Load()
	if !a.granted(w) && now.Before(c.waitUntil) {
		return step{kind: stepWait, attempt: n, wait: c.waitUntil.Sub(now), reason: retrytrace.WaitAdmission,
			at: c.waitUntil, wake: w.ch}, true
	}
	c.waiter = nil
	if a.leave(w) {
		c.admits |= 1 << n
		return step{}, false
	}
	s := noMore(n, retrytrace.RefusedShed)
	s.limit = int(a.limitNow.Load())
	return s, true
}

// readmit gives back the concurrency slot of attempt r, whose outcome is
// out, at now, with what it showed of its host: its latency, unless it was
// a throttle or a 503, which is lost work and never a fast answer, as a
// timeout or a reset is.
func (c *call) readmit(r *result, out outcome, now time.Time) {
	if c.admits&(1<<r.n) == 0 {
		return
	}
	c.admits &^= 1 << r.n
	lost := out == outNetwork || throttle(r) || r.resp != nil && r.resp.StatusCode == http.StatusServiceUnavailable
	c.host.admit.Load().release(now, r.latency, r.resp != nil && !lost, lost)
}

// unadmit gives back the concurrency slot attempt n holds, if any, with
// nothing learnt: the attempt was not sent, or was cut off.
func (c *call) unadmit(n int) {
	if c.admits&(1<<n) == 0 {
		return
	}
	c.admits &^= 1 << n
	c.host.admit.Load().release(time.Now(), 0, false, false)
}

// unadmitAll gives back every concurrency slot the request holds, and its
// place in line: the request is over.
func (c *call) unadmitAll() {
	if w := c.waiter; w != nil {
		c.waiter = nil
		if c.host.admit.Load().leave(w) {
			c.admits |= 1 << c.waitFor
		}
	}
	for n := range 32 {
		c.unadmit(n)
	}
}

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
	c.attemptDone(r, out)
	now := time.Now()
	f := c.facts(now)
	f.attempt = attemptFactsOf(r, out)
	more := out == outRetryStatus || out == outNetwork || out == outNeverSent // a further attempt may follow
	if !f.sendsAgain() {
		c.learn(r, out, now)
		c.readmit(r, out, now)
		if more { // the host's budgets, now that they count this attempt
			f.host = c.host.factsFor(c.rule, now, c.st.fleet, asks{budgets: true, capped: c.capped()})
			if c.plan.retry != nil {
				f.schedule = c.plan.retry.Schedule().Duration(c.backoff)
			}
		}
	}
	s := decide(&f, rand.Float64())
	s.at = now.Add(s.wait)
	c.take(r, out, s)
	taken = true
	return s
}

// facts gathers what a decision at now reads of the caller and the
// request.
func (c *call) facts(now time.Time) facts {
	deadline, _ := c.ctx.Deadline()
	return facts{now: now, callerDone: c.ctx.Err() != nil, deadline: deadline, ready: c.waitsForReady(),
		plan: c.plan, sent: c.sent, backoff: c.backoff, spare: c.spare, replayable: c.body.replayable(),
		maxServerDelay: c.pol.cfg.ServerDelayLimit()}
}

// capped reports whether the request's plan caps its hedges.
func (c *call) capped() bool { return c.plan.hedge != nil && c.plan.hedge.MaxExtraLoad > 0 }

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
}

// unresent makes the outcome of the try whose transparent resend a hold
// refused the one the caller gets, unless a later one is kept.
func (c *call) unresent() {
	if c.last.resp == nil && c.last.err == nil {
		c.last = c.resent
	}
	c.resent = result{}
}

// refusal is why step s refused its attempt, when a limit of its host did
// (a hold, the pace), for a request that has nothing else to hand back;
// nil otherwise.
func (c *call) refusal(s step) error {
	switch s.refusal {
	case retrytrace.RefusedHeld:
		return &HoldError{Host: c.host.name, Remaining: s.hold.until.Sub(s.at), Status: s.hold.status}
	case retrytrace.RefusedPaced:
		return fmt.Errorf("host %s paced at %.3g requests/s: its next send slot is %v away (%w)",
			c.host.name, s.rate, s.wait.Round(time.Millisecond), ErrPaced)
	case retrytrace.RefusedShed:
		return fmt.Errorf("host %s has %d attempts in flight, its concurrency limit, and no slot came in time (%w)",
			c.host.name, s.limit, ErrShed)
	}
	return nil
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
		return outFatal // the caller has gone since the attempt ended
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
