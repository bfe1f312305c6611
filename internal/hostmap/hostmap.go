// Package hostmap keeps a record per key (a host, an address) for a
// bounded number of keys, so that a client that meets millions of hosts
// keeps a bounded amount of memory, while a lookup of a key it knows
// stays one map read under a shared lock. The Transport's hosts, their
// statistics, the address spread's resolved hosts and transports, and a
// fleet's hosts each keep one.
package hostmap

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Rank is what an eviction reads of one record.
type Rank struct {
	// Idle says that forgetting the record loses nothing worth keeping:
	// a key met again starts as it was.
	Idle bool
	// Loss orders records looked up as recently as each other: the one
	// with less to lose goes first.
	Loss int64
}

// Options configure a [Map].
type Options[K comparable, V any] struct {
	// Bound is the number of keys kept apart; less than 1 means 1.
	Bound int
	// Init makes a new key's record in place, which starts as V's zero
	// value; nil leaves it so. It runs under the map's write lock, once
	// for each record made: it may take other locks (always after this
	// one), but must not use this map.
	Init func(key K, v *V)
	// Rank reads a record for an eviction at now. Nil means the map
	// never evicts: past Bound, every new key shares the record of
	// Overflow, made when first needed, so that what the records hold
	// (counters) outlives any number of keys.
	Rank func(v *V, now time.Time) Rank
	// Dropped is called, under the map's write lock, with each record
	// evicted that was not idle: what it held is lost. Nil: nothing is
	// told.
	Dropped func(v *V)
	// Overflow is the key whose record the keys past Bound share, when
	// Rank is nil.
	Overflow K
}

// Map keeps a record (a V) per key for at most Bound keys.
//
// With a Rank, a Map at its bound evicts before it adds: every idle
// record not looked up since the previous eviction goes; if that frees
// too little, the others go next, idle ones first, then least recently
// looked up first, and among records as recent, the one with the least
// Loss. Each eviction frees at least an eighth of the bound, which keeps
// its cost (a scan and a sort of the map) amortised to a constant per new
// key. A goroutine that still holds an evicted record may keep using it:
// its updates are simply lost, and the key met again gets a new record.
//
// Without a Rank, a Map never evicts, and the keys past its bound share
// one record (see [Options.Overflow]).
//
// A Map must be made by [New]. Its methods are safe for concurrent use;
// records are handed out by pointer, and their own state is theirs to
// guard.
type Map[K comparable, V any] struct {
	opts Options[K, V]
	// mu guards m and the two clocks below. It exists only because a Go
	// map cannot be read while it is written; a record's state is not
	// under it, so a goroutine holding a record never takes it. Lookups
	// of known keys, by far the common case, share a read lock.
	mu sync.RWMutex
	m  map[K]*entry[V]
	// clock counts insertions; an entry's seen records its value at the
	// entry's last lookup, which orders entries by recency of use.
	clock uint64
	// swept is the clock at the last eviction: an entry with seen < swept
	// has not been looked up since.
	swept uint64
}

// entry is a record with its recency, made in one allocation.
type entry[V any] struct {
	seen atomic.Uint64 // Map.clock at the last lookup
	v    V
}

// New returns an empty Map configured by o.
func New[K comparable, V any](o Options[K, V]) *Map[K, V] {
	o.Bound = max(o.Bound, 1)
	return &Map[K, V]{opts: o, m: make(map[K]*entry[V])}
}

// Get returns the record of key, making it if need be (see
// [Options.Init]); past the bound, it evicts first, or, without a Rank,
// returns the overflow record. A lookup of a known key allocates nothing
// and writes nothing shared, unless an insertion came since its last
// lookup.
func (m *Map[K, V]) Get(key K) *V {
	m.mu.RLock()
	e := m.m[key]
	clock := m.clock
	m.mu.RUnlock()
	if e == nil {
		return m.insert(key)
	}
	// Store only on change, so that steady lookups of a busy key do not
	// keep writing to its cache line.
	if e.seen.Load() != clock {
		e.seen.Store(clock)
	}
	return &e.v
}

// insert adds a record for key unless another goroutine added one since
// the caller's lookup, making room first when the map is at its bound.
func (m *Map[K, V]) insert(key K) *V {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.m[key]; e != nil {
		return &e.v
	}
	if len(m.m) >= m.opts.Bound {
		if m.opts.Rank == nil {
			key = m.opts.Overflow
			if e := m.m[key]; e != nil {
				return &e.v
			}
		} else {
			m.evict(time.Now())
		}
	}
	m.clock++
	e := &entry[V]{}
	e.seen.Store(m.clock)
	if m.opts.Init != nil {
		m.opts.Init(key, &e.v)
	}
	m.m[key] = e
	return &e.v
}

// evict frees at least an eighth of the bound (at least one entry), so
// that the next insertions run without evicting. m.mu must be held for
// writing.
func (m *Map[K, V]) evict(now time.Time) {
	want := max(m.opts.Bound/8, 1)
	freed := 0
	rest := make([]evictee[K], 0, len(m.m))
	for k, e := range m.m {
		r, seen := m.opts.Rank(&e.v, now), e.seen.Load()
		if r.Idle && seen < m.swept {
			delete(m.m, k) // idle and unused since the last eviction: worth nothing
			freed++
			continue
		}
		rest = append(rest, evictee[K]{key: k, order: orderOf(r, seen)})
	}
	if freed < want {
		// A closure over a plain method, not a generic function value,
		// so that each comparison is one call and the order inlined.
		slices.SortFunc(rest, func(a, b evictee[K]) int { return a.compare(b.order) })
		for _, o := range rest[:min(want-freed, len(rest))] {
			if o.busy() && m.opts.Dropped != nil {
				m.opts.Dropped(&m.m[o.key].v)
			}
			delete(m.m, o.key)
		}
	}
	m.swept = m.clock
}

// evictee is a snapshot of one entry, taken to rank it for eviction: the
// records' state may change during the sort, and a sort needs an order
// that holds still.
type evictee[K comparable] struct {
	key K
	order
}

// order is what an eviction ranks an entry by, packed so that a sort
// compares two words: first whether it is busy (the top bit) and then
// when it was last looked up (a count of insertions, which never reaches
// the top bit), then its loss.
type order struct {
	when uint64
	loss int64
}

// busyBit marks an order's entry as not idle.
const busyBit = 1 << 63

// orderOf returns the order of an entry of rank r last looked up at seen.
func orderOf(r Rank, seen uint64) order {
	if !r.Idle {
		seen |= busyBit
	}
	return order{when: seen, loss: r.Loss}
}

// busy reports whether o's entry was not idle.
func (o order) busy() bool { return o.when&busyBit != 0 }

// compare orders entries first to last to evict: idle before not, then
// least recently looked up, then least loss.
func (o order) compare(p order) int {
	switch {
	case o.when < p.when, o.when == p.when && o.loss < p.loss:
		return -1
	case o == p:
		return 0
	}
	return 1
}

// Peek returns the record of key, or nil when the map has none, without
// making one or counting as a lookup.
func (m *Map[K, V]) Peek(key K) *V {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if e := m.m[key]; e != nil {
		return &e.v
	}
	return nil
}

// Len returns the number of records kept.
func (m *Map[K, V]) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.m)
}

// Append appends every record to dst, in no order, and returns the
// extended slice; a caller that reuses dst lists the map without
// allocating. It does not count as a lookup.
func (m *Map[K, V]) Append(dst []*V) []*V {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, e := range m.m {
		dst = append(dst, &e.v)
	}
	return dst
}

// Each calls f with every key and record, in no order, on a copy of the
// map taken under the read lock: f runs without the lock, so it may use
// the map, and a record added or evicted meanwhile may be missed or
// seen. It does not count as a lookup.
func (m *Map[K, V]) Each(f func(key K, v *V)) {
	type pair struct {
		k K
		e *entry[V]
	}
	m.mu.RLock()
	all := make([]pair, 0, len(m.m))
	for k, e := range m.m {
		all = append(all, pair{k, e})
	}
	m.mu.RUnlock()
	for _, p := range all {
		f(p.k, &p.e.v)
	}
}
