package policy

import (
	"slices"
	"time"
)

// Schedule returns the [Backoff] that drives r's retry waits: r.Backoff
// when it is set, and otherwise the [Exponential] of InitialBackoff growing
// by BackoffMultiplier up to MaxBackoff, jittered by Jitter, or by
// [DefaultJitter] when Jitter is zero. A nil Retry returns the zero
// Exponential, which always waits 0.
//
// Schedule only reads r, so it is safe for concurrent use.
func (r *Retry) Schedule() Backoff {
	if r == nil {
		return Exponential{}
	}
	if r.Backoff != nil {
		return r.Backoff
	}
	jitter := r.Jitter
	if jitter == 0 {
		jitter = DefaultJitter
	}
	return Exponential{
		Initial:    r.InitialBackoff,
		Max:        r.MaxBackoff,
		Multiplier: r.BackoffMultiplier,
		Jitter:     jitter,
	}
}

// MaxRetryAttempts bounds the attempts of a retried request: a
// [Retry.MaxAttempts] above it counts as this many.
const MaxRetryAttempts = 10

// Attempts returns the most attempts r makes, the original request
// included: its MaxAttempts, bounded by [MaxRetryAttempts]. A nil Retry
// makes one attempt. Attempts only reads r, so it is safe for concurrent
// use.
func (r *Retry) Attempts() int {
	if r == nil {
		return 1
	}
	return min(r.MaxAttempts, MaxRetryAttempts)
}

// Retryable reports whether a response with the given status is retried
// under r: whether status is one of r.RetryableStatusCodes and at least
// 400. A listed status below 400 (a 302, say) gives false, as the
// Transport never retries a redirect or an informational answer: it is the
// server's answer, not its failure. A nil Retry retries nothing.
func (r *Retry) Retryable(status int) bool {
	return r != nil && actedOn(status, r.RetryableStatusCodes)
}

// NonFatal reports whether a response with the given status sends the next
// hedge at once instead of ending the request: whether status is one of
// h.NonFatalStatusCodes and at least 400. A listed status below 400 gives
// false, as for [Retry.Retryable]. A nil Hedge treats every status as
// fatal.
func (h *Hedge) NonFatal(status int) bool {
	return h != nil && actedOn(status, h.NonFatalStatusCodes)
}

// actedOn reports whether the Transport acts on status when a policy lists
// it: only 4xx and 5xx are failures worth another attempt. Lists may name
// any status in 100..599, so that a config is not refused for a harmless
// entry, but the predicates must say what the Transport does.
func actedOn(status int, listed []int) bool {
	return status >= 400 && slices.Contains(listed, status)
}

// ServerDelayLimit returns the longest server-directed delay to wait for:
// c.MaxServerDelay, or [DefaultMaxServerDelay] when that is zero or less or
// c is nil.
func (c *Config) ServerDelayLimit() time.Duration {
	if c == nil || c.MaxServerDelay <= 0 {
		return DefaultMaxServerDelay
	}
	return c.MaxServerDelay
}
