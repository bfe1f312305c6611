package retryhttp

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/internal/tokens"
	"github.com/retryhttp/retryhttp/policy"
)

// defaultMaxHosts is the number of hosts a Transport keeps state for when
// newHostTable is given no bound. At a few hundred bytes a host (bucket,
// hedge budget, holds, key and map slot; latencies only for hosts that
// are hedged), 4096 hosts cost about a megabyte, and few clients talk to
// more hosts than that within one outage.
const defaultMaxHosts = 4096

// host is what a Transport keeps of one host (a URL host, lowercased,
// its port kept): its retry budget, its hedge budget, the holds on it,
// the recent latencies of its answers and its statistics. A request
// looks its host up once, when it starts, and keeps the pointer.
type host struct {
	name   string
	bucket bucket      // gRPC's retry throttle
	hedges hedgeBudget // maxExtraLoad's cap on hedges
	holds  holds
	paces  paces
	// admit is the host's concurrency limit, made on the first attempt
	// under a policy with admission; nil otherwise.
	admit    atomic.Pointer[admission]
	sending  meter // the rate it is sent attempts at, which a throttle cuts from
	serving  meter // the rate it answers them without a throttle
	served   atomic.Uint64
	counters *counters // the host's statistics, shared with Stats
	// latencies is made on the first hedged request to the host, so
	// that hosts never hedged do not carry its kilobyte.
	latencies atomic.Pointer[latencyRing]
	seen      atomic.Uint64 // hostTable.clock at the last lookup
}

// latency returns the host's latency sketch, making it if need be.
func (h *host) latency() *latencyRing {
	if l := h.latencies.Load(); l != nil {
		return l
	}
	h.latencies.CompareAndSwap(nil, new(latencyRing))
	return h.latencies.Load()
}

// idle reports whether forgetting h loses nothing worth keeping at now:
// its bucket is full, its hedge budget fresh, and no hold in force. Its
// latencies are lost, which matters little for a host nobody sent to
// for a while.
func (h *host) idle(capacity int64, now time.Time) bool {
	return h.bucket.full(capacity) && h.hedges.fresh() && !h.holds.any(now)
}

// hostTable holds a [host] per host for at most maxHosts hosts, so that a
// client that talks to millions of hosts keeps a bounded amount of memory.
//
// When the table is at its bound, every idle host (see [host.idle]) not
// looked up since the previous eviction goes; if that frees too little,
// the other idle hosts go next, and only then hosts in debt or held,
// least recently looked up first. Dropping a host in debt forgets its
// failures, so under that pressure the throttle errs toward allowing
// retries, never toward blocking them. Each eviction frees at least an
// eighth of the bound, which keeps its cost (a scan and a sort of the
// map) amortised to a constant per new host.
//
// The throttle's limits can change at run time (Transport.SetPolicy): the
// buckets keep their tokens and take the new limits at their next use; a
// count above a lower new capacity reads as that capacity. Without a
// throttle the buckets gate and count nothing, and the counts held so far
// wait, unchanged, for one to return.
//
// Its methods are safe for concurrent use.
type hostTable struct {
	limits   atomic.Uint64 // tokens.Limits; zero: no throttle
	maxHosts int           // bound on len(hosts), at least 1
	// stats keeps each host's counters apart from its record, as Stats
	// documents: they outlive an eviction.
	stats *hostMap[counters]

	// mu guards the map and the two clocks below. It exists only because a
	// Go map cannot be read while it is written; a host's state is not
	// under it, so a goroutine holding a *host never takes it. Lookups of
	// known hosts, by far the common case, share a read lock.
	mu    sync.RWMutex
	hosts map[string]*host
	// clock counts insertions; a host's seen records its value at the
	// host's last lookup, which orders hosts by recency of use.
	clock uint64
	// swept is the clock at the last eviction: a host with seen < swept
	// has not been looked up since, and counts as idle.
	swept uint64
}

// newHostTable returns a table for throttle t keeping at most maxHosts
// hosts (maxHosts <= 0 means defaultMaxHosts). A nil t throttles nothing
// until set gives one.
func newHostTable(t *policy.Throttle, maxHosts int) *hostTable {
	if maxHosts <= 0 {
		maxHosts = defaultMaxHosts
	}
	ht := &hostTable{maxHosts: maxHosts, hosts: make(map[string]*host), stats: newHostMap[counters](maxStatsHosts)}
	ht.set(t)
	return ht
}

// set makes t the throttle, nil meaning none.
//
// MaxTokens and TokenRatio are rounded to the nearest thousandth of a token,
// the precision gRPC's retry design allows. Values that [policy.Config.Validate]
// rejects are clamped rather than trusted: capacity to [0.001, 1000] tokens,
// and the refill to at least 0.001 so that successes always refill a bucket.
func (ht *hostTable) set(t *policy.Throttle) {
	ht.limits.Store(uint64(tokens.LimitsOf(t)))
}

// get returns the record of name, a URL host already lowercased (a call
// lowers it once), making it if need be. A host seen for the first time,
// or again after it was evicted, starts with full budgets and no hold. A
// goroutine that still holds an evicted record may keep using it: its
// updates are simply lost. A lookup of a known host allocates nothing.
func (ht *hostTable) get(name string) *host {
	ht.mu.RLock()
	h := ht.hosts[name]
	clock := ht.clock
	ht.mu.RUnlock()
	if h == nil {
		return ht.insert(name)
	}
	// Store only on change, so that steady lookups of a busy host do not
	// keep writing to its cache line.
	if h.seen.Load() != clock {
		h.seen.Store(clock)
	}
	return h
}

// insert adds a fresh record for name unless another goroutine added one
// since the caller's lookup; it evicts first when the map is at its bound.
func (ht *hostTable) insert(name string) *host {
	counters := ht.stats.get(name) // its own lock: never under mu
	ht.mu.Lock()
	defer ht.mu.Unlock()
	if h := ht.hosts[name]; h != nil {
		return h
	}
	if len(ht.hosts) >= ht.maxHosts {
		ht.evict(time.Now())
	}
	ht.clock++
	h := &host{name: name, counters: counters}
	h.bucket.init(&ht.limits)
	h.seen.Store(ht.clock)
	ht.hosts[name] = h
	return h
}

// evict frees at least an eighth of the bound (at least one host), so that
// the next insertions run without evicting. ht.mu must be held for writing.
//
// Every idle host not looked up since the last eviction goes: it is worth
// nothing. If that is not enough, the others go in this order: idle ones,
// then those in debt or held, least recently looked up first, and among
// equally recent ones those with the most tokens, so that the debt
// forgotten is the oldest and the smallest.
func (ht *hostTable) evict(now time.Time) {
	want := max(ht.maxHosts/8, 1)
	freed := 0
	rest := make([]evictee, 0, len(ht.hosts))
	capacity := tokens.Limits(ht.limits.Load()).Capacity()
	if capacity == 0 {
		capacity = tokens.Max
	}
	for name, h := range ht.hosts {
		idle, seen := h.idle(capacity, now), h.seen.Load()
		if idle && seen < ht.swept {
			delete(ht.hosts, name)
			freed++
			continue
		}
		rest = append(rest, evictee{name: name, idle: idle, seen: seen, tokens: min(h.bucket.tokens.Load(), capacity)})
	}
	if freed < want {
		slices.SortFunc(rest, evictee.compare)
		for _, e := range rest[:min(want-freed, len(rest))] {
			delete(ht.hosts, e.name)
		}
	}
	ht.swept = ht.clock
}

// evictee is a snapshot of one host, taken to rank it for eviction.
type evictee struct {
	name   string
	idle   bool
	seen   uint64
	tokens int64
}

// compare orders evictees first to last to evict: idle before in debt or
// held, then least recently looked up, then most tokens.
func (e evictee) compare(o evictee) int {
	if e.idle != o.idle {
		if e.idle {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(e.seen, o.seen), cmp.Compare(o.tokens, e.tokens))
}

// capacity is the retry budget's capacity in force, in milli-tokens; 0
// without a throttle.
func (ht *hostTable) capacity() int64 {
	return tokens.Limits(ht.limits.Load()).Capacity()
}

// reset ends what the table keeps against name (a URL host, lowercased),
// or against every host for "": its holds and its pace. The host is back,
// its owner says.
func (ht *hostTable) reset(name string) {
	ht.each(func(h *host) {
		if name == "" || h.name == name {
			h.holds.clear()
			h.paces.clear()
			if a := h.admit.Load(); a != nil {
				a.reset()
			}
		}
	})
}

// each calls f with every host held, for the status page; the records
// are read without the table's lock.
func (ht *hostTable) each(f func(*host)) {
	ht.mu.RLock()
	hs := make([]*host, 0, len(ht.hosts))
	for _, h := range ht.hosts {
		hs = append(hs, h)
	}
	ht.mu.RUnlock()
	for _, h := range hs {
		f(h)
	}
}
