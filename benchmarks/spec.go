package benchmarks

import (
	"math"
	"slices"
	"time"

	"github.com/retryhttp/retryhttp/policy"
)

// Spec is the policy of one scenario, the same for every peer in it. Each
// peer maps it into its own configuration; see [Peer.New].
type Spec struct {
	// MaxAttempts counts every attempt, the first included, for retries
	// and hedges alike.
	MaxAttempts int
	// The wait before retry n (n = 0 for the first retry) is
	// min(InitialBackoff*Multiplier^n, MaxBackoff), times a uniform factor
	// in [1-Jitter, 1+Jitter].
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	Multiplier     float64
	Jitter         float64
	// Statuses are the answers that are retried, or that under hedging
	// send the next hedge; every other answer is handed back.
	Statuses []int
	// HedgeDelay is the wait before each next hedge, for the hedgers
	// whose delay is fixed ([DelayFixed]), and for those whose delay
	// follows a quantile until the host's latencies are known.
	HedgeDelay time.Duration
	// HedgeQuantile is the quantile of the host's recent latencies that
	// the hedgers with a [DelayQuantile] wait before each next hedge.
	HedgeQuantile float64
	// MaxExtraLoad is the hedge budget of the hedgers that have one: at
	// most this fraction of the requests sent to a host are hedges.
	// Zero means none. failsafe-go's budget, which caps hedges in flight
	// rather than their share of requests, takes it as its rate.
	MaxExtraLoad float64
	// Throttle is the budget of the peers that have one: a token bucket
	// per host as retryhttp keeps it. Peers with another kind of budget
	// derive theirs from it (see [Spec.BudgetShare]).
	Throttle policy.Throttle
}

// Retries reports whether an answer with this status is retried (or, under
// hedging, sends the next hedge) under s.
func (s Spec) Retries(status int) bool { return slices.Contains(s.Statuses, status) }

// Wait is the wait before retry n (0 for the first) with the jitter left
// out: the middle of the range the Spec allows.
func (s Spec) Wait(n int) time.Duration {
	d := float64(s.InitialBackoff) * math.Pow(s.Multiplier, float64(n))
	return time.Duration(min(d, float64(s.MaxBackoff)))
}

// BudgetShare is the failure share at which the Spec's throttle stops
// retries: each failure takes one token and each success gives back
// TokenRatio, so the bucket drains once more than ratio/(1+ratio) of
// attempts fail (0.2 for a ratio of 0.25). A budget that caps the share of
// retries among requests in flight uses it as that cap.
func (s Spec) BudgetShare() float64 {
	return s.Throttle.TokenRatio / (1 + s.Throttle.TokenRatio)
}

// throttle is policy.Default's throttle: 100 tokens, ratio 0.25.
var throttle = *policy.Default().Throttle

// EverydaySpec is the spec of the success path, the upload, Retry-After and
// keep-alive scenarios: policy.Default's retry (3 attempts, 100 ms doubling
// to 2 s, jitter 0.2, statuses 429, 502, 503, 504) and a 50 ms hedge delay.
func EverydaySpec() Spec {
	r := policy.Default().Rules[0].Retry
	return Spec{
		MaxAttempts:    r.MaxAttempts,
		InitialBackoff: r.InitialBackoff,
		MaxBackoff:     r.MaxBackoff,
		Multiplier:     r.BackoffMultiplier,
		Jitter:         r.Jitter,
		Statuses:       slices.Clone(r.RetryableStatusCodes),
		HedgeDelay:     50 * time.Millisecond,
		Throttle:       throttle,
	}
}

// LoadSpec is the spec of the outage and flaky scenarios: 5 attempts, waits of
// 1 ms doubling to 5 ms so that a run takes little time, and a 10 ms hedge
// delay.
func LoadSpec() Spec {
	s := EverydaySpec()
	s.MaxAttempts = 5
	s.InitialBackoff, s.MaxBackoff = time.Millisecond, 5*time.Millisecond
	s.HedgeDelay = 10 * time.Millisecond
	return s
}

// TailSpec is the spec of the heavy-tail scenarios: hedge up to 3
// attempts, the next one 10 ms after the last (or after the 0.95 quantile
// of the host's latencies), treat 502, 503 and 504 as non-fatal, and,
// under a hedge budget, send at most 2% more requests.
func TailSpec() Spec {
	s := EverydaySpec()
	s.MaxAttempts = 3
	s.Statuses = []int{502, 503, 504}
	s.HedgeDelay = 10 * time.Millisecond
	s.HedgeQuantile = 0.95
	s.MaxExtraLoad = 0.02
	return s
}

// ShortDelaySpec is TailSpec with a hedging delay of 1 ms, under every
// answer of the heavy tail: a delay set wrong, which hedges every request
// unless a budget stops it.
func ShortDelaySpec() Spec {
	s := TailSpec()
	s.HedgeDelay = time.Millisecond
	return s
}
