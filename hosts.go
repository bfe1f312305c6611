package retryhttp

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/internal/hostmap"
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
	admit atomic.Pointer[admission]
	// asking is the rate at which it is asked for: its requests, sent or
	// not, and the further attempts that started (see asked); a pace
	// whose rate is far above it no longer holds them back. sending is
	// the rate at which attempts went (sentN of them so far), which a
	// throttle cuts from: under a hold or a pace that kept many back,
	// the two differ. Both roll as attempts go, so that a window may
	// span a hold. serving is the rate it answers them without a
	// throttle (served so far).
	asking   meter
	sending  meter
	sentN    atomic.Uint64
	serving  meter
	served   atomic.Uint64
	counters *counters // the host's statistics, shared with Stats
	// latencies is made on the first hedged request to the host, so
	// that hosts never hedged do not carry its kilobyte.
	latencies atomic.Pointer[latencyRing]
	resets    resets // ends the waits for a hold or a pace when its owner resets it
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
// its bucket is full, its hedge budget fresh, no hold in force, no rule
// paced, and its concurrency limit, if any, settled (where it starts, no attempt
// holding a slot or waiting for one). Its latencies are lost, which
// matters little for a host nobody sent to for a while.
func (h *host) idle(capacity int64, now time.Time) bool {
	a := h.admit.Load()
	return h.bucket.full(capacity) && h.hedges.fresh() && !h.holds.any(now) && h.paces.n.Load() == 0 &&
		(a == nil || a.settled())
}

// hostTable holds a [host] per host for at most maxHosts hosts, so that a
// client that talks to millions of hosts keeps a bounded amount of memory.
//
// When the table is at its bound, every idle host (see [host.idle]) not
// looked up since the previous eviction goes; if that frees too little,
// the other idle hosts go next, and only then hosts in debt, held, paced
// or with a lowered concurrency limit, least recently looked up first,
// and among equally recent ones those with the most tokens, so that the
// debt forgotten is the oldest and the smallest. Dropping a host in debt
// forgets its failures, so under that pressure the throttle errs toward
// allowing retries, never toward blocking them. Each eviction frees at
// least an eighth of the bound, which keeps its cost amortised to a
// constant per new host (see [hostmap.Map]).
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
	maxHosts int           // bound on the hosts kept, at least 1
	hosts    *hostmap.Map[string, host]
	// stats keeps each host's counters apart from its record, as Stats
	// documents: they outlive an eviction. Past maxStatsHosts, hosts
	// share the counters of overflowHost.
	stats *hostmap.Map[string, counters]
}

// newHostTable returns a table for throttle t keeping at most maxHosts
// hosts (maxHosts <= 0 means defaultMaxHosts). A nil t throttles nothing
// until set gives one.
func newHostTable(t *policy.Throttle, maxHosts int) *hostTable {
	if maxHosts <= 0 {
		maxHosts = defaultMaxHosts
	}
	ht := &hostTable{maxHosts: maxHosts}
	ht.stats = hostmap.New(hostmap.Options[string, counters]{Bound: maxStatsHosts, Overflow: overflowHost})
	ht.hosts = hostmap.New(hostmap.Options[string, host]{Bound: maxHosts, Init: ht.meet, Rank: ht.rank})
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
func (ht *hostTable) get(name string) *host { return ht.hosts.Get(name) }

// meet makes the record of a host met for the first time, or again after
// its eviction. Its counters come from their own map, whose lock is only
// ever taken after the hosts'.
func (ht *hostTable) meet(name string, h *host) {
	h.name = name
	h.counters = ht.stats.Get(name)
	h.bucket.init(&ht.limits)
}

// rank is what an eviction at now reads of h: whether it is idle, and,
// among hosts looked up as recently, its debt, so that the smallest debt
// is forgotten first.
func (ht *hostTable) rank(h *host, now time.Time) hostmap.Rank {
	capacity := tokens.Limits(ht.limits.Load()).Capacity()
	if capacity == 0 {
		capacity = tokens.Max
	}
	return hostmap.Rank{Idle: h.idle(capacity, now), Loss: capacity - min(h.bucket.tokens.Load(), capacity)}
}

// capacity is the retry budget's capacity in force, in milli-tokens; 0
// without a throttle.
func (ht *hostTable) capacity() int64 {
	return tokens.Limits(ht.limits.Load()).Capacity()
}

// reset ends what the table keeps against name (a URL host, lowercased),
// or against every host for "": its holds, the Transport's and, for it,
// the fleet's (those its requests met, and those the fleet shows now of
// rules, the keys of the policy's rules), its pace and its concurrency
// limit. The requests waiting for a
// hold or a pace of the host look again at once. The host is back, its
// owner says.
//
// A named host the table does not know is made when there is a fleet,
// whose holds on it it may meet at the next request.
func (ht *hostTable) reset(name string, fleet Fleet, rules []string) {
	now := time.Now()
	reset := func(h *host) {
		if fleet != nil { // before clear, which lets the fleet's holds met go
			h.holds.forget(rules, func(rule string) FleetView { return fleet.Look(h.name, rule) }, now)
		}
		h.holds.clear()
		h.paces.clear()
		if a := h.admit.Load(); a != nil {
			a.reset()
		}
		h.resets.signal() // last: a wait that looks again sees the host reset
	}
	if name == "" {
		ht.each(reset)
		return
	}
	h := ht.hosts.Peek(name)
	if h == nil && fleet != nil {
		h = ht.get(name)
	}
	if h != nil {
		reset(h)
	}
}

// resets tells the requests waiting for a host's hold or pace that its
// owner reset it: each wait the gate decides gets the channel that the
// next reset closes. The count lets a decision made from facts read
// before a reset learn of it: a wait that takes its channel after the
// reset looks again at once. Its zero value is ready; mu guards ch,
// made by the first wait after a reset and closed by the next reset, so
// that a host nobody waits on makes none.
type resets struct {
	n  atomic.Uint64 // resets so far
	mu sync.Mutex
	ch chan struct{}
}

// count returns the resets so far: read before the facts of a decision.
func (r *resets) count() uint64 { return r.n.Load() }

// after returns the channel the next reset closes, and true, when no
// reset came since count returned n; nil and false otherwise, when the
// decision read facts the reset has changed.
func (r *resets) after(n uint64) (<-chan struct{}, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n.Load() != n {
		return nil, false
	}
	if r.ch == nil {
		r.ch = make(chan struct{})
	}
	return r.ch, true
}

// signal counts a reset and wakes every wait that took a channel before
// it.
func (r *resets) signal() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n.Add(1)
	if r.ch != nil {
		close(r.ch)
		r.ch = nil
	}
}

// each calls f with every host held, for the status page; the records
// are read without the table's lock.
func (ht *hostTable) each(f func(*host)) {
	ht.hosts.Each(func(_ string, h *host) { f(h) })
}
