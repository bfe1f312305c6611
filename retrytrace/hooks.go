package retrytrace

import (
	"net/http"
	"slices"
	"time"
)

// Hooks are optional functions that a retryhttp.Transport calls as a
// request is retried or hedged, in the style of
// [net/http/httptrace.ClientTrace]. Any field may be nil. They are called
// on the goroutine that runs the request (the hedge loop's, for hedges),
// never with a lock of the Transport held, and must not modify what they
// are given. Nothing is logged by default.
//
// Hooks reach a request in two ways: the Transport's Hooks field for
// every request, and [WithHooks] for one request; when both are set, both
// are called, the Transport's first.
type Hooks struct {
	// AttemptStart is called as an attempt is sent.
	AttemptStart func(AttemptStartInfo)
	// AttemptDone is called when an attempt has its response headers or
	// its error.
	AttemptDone func(AttemptDoneInfo)
	// Wait is called before each wait for an attempt: a retry's
	// backoff or server delay; a hold, the pace or a place in line, the
	// first attempt's included; a dial backoff window, for a request
	// that waits for ready; and for a hedged request each hedging delay
	// as it starts, although the next hedge may then go sooner, after a
	// non-fatal status, or later, when a pushback replaces the delay and
	// is reported in turn.
	Wait func(WaitInfo)
	// Refused is called when an attempt that the policy would make is
	// not made.
	Refused func(RefusedInfo)
	// Done is called once per request, with the final decision.
	Done func(DoneInfo)
}

// AttemptStartInfo describes an attempt being sent.
type AttemptStartInfo struct {
	Request *http.Request // the caller's request; do not modify
	Rule    string        // the rule governing the request, as in retryhttp.Stats.Rules
	Attempt int           // 1-based; a transparent resend repeats its number
	Hedge   bool          // sent as a hedge, in parallel with others
	// Resend says the attempt is sent again under its number: the
	// transparent resend of one that never reached the server, or, for
	// a request that waits for ready, the attempt a dial backoff window
	// held back.
	Resend bool
}

// Outcome names what an attempt's result meant.
type Outcome string

// The outcomes an attempt can have.
const (
	OutcomeSuccess     Outcome = "success"      // a response below 400, handed back as it is
	OutcomeErrorStatus Outcome = "error-status" // a 4xx or 5xx the policy does not retry, handed back as it is
	OutcomeRetryable   Outcome = "retryable"    // a status the policy retries, or a non-fatal one
	OutcomeNetwork     Outcome = "network"      // a transient network error
	OutcomeNeverSent   Outcome = "never-sent"   // provably never reached the server
	OutcomeFatal       Outcome = "fatal"        // an error no attempt can mend
	OutcomeCancelled   Outcome = "cancelled"    // a hedge cut off: another won, or the caller left
)

// AttemptDoneInfo describes an attempt's result.
type AttemptDoneInfo struct {
	Request    *http.Request
	Rule       string
	Attempt    int
	Hedge      bool
	Resend     bool // the attempt was sent again under its number, as AttemptStart says
	Outcome    Outcome
	StatusCode int // 0 when there was no response
	// Header is the response's header, nil when there was no response.
	// It is the response's own map: read it, never modify or keep it.
	Header  http.Header
	Err     error         // nil when there was a response
	Latency time.Duration // from sending to the response headers or the error
	// ErrorCode is the code that the rule's error table
	// (policy.Rule.ErrorCodes) read from the answer, as it was looked up
	// in the table's lists, listed or not: "" when the rule has no table,
	// the status is below 400, or the answer carries no code where the
	// table says. A code longer than 256 bytes, which no API sends, is
	// cut there, ending in "…", so that a server cannot fill logs and
	// spans with its body.
	ErrorCode string
}

// WaitReason says why a wait is as long as it is.
type WaitReason string

// The reasons for a wait.
const (
	WaitBackoff     WaitReason = "backoff"      // the policy's backoff
	WaitRetryAfter  WaitReason = "retry-after"  // the server's Retry-After
	WaitPushback    WaitReason = "pushback"     // the server's X-Retry-Pushback-Ms
	WaitServerDelay WaitReason = "server-delay" // a server delay header the policy names
	WaitDialBackoff WaitReason = "dial-backoff" // the address's connection backoff
	WaitHedgeDelay  WaitReason = "hedge-delay"  // the hedging delay
	WaitClassify    WaitReason = "classify"     // the wait the caller's Classify asked for (Verdict.After)
	WaitRateLimited WaitReason = "rate-limited" // a 429 with no delay signal: at least a second
	WaitHold        WaitReason = "hold"         // the host is held: a rate limit or an outage it announced
	WaitPace        WaitReason = "pace"         // the host is paced: the attempt waits for its send slot
	WaitAdmission   WaitReason = "admission"    // the host is at its concurrency limit: the attempt waits in line
)

// WaitInfo describes a wait before an attempt, the first one included.
type WaitInfo struct {
	Request *http.Request
	Rule    string // the rule governing the request, as in retryhttp.Stats.Rules
	Attempt int    // the attempt that will follow the wait
	// Delay is the wait announced: the longest it lasts. A probe's
	// answer, a slot in line, a reset or the caller may end it sooner;
	// DoneInfo.RetryDelay and the Transport's wait times count the time
	// it lasted.
	Delay  time.Duration
	Reason WaitReason
	Gauges
}

// RefusalReason says why an attempt was not made.
type RefusalReason string

// The reasons an attempt is refused. None shares its string with a
// [WaitReason].
const (
	RefusedBudget       RefusalReason = "budget"         // the host's retry budget is spent
	RefusedBuffer       RefusalReason = "buffer"         // the body can no longer be replayed
	RefusedDeadline     RefusalReason = "deadline"       // the wait would end past the deadline
	RefusedDelayTooLong RefusalReason = "delay-too-long" // the server asked for a wait over maxServerDelay
	RefusedNoRetry      RefusalReason = "no-retry"       // the server asked not to retry (a negative pushback)
	RefusedFleet        RefusalReason = "fleet"          // the fleet's retry budget for the host is spent
	RefusedHeld         RefusalReason = "held"           // the host is held past the deadline or maxServerDelay
	RefusedHedgeBudget  RefusalReason = "hedge-budget"   // the host's hedges have spent maxExtraLoad
	RefusedPaced        RefusalReason = "paced"          // the host's next send slot is past the deadline or maxServerDelay
	RefusedShed         RefusalReason = "shed"           // no slot under the host's concurrency limit came within maxWait or the deadline
)

// RefusedInfo describes an attempt that was not made.
type RefusedInfo struct {
	Request *http.Request
	Rule    string // the rule governing the request, as in retryhttp.Stats.Rules
	Attempt int    // the attempt that was not made
	Reason  RefusalReason
	Gauges
}

// Gauges are the host's limits that a wait or a refusal met, as its
// Stats show them (retryhttp.HostStats): for a wait for the pace
// (WaitPace) or a refusal by it (RefusedPaced), the pace's rate; for a
// wait in line (WaitAdmission) or a shed (RefusedShed), the concurrency
// limit and the attempts in flight under it. Each is 0 where it does not
// apply.
type Gauges struct {
	PaceRate         float64 // requests per second
	ConcurrencyLimit int
	InFlight         int
}

// DoneInfo describes the end of a request, with the per-request figures
// of gRPC's retry metrics.
type DoneInfo struct {
	Request *http.Request
	Rule    string
	// Attempts counts the attempts sent, transparent retries not
	// counted, as retryhttp.Error.Attempts does; Attempts-1 of them were
	// retries or hedges. A request a hold refused before its first
	// attempt has 0.
	Attempts int
	// Hedges counts the attempts sent as hedges, the first not included.
	Hedges int
	// TransparentRetries counts the resends of attempts that never
	// reached the server.
	TransparentRetries int
	// RetryDelay is the time spent with no attempt in flight, waiting to
	// send the next: backoffs, server delays, holds, the pace, a place in
	// line. Each wait counts as long as it lasted, which may be less than
	// the Delay its [WaitInfo] announced (a probe's answer, a slot or a
	// reset ending it sooner, or the caller).
	RetryDelay time.Duration
	StatusCode int // of the response handed back; 0 with an error
	Err        error
}

// JoinHooks returns hooks that call each of hs in turn, skipping nil ones
// and nil fields, so that several adapters (metrics and logs, say) can be
// set as one Transport.Hooks. The result keeps hs; they must not change
// afterwards.
func JoinHooks(hs ...*Hooks) *Hooks {
	hs = slices.DeleteFunc(slices.Clone(hs), func(h *Hooks) bool { return h == nil })
	return &Hooks{
		AttemptStart: joined(hs, func(h *Hooks) func(AttemptStartInfo) { return h.AttemptStart }),
		AttemptDone:  joined(hs, func(h *Hooks) func(AttemptDoneInfo) { return h.AttemptDone }),
		Wait:         joined(hs, func(h *Hooks) func(WaitInfo) { return h.Wait }),
		Refused:      joined(hs, func(h *Hooks) func(RefusedInfo) { return h.Refused }),
		Done:         joined(hs, func(h *Hooks) func(DoneInfo) { return h.Done }),
	}
}

// joined calls the field that field picks of each of hs, or is nil when
// none has it.
func joined[T any](hs []*Hooks, field func(*Hooks) func(T)) func(T) {
	var fs []func(T)
	for _, h := range hs {
		if f := field(h); f != nil {
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		return nil
	}
	return func(v T) {
		for _, f := range fs {
			f(v)
		}
	}
}
