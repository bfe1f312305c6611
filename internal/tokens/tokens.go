// Package tokens is the arithmetic of gRPC's retry throttle in
// milli-tokens, as the Transport's per-host buckets and a fleet's shared
// ones both count: the scale, the largest bucket, the rounding and
// clamping of a throttle's figures, and the one word that holds them.
//
// gRPC's retry design gives tokenRatio at most three decimal places, so
// counting thousandths of a token keeps every step exact (ten successes
// at 0.1 make exactly one token, which float64 does not promise), and a
// whole count fits in one machine word that a compare-and-swap updates.
//
// Everything here is pure and safe for concurrent use.
package tokens

import (
	"math"

	"github.com/retryhttp/retryhttp/policy"
)

// PerToken is the number of milli-tokens in a token: the scale of every
// count here.
const PerToken = 1000

// Max is the largest bucket, in milli-tokens: 1000 tokens, the upper
// bound that gRPC's retry design and [policy.Config.Validate] put on
// maxTokens.
const Max = 1000 * PerToken

// ToMilli converts a token amount to milli-tokens, rounded to nearest and
// clamped to [1, Max]; NaN gives 1. A figure that Validate rejects is
// clamped rather than trusted, and the floor of 1 keeps a capacity above
// zero and makes every success refill something.
func ToMilli(tokens float64) int64 {
	m := math.Round(tokens * PerToken)
	if !(m >= 1) {
		return 1
	}
	return int64(min(m, Max))
}

// Limits are a throttle's capacity and refill per success in
// milli-tokens, packed in one word (capacity<<32 | refill) so that an
// atomic.Uint64 holds them and a bucket reads both in one load. The zero
// Limits mean no throttle. Capacity is in [1, Max], and refill in [1,
// capacity].
type Limits uint64

// LimitsOf returns t's limits: MaxTokens and TokenRatio rounded to the
// nearest thousandth of a token by [ToMilli], the refill at most the
// capacity. A nil t gives the zero Limits.
func LimitsOf(t *policy.Throttle) Limits {
	if t == nil {
		return 0
	}
	capacity := ToMilli(t.MaxTokens)
	return Limits(uint64(capacity)<<32 | uint64(min(ToMilli(t.TokenRatio), capacity)))
}

// Capacity is the bucket's size in milli-tokens; 0 for no throttle.
func (l Limits) Capacity() int64 { return int64(l >> 32) }

// Refill is what a success adds, in milli-tokens; 0 for no throttle.
func (l Limits) Refill() int64 { return int64(l & math.MaxUint32) }
