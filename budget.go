package retryhttp

import (
	"math"
	"sync/atomic"

	"github.com/retryhttp/retryhttp/internal/tokens"
)

// bucket is the token bucket of one host. Its count is one word of
// milli-tokens (see [tokens]), updated by compare-and-swap, so Allow, Failure and Success
// never take a lock and never block, however many requests share the host.
// The count may exceed the capacity of the limits in force (after they
// were lowered, or for a bucket made full): it is read as at most the
// capacity, and written back within it.
//
// A bucket whose limits hold zero, and a nil *bucket, are the bucket of
// an unthrottled host: it allows everything and counts nothing.
type bucket struct {
	tokens atomic.Int64   // milli-tokens, in [0, tokens.Max]
	limits *atomic.Uint64 // its table's [tokens.Limits]; zero: no throttle
}

// init makes k a full bucket under the limits l points to.
func (k *bucket) init(l *atomic.Uint64) {
	k.limits = l
	k.tokens.Store(tokens.Max) // full, whatever the capacity: read as at most it
}

// full reports whether k holds its capacity, as a bucket never used
// does: forgetting it loses nothing.
func (k *bucket) full(capacity int64) bool {
	return k.tokens.Load() >= capacity
}

// Allow reports whether a retry or hedge may start: while the bucket holds
// more than half its capacity. Exactly half is not enough, as in gRPC.
func (k *bucket) Allow() bool {
	if k == nil {
		return true
	}
	capacity := tokens.Limits(k.limits.Load()).Capacity()
	// 2*tokens cannot overflow: tokens <= tokens.Max.
	return capacity == 0 || 2*min(k.tokens.Load(), capacity) > capacity
}

// Failure takes one token for an attempt that failed in a way that counts
// against the host (a retryable status or network error, or a pushback that
// forbids retrying). The count does not go below zero.
func (k *bucket) Failure() {
	if k == nil {
		return
	}
	capacity := tokens.Limits(k.limits.Load()).Capacity()
	if capacity == 0 {
		return
	}
	for {
		old := k.tokens.Load()
		if old == 0 {
			return // already empty: skip the write
		}
		if k.tokens.CompareAndSwap(old, max(min(old, capacity)-tokens.PerToken, 0)) {
			return
		}
	}
}

// Success adds the refill ratio for an attempt that the host answered
// normally. The count does not go above the capacity.
func (k *bucket) Success() {
	if k == nil {
		return
	}
	l := tokens.Limits(k.limits.Load())
	if l == 0 {
		return
	}
	for {
		old := k.tokens.Load()
		if old >= l.Capacity() {
			return // full, as usual for a healthy host: skip the write
		}
		next := old + l.Refill()
		if next >= l.Capacity() {
			// Full is stored as full whatever the capacity, as a new
			// bucket is, so that a capacity raised later finds it full.
			next = tokens.Max
		}
		if k.tokens.CompareAndSwap(old, next) {
			return
		}
	}
}

// Tokens returns the tokens held, to a thousandth, for statistics and tests.
// An unthrottled bucket holds +Inf, which agrees with its Allow.
func (k *bucket) Tokens() float64 {
	if k == nil {
		return math.Inf(1)
	}
	capacity := tokens.Limits(k.limits.Load()).Capacity()
	if capacity == 0 {
		return math.Inf(1)
	}
	return float64(min(k.tokens.Load(), capacity)) / tokens.PerToken
}

// Bounds of a hedge budget, in millionths of a hedge: a fraction as small
// as 0.000001 still earns something.
const (
	microPerHedge = 1_000_000
	// hedgeBurst is the hedges a host may be sent beyond its share, so
	// that a short run of slow answers is still hedged: over any n
	// consecutive requests a host is sent at most maxExtraLoad*n +
	// hedgeBurst hedges.
	hedgeBurst = 10 * microPerHedge
)

// hedgeBudget caps the hedges a host is sent at a fraction of its
// requests (a hedging policy's MaxExtraLoad): each request's first
// attempt earns the fraction of a hedge, each hedge spends a whole one,
// and it holds at most hedgeBurst. It starts empty, so that from a host's
// first request on, it is sent at most MaxExtraLoad of them as hedges;
// the burst serves a host whose slow answers come in a run. Unlike the retry budget, it measures
// load, not failure: it bounds the extra load hedging adds whatever sets
// the delay, even when the delay is wrong. One word updated by
// compare-and-swap, as the bucket is.
type hedgeBudget struct {
	micro atomic.Int64 // in [0, hedgeBurst]
}

// earn adds fraction of a hedge for a request's first attempt, and
// returns what it added, in millionths of a hedge: less than fraction, or
// nothing, when that would pass the burst.
func (b *hedgeBudget) earn(fraction float64) int64 {
	// Rounded down, never up, so that n requests earn no more than
	// fraction*n: a fraction of half a millionth earned a whole one. The
	// tiny lift keeps a fraction that floating point writes a hair
	// below its millionths (0.02 as 19999.999…) from losing one.
	add := int64(math.Floor(fraction*microPerHedge + 1e-6))
	for {
		old := b.micro.Load()
		if old >= hedgeBurst || add <= 0 {
			return 0 // full, as usual: skip the write
		}
		n := min(old+add, hedgeBurst)
		if b.micro.CompareAndSwap(old, n) {
			return n - old
		}
	}
}

// forgo takes back micro millionths of a hedge that earn added for a
// first attempt not sent after all, or what is left of them.
func (b *hedgeBudget) forgo(micro int64) {
	for micro > 0 {
		old := b.micro.Load()
		if b.micro.CompareAndSwap(old, max(old-micro, 0)) {
			return
		}
	}
}

// has reports whether b holds a whole hedge.
func (b *hedgeBudget) has() bool { return b.micro.Load() >= microPerHedge }

// spend takes a whole hedge and reports whether there was one.
func (b *hedgeBudget) spend() bool {
	for {
		old := b.micro.Load()
		if old < microPerHedge {
			return false
		}
		if b.micro.CompareAndSwap(old, old-microPerHedge) {
			return true
		}
	}
}

// fresh reports whether b is as a new host's: empty. Forgetting it loses
// nothing, as a host met again starts empty too.
func (b *hedgeBudget) fresh() bool { return b.micro.Load() == 0 }

// hedges returns the hedges b holds, for the status page.
func (b *hedgeBudget) hedges() float64 { return float64(b.micro.Load()) / microPerHedge }
