package retryhttp

import (
	"time"
)

// The call's observation points: each counts the event for the request's
// rule and host, then calls the hooks. No lock is held while hooks run.

var outcomeNames = [...]Outcome{
	outDone:        OutcomeSuccess,
	outRetryStatus: OutcomeRetryable,
	outNetwork:     OutcomeNetwork,
	outNeverSent:   OutcomeNeverSent,
	outFatal:       OutcomeFatal,
	outCancelled:   OutcomeCancelled,
}

func (c *call) observeStart() {
	c.counters.each(func(x *counters) { x.requests.Add(1) })
}

// attemptStarted reports the start of attempt n. A transparent resend
// starts attempt n again: the hooks see it, the counters do not, as it is
// no further attempt.
func (c *call) attemptStarted(n int, hedge, resend bool) {
	if resend {
		c.transparent++
	} else if hedge {
		c.hedges++
	}
	if n > 1 && !resend {
		b := histogramBucket(n - 1)
		c.counters.each(func(x *counters) {
			x.histogram[b].Add(1)
			if hedge {
				x.hedgesSent.Add(1)
			}
		})
	}
	for _, h := range c.hooks {
		if h.AttemptStart != nil {
			h.AttemptStart(AttemptStart{Request: c.req, Rule: c.ruleName, Attempt: n, Hedge: hedge, Resend: resend})
		}
	}
}

// attemptDone reports the end of attempt n. Whether a retry attempt
// failed is counted by account, once per attempt, as a transparent resend
// may follow this report.
func (c *call) attemptDone(n int, hedge bool, r *result, out outcome) {
	if out == outCancelled {
		c.counters.each(func(x *counters) { x.hedgesCancelled.Add(1) })
	}
	if len(c.hooks) == 0 {
		return
	}
	info := AttemptDone{Request: c.req, Rule: c.ruleName, Attempt: n, Hedge: hedge, Resend: r.resend,
		Outcome: outcomeNames[out], Err: r.err, Latency: r.latency}
	if r.resp != nil {
		info.StatusCode, info.Header = r.resp.StatusCode, r.resp.Header
	}
	for _, h := range c.hooks {
		if h.AttemptDone != nil {
			h.AttemptDone(info)
		}
	}
}

func (c *call) transparentRetry() {
	c.counters.each(func(x *counters) { x.transparent.Add(1) })
}

func (c *call) hedgeWon() {
	c.counters.each(func(x *counters) { x.hedgesWon.Add(1) })
}

func (c *call) waiting(n int, d time.Duration, why WaitReason) {
	for _, h := range c.hooks {
		if h.Wait != nil {
			h.Wait(Wait{Request: c.req, Attempt: n, Length: d, Reason: why})
		}
	}
}

func (c *call) refused(n int, why RefusalReason) {
	if why == RefusedBudget {
		c.counters.each(func(x *counters) { x.budgetRefusals.Add(1) })
	}
	for _, h := range c.hooks {
		if h.Refused != nil {
			h.Refused(Refused{Request: c.req, Attempt: n, Reason: why})
		}
	}
}

// finished reports the end of the request, n attempts made.
func (c *call) finished(n int, status int, err error) {
	for _, h := range c.hooks {
		if h.Done != nil {
			h.Done(Done{Request: c.req, Rule: c.ruleName, Attempts: n, Hedges: c.hedges,
				TransparentRetries: c.transparent, RetryDelay: c.delay, StatusCode: status, Err: err})
		}
	}
}
