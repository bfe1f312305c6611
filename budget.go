package retryhttp

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/retryhttp/retryhttp/policy"
)

// defaultMaxBudgetHosts is the number of hosts whose budgets are kept when
// newBudgets is given no bound. At roughly 150 bytes a host (bucket, key and
// map slot), 4096 hosts cost under a megabyte, and few clients talk to more
// hosts than that within one outage.
const defaultMaxBudgetHosts = 4096

// milliPerToken is the fixed-point scale of a bucket: gRPC's retry design
// gives tokenRatio at most three decimal places, so counting thousandths of
// a token keeps every step exact (ten successes at 0.1 make exactly one
// token, which float64 does not promise) and the whole count fits in one
// machine word that a compare-and-swap can update.
const milliPerToken = 1000

// maxMilliTokens is the largest bucket kept: 1000 tokens, the upper bound
// that gRPC's retry design and [policy.Config.Validate] put on maxTokens.
const maxMilliTokens = 1000 * milliPerToken

// budgets holds the retry throttle of gRPC's retry design (proposal A6), one
// token bucket per host, so that an outage of one host stops retries to it
// without starving retries to the others.
//
// At most maxHosts buckets are kept, so a client that talks to millions of
// hosts holds a bounded amount of memory. A full bucket is indistinguishable
// from a new one, so when the map is at its bound, every full bucket not
// looked up since the previous eviction goes; if that frees too little, the
// other full buckets go next, and only then buckets in debt, least recently
// looked up first. Dropping a bucket in debt forgets its failures, so under
// that pressure the throttle errs toward allowing retries, never toward
// blocking them. Each eviction frees at least an eighth of the bound, which
// keeps its cost (a scan and a sort of the map) amortised to a constant per
// new host.
//
// The throttle's limits can change at run time (Transport.SetPolicy): the
// buckets keep their tokens and take the new limits at their next use; a
// count above a lower new capacity reads as that capacity. Without a
// throttle nothing is gated or counted, and the buckets held so far wait,
// unchanged, for one to return.
//
// A nil *budgets is valid and throttles nothing. Its methods are safe for
// concurrent use.
type budgets struct {
	limits   atomic.Pointer[limits] // nil: no throttle
	maxHosts int                    // bound on len(hosts), at least 1

	// mu guards the map and the two clocks below. It exists only because a
	// Go map cannot be read while it is written; the token counts are not
	// under it, so a goroutine holding a *bucket never takes it. Lookups of
	// known hosts, by far the common case, share a read lock.
	mu    sync.RWMutex
	hosts map[string]*bucket
	// clock counts insertions; a bucket's seen records its value at the
	// bucket's last lookup, which orders buckets by recency of use.
	clock uint64
	// swept is the clock at the last eviction: a bucket with seen < swept
	// has not been looked up since, and counts as idle.
	swept uint64
}

// limits are a throttle's, in milli-tokens.
type limits struct {
	maxMilli   int64 // bucket capacity, in [1, maxMilliTokens]
	ratioMilli int64 // refill per success, at least 1
}

// newBudgets returns the per-host budgets for throttle t, keeping at most
// maxHosts hosts (maxHosts <= 0 means defaultMaxBudgetHosts). A nil t
// throttles nothing until set gives one.
func newBudgets(t *policy.Throttle, maxHosts int) *budgets {
	if maxHosts <= 0 {
		maxHosts = defaultMaxBudgetHosts
	}
	b := &budgets{maxHosts: maxHosts, hosts: make(map[string]*bucket)}
	b.set(t)
	return b
}

// set makes t the throttle, nil meaning none.
//
// MaxTokens and TokenRatio are rounded to the nearest thousandth of a token,
// the precision gRPC's retry design allows. Values that [policy.Config.Validate]
// rejects are clamped rather than trusted: capacity to [0.001, 1000] tokens,
// and the refill to at least 0.001 so that successes always refill a bucket.
func (b *budgets) set(t *policy.Throttle) {
	if t == nil {
		b.limits.Store(nil)
		return
	}
	maxMilli := toMilli(t.MaxTokens)
	b.limits.Store(&limits{maxMilli: maxMilli, ratioMilli: min(toMilli(t.TokenRatio), maxMilli)})
}

// toMilli converts a token amount to milli-tokens, rounded to nearest and
// clamped to [1, maxMilliTokens]; NaN gives 1.
func toMilli(tokens float64) int64 {
	m := math.Round(tokens * milliPerToken)
	if !(m >= 1) {
		return 1
	}
	return int64(min(m, maxMilliTokens))
}

// maxInlineHost is the longest host that For lowers in a stack buffer; a
// longer one (DNS names stop at 253 bytes, plus a port) costs an allocation
// per lookup when it has upper-case letters.
const maxInlineHost = 128

// For returns the bucket of host, a URL.Host with its port kept; hosts are
// compared case-insensitively. A host seen for the first time, or again after
// its bucket was evicted, gets a full bucket. A goroutine that still holds an
// evicted bucket may keep using it: its updates are simply lost.
//
// For returns a nil *bucket, which allows everything and counts nothing,
// when there is no throttle, and on a nil *budgets. For does not allocate
// for a host it already holds, unless that host is longer than
// maxInlineHost or not ASCII, and has upper-case letters.
func (b *budgets) For(host string) *bucket {
	if b == nil || b.limits.Load() == nil {
		return nil
	}
	var buf [maxInlineHost]byte
	if n, inline := lowerASCII(&buf, host); inline {
		return lowered(b, buf[:n])
	}
	return lowered(b, strings.ToLower(host))
}

// forLowered is For for a host already lowercased, as a call has it: the
// host is lowered once per request, not again here.
func (b *budgets) forLowered(host string) *bucket {
	if b == nil || b.limits.Load() == nil {
		return nil
	}
	return lowered(b, host)
}

// lowered returns b's bucket of host, lowercased, making it if need be.
// host is a string, or the bytes For lowered it into: the conversion in
// the map index copies nothing, and the one for insert happens only for a
// host not held yet.
func lowered[H string | []byte](b *budgets, host H) *bucket {
	b.mu.RLock()
	k := b.hosts[string(host)] // converted in the index expression: no copy
	clock := b.clock
	b.mu.RUnlock()
	if k == nil {
		return b.insert(string(host))
	}
	// Store only on change, so that steady lookups of a busy host do not
	// keep writing to its cache line.
	if k.seen.Load() != clock {
		k.seen.Store(clock)
	}
	return k
}

// lowerASCII writes host, ASCII letters lowered, into buf and returns its
// length, or false when host does not fit or is not ASCII.
func lowerASCII(buf *[maxInlineHost]byte, host string) (int, bool) {
	if len(host) > len(buf) {
		return 0, false
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if c >= 0x80 {
			return 0, false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return len(host), true
}

// insert adds a full bucket for key, which is already lowered, unless
// another goroutine added one since the caller's lookup; it evicts first
// when the map is at its bound.
func (b *budgets) insert(key string) *bucket {
	b.mu.Lock()
	defer b.mu.Unlock()
	if k := b.hosts[key]; k != nil {
		return k
	}
	if len(b.hosts) >= b.maxHosts {
		b.evict()
	}
	b.clock++
	k := &bucket{limits: &b.limits}
	k.tokens.Store(maxMilliTokens) // full, whatever the capacity: read as at most it
	k.seen.Store(b.clock)
	b.hosts[key] = k
	return k
}

// evict frees at least an eighth of the bound (at least one host), so that
// the next insertions run without evicting. b.mu must be held for writing.
//
// Every full bucket that is idle (not looked up since the last eviction)
// goes: it is worth nothing. If that is not enough, the other buckets go in
// this order: full ones, then those in debt least recently looked up first,
// and among equally recent ones those closest to full, so that the debt
// forgotten is the oldest and the smallest.
func (b *budgets) evict() {
	want := max(b.maxHosts/8, 1)
	freed := 0
	rest := make([]evictee, 0, len(b.hosts))
	capacity := int64(maxMilliTokens)
	if l := b.limits.Load(); l != nil {
		capacity = l.maxMilli
	}
	for key, k := range b.hosts {
		tokens, seen := min(k.tokens.Load(), capacity), k.seen.Load()
		if tokens >= capacity && seen < b.swept {
			delete(b.hosts, key)
			freed++
			continue
		}
		rest = append(rest, evictee{key: key, full: tokens >= capacity, seen: seen, tokens: tokens})
	}
	if freed < want {
		slices.SortFunc(rest, evictee.compare)
		for _, e := range rest[:min(want-freed, len(rest))] {
			delete(b.hosts, e.key)
		}
	}
	b.swept = b.clock
}

// evictee is a snapshot of one bucket, taken to rank it for eviction.
type evictee struct {
	key    string
	full   bool
	seen   uint64
	tokens int64
}

// compare orders evictees first to last to evict: full before in debt, then
// least recently looked up, then most tokens.
func (e evictee) compare(o evictee) int {
	if e.full != o.full {
		if e.full {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(e.seen, o.seen), cmp.Compare(o.tokens, e.tokens))
}

// len reports how many hosts hold a bucket.
func (b *budgets) len() int {
	if b == nil {
		return 0
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.hosts)
}

// bucket is the token bucket of one host. Its count is one word of
// milli-tokens, updated by compare-and-swap, so Allow, Failure and Success
// never take a lock and never block, however many requests share the host.
// The count may exceed the capacity of the limits in force (after they
// were lowered, or for a bucket made full): it is read as at most the
// capacity, and written back within it.
//
// A nil *bucket is the bucket of an unthrottled host: it allows everything.
type bucket struct {
	tokens atomic.Int64            // milli-tokens, in [0, maxMilliTokens]
	seen   atomic.Uint64           // budgets.clock at the last lookup
	limits *atomic.Pointer[limits] // its budgets' limits; nil in them: no throttle
}

// Allow reports whether a retry or hedge may start: while the bucket holds
// more than half its capacity. Exactly half is not enough, as in gRPC.
func (k *bucket) Allow() bool {
	if k == nil {
		return true
	}
	l := k.limits.Load()
	// 2*tokens cannot overflow: tokens <= maxMilliTokens.
	return l == nil || 2*min(k.tokens.Load(), l.maxMilli) > l.maxMilli
}

// Failure takes one token for an attempt that failed in a way that counts
// against the host (a retryable status or network error, or a pushback that
// forbids retrying). The count does not go below zero.
func (k *bucket) Failure() {
	if k == nil {
		return
	}
	l := k.limits.Load()
	if l == nil {
		return
	}
	for {
		old := k.tokens.Load()
		if old == 0 {
			return // already empty: skip the write
		}
		if k.tokens.CompareAndSwap(old, max(min(old, l.maxMilli)-milliPerToken, 0)) {
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
	l := k.limits.Load()
	if l == nil {
		return
	}
	for {
		old := k.tokens.Load()
		if old >= l.maxMilli {
			return // full, as usual for a healthy host: skip the write
		}
		next := old + l.ratioMilli
		if next >= l.maxMilli {
			// Full is stored as full whatever the capacity, as a new
			// bucket is, so that a capacity raised later finds it full.
			next = maxMilliTokens
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
	l := k.limits.Load()
	if l == nil {
		return math.Inf(1)
	}
	return float64(min(k.tokens.Load(), l.maxMilli)) / milliPerToken
}
