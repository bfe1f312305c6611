package retryhttp

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/policy"
)

// errHedgeLost cancels the attempts that lost to another.
var errHedgeLost = errors.New("retryhttp: another hedge won")

// maxHedgeAttempts bounds the attempts of a hedged request, as gRPC bounds
// maxAttempts: a policy's larger MaxAttempts counts as this many. Every
// attempt of a hedged request may be in flight at once, so the bound keeps
// one request from flooding its host and its memory from growing with a
// policy's figure. Retries, one at a time, have no such bound.
const maxHedgeAttempts = 5

// hedger is the state of one hedged request. Only the hedge loop's
// goroutine touches it; attempts report through results, which has room
// for every attempt so that none ever blocks on it.
type hedger struct {
	c       *call
	p       *policy.Hedge
	max     int // attempts allowed: MaxAttempts, up to maxHedgeAttempts
	results chan hedged
	cancels map[int]context.CancelCauseFunc // attempts in flight
	started map[int]time.Time
	busy    map[int]string // the address each attempt in flight dials, if routed
	sent    int            // attempts sent, transparent resends not counted
	last    *hedged        // the latest non-fatal outcome, kept for the caller
	stopped bool           // no further hedge may start
	spare   bool           // the transparent resend is still unused
	resent  hedged         // the outcome that used it, never sent
	lost    error          // why an attempt got no body, for giveUp
	// notBefore is when the server's pushback lets the next hedge go; a
	// non-fatal status without pushback does not send it any earlier.
	notBefore time.Time
}

type hedged struct {
	n int
	r result
}

// hedge is the hedge loop: attempt 1 at once, each next one after the
// hedging delay (at once after a non-fatal status), until one succeeds or
// fails fatally; then every other attempt is cancelled and closed. It
// returns only when no attempt is running any more.
func (c *call) hedge() (*http.Response, int, error) {
	p := c.rule.Hedge
	h := &hedger{
		c: c, p: p, max: min(p.MaxAttempts, maxHedgeAttempts), spare: true,
		cancels: make(map[int]context.CancelCauseFunc),
		started: make(map[int]time.Time),
		busy:    make(map[int]string),
	}
	// One more than max: the transparent resend takes a place too.
	h.results = make(chan hedged, h.max+1)
	outgrown := c.body.outgrown()
	h.launch(1, false)
	timer := time.NewTimer(h.wait())
	defer timer.Stop()
	for {
		var next <-chan time.Time
		if !h.stopped && h.sent < h.max {
			next = timer.C
		}
		if len(h.cancels) == 0 && next == nil {
			return h.giveUp()
		}
		select {
		case <-next:
			// The timer and the caller's end may be ready together:
			// no hedge starts for a caller that has gone.
			if c.req.Context().Err() == nil && h.gate() {
				h.launch(h.sent+1, false)
				timer.Reset(h.wait())
			}
		case <-outgrown:
			outgrown = nil
			if resp, done, err := h.cutShort(timer); done {
				return resp, h.sent, err
			}
		case hr := <-h.results:
			if resp, done, err := h.handle(hr, timer); done {
				return resp, h.sent, err
			}
		case <-c.req.Context().Done():
			h.cancelAll(context.Cause(c.req.Context()))
			return nil, h.sent, &Error{Attempts: h.sent, Err: context.Cause(c.req.Context())}
		}
	}
}

// launch sends attempt n on its own goroutine, which ends when the
// attempt has its response headers or its error. resend says it sends
// attempt n again, transparently.
func (h *hedger) launch(n int, resend bool) {
	if n > h.sent {
		h.sent = n
	}
	ctx, cancel := context.WithCancelCause(h.c.req.Context())
	h.cancels[n] = cancel
	h.started[n] = time.Now()
	base := h.c.st.base
	if s := h.c.st.spread; s != nil {
		if rt, addr := s.route(h.c.req, h.busy); rt != nil {
			base, h.busy[n] = rt, addr
		}
	}
	h.c.attemptStarted(n, n > 1, resend)
	go func() {
		r := h.c.send(ctx, cancel, n, 0, base)
		r.resend = resend
		h.results <- hedged{n: n, r: r}
	}()
}

// gate decides whether the next hedge may start: the host's budget and the
// body must allow it.
func (h *hedger) gate() bool {
	switch {
	case !h.c.body.replayable():
		h.stop(RefusedBuffer)
	case !h.c.bucket.Allow():
		h.stop(RefusedBudget)
	default:
		return true
	}
	return false
}

// stop lets no further hedge start, and reports why if one could have.
func (h *hedger) stop(why RefusalReason) {
	if !h.stopped && h.sent < h.max {
		h.c.refused(h.sent+1, why)
	}
	h.stopped = true
}

// cutShort ends, at once, every attempt in flight but the one sending the
// body, which has outgrown its buffer: the others can never send it whole,
// and waiting for them would hold back the sender's outcome. Attempts that
// have answered already are not cut off: their results are handled first,
// and may decide the request, as handle reports. No further hedge starts;
// as no hedge may be due yet, none is reported refused.
func (h *hedger) cutShort(timer *time.Timer) (*http.Response, bool, error) {
	// Only the hedge loop receives, so a result counted here is there.
	for len(h.results) > 0 {
		if resp, done, err := h.handle(<-h.results, timer); done {
			return resp, true, err
		}
	}
	h.stopped = true
	sender := h.c.body.sender()
	for n, cancel := range h.cancels {
		if n != sender {
			cancel(errBodyCommitted)
		}
	}
	return nil, false, nil
}

// wait returns the delay before the next hedge and reports it, when a
// next hedge may follow.
func (h *hedger) wait() time.Duration {
	d := h.delay()
	if !h.stopped && h.sent < h.max {
		h.c.waiting(h.sent+1, d, WaitHedgeDelay)
	}
	return d
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

// handle takes one attempt's result. It reports done with the response or
// error for the caller once the request is decided.
func (h *hedger) handle(hr hedged, timer *time.Timer) (*http.Response, bool, error) {
	delete(h.cancels, hr.n)
	delete(h.busy, hr.n)
	c := h.c
	out := c.classify(&hr.r)
	if out == outNeverSent && h.spare && c.resendNow(&hr.r) {
		h.spare = false
		c.attemptDone(hr.n, hr.n > 1, &hr.r, out)
		c.transparentRetry()
		h.resent = hr
		h.launch(hr.n, true)
		return nil, false, nil
	}
	if errors.Is(hr.r.err, errBodyCommitted) || errors.Is(context.Cause(hr.r.ctx), errBodyCommitted) {
		// This attempt got no body, or lost it: the body outgrew its
		// buffer under another attempt, which goes on, or GetBody
		// failed. It could never have been sent whole, and if it
		// answered as cutShort cancelled it, its answer is cut too.
		// No further hedge starts; gate would refuse it anyway.
		h.stopped = true
		switch {
		case hr.n == h.resent.n && hr.r.err != nil:
			// The resend's failure says the most: why attempt n
			// was not sent, then why it was not sent again.
			h.lost = resendError(h.resent.r.err, hr.r.err)
		case h.lost == nil:
			h.lost = hr.r.err
		}
		c.attemptDone(hr.n, hr.n > 1, &hr.r, outCancelled)
		hr.r.cut(errBodyCommitted)
		return nil, false, nil
	}
	c.attemptDone(hr.n, hr.n > 1, &hr.r, out)
	c.account(hr.n, out, &hr.r)
	if hr.r.resp != nil {
		c.latency().add(hr.r.latency)
	}
	switch out {
	case outDone:
		h.cancelAll(errHedgeLost)
		if hr.n > 1 {
			c.hedgeWon()
		}
		return c.deliver(&hr.r, hr.n), true, nil
	case outFatal:
		h.cancelAll(errHedgeLost)
		return nil, true, c.fail(&hr.r, h.sent)
	}
	h.keep(hr)
	h.nonFatal(hr, timer)
	return nil, false, nil
}

// nonFatal sets when the next hedge goes after a non-fatal outcome: at
// once, or when the server's pushback says, or never. When no hedge can
// follow anyway, there is nothing to set or report.
func (h *hedger) nonFatal(hr hedged, timer *time.Timer) {
	if h.stopped || h.sent >= h.max {
		return
	}
	sd := hr.r.delay
	switch sd.Kind {
	case delayStop:
		h.stop(RefusedServerDelay)
	case delayPushback, delayRetryAfter:
		// The deadline is checked against the wait with its jitter, as
		// in the retry loop.
		wait, why := h.c.serverWait(sd, new(int))
		refusal := RefusalReason("")
		switch {
		case why == "":
			refusal = RefusedServerDelay
		case !fitsDeadline(h.c.req.Context(), wait):
			refusal = RefusedDeadline
		}
		if refusal != "" {
			h.stop(refusal)
			return
		}
		h.c.waiting(h.sent+1, wait, why)
		h.notBefore = time.Now().Add(wait)
		timer.Reset(wait)
	default:
		timer.Reset(max(time.Until(h.notBefore), 0))
	}
}

// keep makes hr the outcome handed back if every attempt fails, closing
// the one it replaces.
func (h *hedger) keep(hr hedged) {
	if h.last != nil {
		h.last.r.cut(errHedgeLost)
	}
	h.last = &hr
}

// giveUp ends a request whose attempts all failed: the last non-fatal
// outcome goes back, or, if none had a body to send, why.
func (h *hedger) giveUp() (*http.Response, int, error) {
	if h.last == nil {
		lost := h.lost
		if lost == nil {
			lost = errBodyCommitted
		}
		return nil, h.sent, h.c.fail(&result{err: lost}, h.sent)
	}
	resp, err := h.c.giveUp(&h.last.r, h.last.n)
	return resp, h.sent, err
}

// cancelAll cancels every attempt still in flight and waits for each to
// end, closing what it got: after it returns, no attempt of the request is
// running.
func (h *hedger) cancelAll(cause error) {
	if len(h.cancels) > 0 {
		for _, cancel := range h.cancels {
			cancel(cause)
		}
		tail := h.delay()
		for len(h.cancels) > 0 {
			hr := <-h.results
			delete(h.cancels, hr.n)
			delete(h.busy, hr.n)
			if took := time.Since(h.started[hr.n]); took >= tail {
				// Cut off past the delay, it was as slow as the
				// tail that hedges are sent for, and the time it
				// took, a lower bound, counts there. One cut off
				// sooner tells nothing of the tail: counted, it
				// would drag the delay down and send more hedges.
				h.c.latency().add(took)
			}
			h.c.attemptDone(hr.n, hr.n > 1, &hr.r, outCancelled)
			hr.r.discard()
		}
	}
	if h.last != nil {
		// Superseded by the winner or by the caller's end.
		h.last.r.cut(cause)
		h.last = nil
	}
}

// latency returns the latency sketch of the request's host.
func (c *call) latency() *latencyRing {
	return c.st.latencies.get(strings.ToLower(c.req.URL.Host))
}
