package retryhttp

import (
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/retrytrace"
)

// observer counts what one request does, for its rule and its host, and
// calls its hooks. Its methods are called by the goroutine that runs the
// request (its hedge loop's, for hedges), one at a time, and never with a
// lock held. It allocates nothing: the hooks sit in a fixed array.
type observer struct {
	req      *http.Request // the caller's, as the hooks see it
	rule     string        // the rule's key in Stats.Rules
	counters pair
	hooks    [2]*retrytrace.Hooks // the Transport's, then the request's; nil when absent

	// The request's figures, for the Done hook.
	hedges, transparent int
	// retryDelay is the time the request spent waiting with no attempt
	// in flight, as long as each wait lasted.
	retryDelay time.Duration
}

// outcomeNames name each outcome for the hooks; an outDone is a success
// only below 400 (see outcomeOf).
var outcomeNames = [...]retrytrace.Outcome{
	outDone:        retrytrace.OutcomeSuccess,
	outRetryStatus: retrytrace.OutcomeRetryable,
	outNetwork:     retrytrace.OutcomeNetwork,
	outNeverSent:   retrytrace.OutcomeNeverSent,
	outFatal:       retrytrace.OutcomeFatal,
	outCancelled:   retrytrace.OutcomeCancelled,
	outNoBody:      retrytrace.OutcomeFatal,
}

// outcomeOf names what attempt r, whose outcome is out, meant: a response
// handed back as it is is a success below 400, an error status above.
func outcomeOf(r *result, out outcome) retrytrace.Outcome {
	if out == outDone && r.resp != nil && r.resp.StatusCode >= 400 {
		return retrytrace.OutcomeErrorStatus
	}
	return outcomeNames[out]
}

// setHooks keeps t, the Transport's hooks, and r, the request's, calling
// a set given twice once.
func (o *observer) setHooks(t, r *retrytrace.Hooks) {
	o.hooks = [2]*retrytrace.Hooks{t, r}
	if r == t {
		o.hooks[1] = nil
	}
}

func (o *observer) started() {
	o.counters.each(func(x *counters) { x.requests.Add(1) })
}

// attemptStarted reports the start of attempt n. A resend (transparent,
// or after a dial backoff window for a request that waits for ready)
// starts attempt n again: the hooks see it, the counters do not, as it is
// no further attempt.
func (o *observer) attemptStarted(n int, w how) {
	hedge := w.hedge(n)
	switch {
	case w.resend:
	case n > 1:
		b := histogramBucket(n - 1)
		o.counters.each(func(x *counters) {
			x.histogram[b].Add(1)
			if hedge {
				x.hedges.Add(1)
			}
		})
		if hedge {
			o.hedges++
		}
	}
	for _, h := range o.hooks {
		if h != nil && h.AttemptStart != nil {
			h.AttemptStart(retrytrace.AttemptStartInfo{Request: o.req, Rule: o.rule, Attempt: n, Hedge: hedge, Resend: w.resend})
		}
	}
}

// attemptDone reports the end of an attempt. Whether a retry attempt
// failed is counted by learn, once per attempt, as a transparent resend
// may follow this report.
func (o *observer) attemptDone(r *result, out outcome) {
	if out == outCancelled {
		o.counters.each(func(x *counters) { x.hedgesCancelled.Add(1) })
	}
	if o.hooks == [2]*retrytrace.Hooks{} {
		return
	}
	info := retrytrace.AttemptDoneInfo{Request: o.req, Rule: o.rule, Attempt: r.n, Hedge: r.hedge, Resend: r.resend,
		Outcome: outcomeOf(r, out), Err: r.err, Latency: r.latency, ErrorCode: clip(r.code)}
	if r.resp != nil {
		info.StatusCode, info.Header = r.resp.StatusCode, r.resp.Header
	}
	for _, h := range o.hooks {
		if h != nil && h.AttemptDone != nil {
			h.AttemptDone(info)
		}
	}
}

// failed counts a retry attempt that did not succeed.
func (o *observer) failed() {
	o.counters.each(func(x *counters) { x.failed.Add(1) })
}

// holdSet counts an answer that set or extended a hold on its host.
func (o *observer) holdSet() {
	o.counters.each(func(x *counters) { x.holdsSet.Add(1) })
}

func (o *observer) hedgeWon() {
	o.counters.each(func(x *counters) { x.hedgesWon.Add(1) })
}

func (o *observer) transparentRetry() {
	o.transparent++
	o.counters.each(func(x *counters) { x.transparent.Add(1) })
}

// waiting reports a wait of d before attempt n, for why, as it starts: d
// is the wait announced, the longest it may last. The hooks hear of it,
// and it counts as a wait of its kind; how long it lasted is counted when
// it ends (waited), as a probe's answer, a slot in line, a reset or the
// caller may end it sooner.
func (o *observer) waiting(n int, d time.Duration, why retrytrace.WaitReason, g retrytrace.Gauges) {
	switch why {
	case retrytrace.WaitHold:
		o.counters.each(func(x *counters) { x.holdWaits.Add(1) })
	case retrytrace.WaitPace:
		o.counters.each(func(x *counters) { x.paceWaits.Add(1) })
	case retrytrace.WaitAdmission:
		o.counters.each(func(x *counters) { x.admissionWaits.Add(1) })
	}
	for _, h := range o.hooks {
		if h != nil && h.Wait != nil {
			h.Wait(retrytrace.WaitInfo{Request: o.req, Rule: o.rule, Attempt: n, Delay: d, Reason: why, Gauges: g})
		}
	}
}

// waited counts d, how long a wait for why lasted, from its start to its
// end, in the wait time of its kind. idle says no attempt was in flight
// when it started, so that it counts as the request's retry delay.
func (o *observer) waited(why retrytrace.WaitReason, d time.Duration, idle bool) {
	d = max(d, 0)
	if idle {
		o.retryDelay += d
	}
	switch why {
	case retrytrace.WaitHold:
		o.counters.each(func(x *counters) { x.holdWaitNanos.Add(uint64(d)) })
	case retrytrace.WaitPace:
		o.counters.each(func(x *counters) { x.paceWaitNanos.Add(uint64(d)) })
	case retrytrace.WaitAdmission:
		o.counters.each(func(x *counters) { x.admissionWaitNanos.Add(uint64(d)) })
	}
}

// refused reports that attempt n, which the policy would make, is not,
// for why; an empty why (no attempt was due) reports nothing.
func (o *observer) refused(n int, why retrytrace.RefusalReason, g retrytrace.Gauges) {
	switch why {
	case "":
		return
	case retrytrace.RefusedBudget:
		o.counters.each(func(x *counters) { x.budgetRefusals.Add(1) })
	case retrytrace.RefusedFleet:
		o.counters.each(func(x *counters) { x.fleetRefusals.Add(1) })
	case retrytrace.RefusedHeld:
		o.counters.each(func(x *counters) { x.holdRefusals.Add(1) })
	case retrytrace.RefusedHedgeBudget:
		o.counters.each(func(x *counters) { x.hedgeBudgetRefusals.Add(1) })
	case retrytrace.RefusedPaced:
		o.counters.each(func(x *counters) { x.paceRefusals.Add(1) })
	case retrytrace.RefusedShed:
		o.counters.each(func(x *counters) { x.shed.Add(1) })
	}
	for _, h := range o.hooks {
		if h != nil && h.Refused != nil {
			h.Refused(retrytrace.RefusedInfo{Request: o.req, Rule: o.rule, Attempt: n, Reason: why, Gauges: g})
		}
	}
}

// finished reports the end of the request, which sent attempts (see
// retrytrace.DoneInfo.Attempts).
func (o *observer) finished(resp *http.Response, err error, attempts int) {
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	for _, h := range o.hooks {
		if h != nil && h.Done != nil {
			h.Done(retrytrace.DoneInfo{Request: o.req, Rule: o.rule, Attempts: attempts, Hedges: o.hedges,
				TransparentRetries: o.transparent, RetryDelay: o.retryDelay, StatusCode: status, Err: err})
		}
	}
}
