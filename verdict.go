package retryhttp

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Verdict is what a [Transport.Classify] function says of one attempt's
// outcome, as a rule's error codes (policy.ErrorCodes) and the server's
// own X-Should-Retry say it too: one of the five verdicts below, which
// may carry the wait the next attempt must keep ([Verdict.After]).
// Verdicts are comparable with ==; a verdict with a wait equals only the
// same verdict with the same wait, to the microsecond.
type Verdict int64

// The verdicts. A value not listed here, with or without a wait, means
// UsePolicy.
const (
	// UsePolicy leaves the outcome to the rule: its error codes (see
	// policy.ErrorCodes), then the server's own X-Should-Retry or
	// Stripe-Should-Retry, then its retryable (or non-fatal) status
	// codes and the network errors it retries. It is the zero Verdict.
	UsePolicy Verdict = iota
	// Retryable makes the outcome one the rule retries, or, under a
	// hedging rule, one that sends the next hedge at once. The
	// idempotency rules still apply: a request that is not idempotent is
	// not sent again after a response or an error that may show the
	// server acted on it. It does not retry a redirect, an informational
	// answer, a certificate error or a malformed URL, which the Transport
	// never retries.
	Retryable
	// RetryableUnprocessed is Retryable for an outcome the server did
	// not act on, such as a rate-limit refusal: it is retried whatever
	// the method, as a 429 is.
	RetryableUnprocessed
	// Final hands the response (or the error) back at once, whatever the
	// rule lists.
	Final
	// Throttled is RetryableUnprocessed for an answer that says the host
	// refused for load, not for this request, as AWS's
	// ThrottlingException in a 400 does: it is retried whatever the
	// method, as a 429 is, and counted as a throttle, which paces the
	// host's requests of the rule (see policy.Pace).
	Throttled
)

// A Verdict's bits: its kind in the low eight (so that a small value that
// is no verdict stays one), then whether it carries a wait, then the wait
// in microseconds.
const (
	verdictKind      = 0xff
	verdictTimed     = 1 << 8
	verdictWaitShift = 9
	maxVerdictWait   = (1 << (63 - verdictWaitShift)) - 1 // microseconds: over 500 years
)

// After returns v asking for d before the next attempt, in place of the
// server's delay headers and the rule's backoff, as an API's own rule may
// (GitHub asks for a minute, longer each time, after a secondary rate
// limit): RetryableUnprocessed.After(time.Minute << (attempt - 1)).
//
// The wait is treated as a server delay: jittered up only (by at most a
// tenth, at most a second), and not waited for when it is longer than the
// policy's maxServerDelay or would end past the request's deadline: the
// response then goes back at once. A d of 0 or less means at once (a
// reset that has passed already). Under a hedging rule it holds the next
// hedge back as a pushback does. RetryableUnprocessed or Throttled with a
// wait (this one, or else the server's delay) also holds the host's other
// requests of the same rule, when the policy has holds (see
// [policy.Config.Hold]); so does a 429 or 503 under any verdict. The wait
// stands in place of the server's delay for that hold too: a 429 whose
// Retry-After says 30 s, under RetryableUnprocessed.After(2 * time.Second),
// holds the host, and this request's retry, 2 s; After(0) holds nothing.
// Final and an outcome that is not retried ignore it for the next
// attempt. The wait is kept to the microsecond, rounded up.
func (v Verdict) After(d time.Duration) Verdict {
	var us int64
	if d > 0 {
		us = min(int64((d+time.Microsecond-1)/time.Microsecond), maxVerdictWait)
		if d > time.Duration(math.MaxInt64)-time.Microsecond {
			us = maxVerdictWait
		}
	}
	return v.kind() | verdictTimed | Verdict(us<<verdictWaitShift)
}

// kind returns v without its wait, and UsePolicy for a value that is no
// verdict.
func (v Verdict) kind() Verdict {
	if k := v & verdictKind; v >= 0 && k <= Throttled {
		return k
	}
	return UsePolicy
}

// wait returns the wait v asks for, if it asks for one.
func (v Verdict) wait() (time.Duration, bool) {
	if v < 0 || v&verdictTimed == 0 {
		return 0, false
	}
	us := int64(v >> verdictWaitShift)
	if us > int64(tooLong/time.Microsecond) {
		return tooLong, true
	}
	return time.Duration(us) * time.Microsecond, true
}

// timed reports whether v asks for a wait of its own.
func (v Verdict) timed() bool { _, ok := v.wait(); return ok }

// String returns the verdict's name, and its wait when it has one:
// "RetryableUnprocessed.After(1m0s)"; a value that is no verdict is
// "Verdict(n)".
func (v Verdict) String() string {
	var name string
	switch k := v & verdictKind; {
	case v < 0 || k > Throttled:
		return "Verdict(" + strconv.FormatInt(int64(v), 10) + ")"
	case k == UsePolicy:
		name = "UsePolicy"
	case k == Retryable:
		name = "Retryable"
	case k == RetryableUnprocessed:
		name = "RetryableUnprocessed"
	case k == Throttled:
		name = "Throttled"
	default:
		name = "Final"
	}
	if d, ok := v.wait(); ok {
		return name + ".After(" + d.String() + ")"
	}
	return name
}

// serverVerdict is the verdict a response's X-Should-Retry gives, as the
// OpenAI and Anthropic APIs send it on their errors, or else its
// Stripe-Should-Retry, which Stripe's API sends with the same meaning:
// "true" is RetryableUnprocessed (the server says it may be sent again,
// whatever the method), "false" is Final. It is read on statuses 400 and
// above only; any other value, or none, is UsePolicy.
func serverVerdict(resp *http.Response) Verdict {
	if resp.StatusCode < 400 {
		return UsePolicy
	}
	if v := shouldRetry(resp.Header, headerShouldRetry); v != UsePolicy {
		return v
	}
	return shouldRetry(resp.Header, headerStripeShouldRetry)
}

// shouldRetry reads h's header name (canonical), a server's verdict on
// whether its answer may be retried: "true" or "false", in any case.
func shouldRetry(h http.Header, name string) Verdict {
	v, ok := firstValue(h, name)
	switch {
	case !ok:
	case strings.EqualFold(trimOWS(v), "true"):
		return RetryableUnprocessed
	case strings.EqualFold(trimOWS(v), "false"):
		return Final
	}
	return UsePolicy
}

// or returns v, a caller's verdict, or, when that leaves the outcome to
// the policy, server, the server's own, asking for v's wait if it has one.
func (v Verdict) or(server Verdict) Verdict {
	if v.kind() != UsePolicy || server == UsePolicy {
		return v
	}
	if d, ok := v.wait(); ok {
		return server.After(d)
	}
	return server
}

// The headers of the server's own verdict on whether its answer may be
// retried, in canonical form: the LLM APIs', and Stripe's.
const (
	headerShouldRetry       = "X-Should-Retry"
	headerStripeShouldRetry = "Stripe-Should-Retry"
)

// judged applies v, the caller's verdict (or the server's), to r, whose
// outcome by the rule's lists is out: the outcome it becomes. No verdict
// retries what the Transport never retries (see neverRetried): there, a
// verdict that asks for another attempt is moot.
func judged(v Verdict, r *result, out outcome) outcome {
	r.verdict = v
	switch v.kind() {
	case Retryable, RetryableUnprocessed, Throttled:
		switch {
		case neverRetried(r):
			r.verdict = UsePolicy
			return out
		case r.err != nil:
			return outNetwork
		}
		return outRetryStatus
	case Final:
		if r.err != nil {
			return outFatal
		}
		return outDone
	}
	return out
}

// neverRetried reports whether r is an outcome that no verdict makes worth
// another attempt: a redirect or an informational answer, which is the
// server's answer, not its failure (a 2xx may still be one the caller
// knows to be a failure), a certificate that could not be verified, or a
// URL that could never be sent, which the next attempt would meet again.
func neverRetried(r *result) bool {
	if r.err != nil {
		return certificateError(r.err) || malformed(r.err)
	}
	status := r.resp.StatusCode
	return status < 200 || status >= 300 && status < 400
}

// unprocessed reports whether the verdict on r says the server did not act
// on it, so that it may be sent again whatever its method.
func (r *result) unprocessed() bool { return r.verdict.unprocessed() }

// unprocessed reports whether v says the server did not act on the
// attempt: RetryableUnprocessed, or Throttled.
func (v Verdict) unprocessed() bool {
	k := v.kind()
	return k == RetryableUnprocessed || k == Throttled
}
