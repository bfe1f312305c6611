package redisfleet

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"
)

// host returns the state of the host named name, making it on first
// meeting. A new host's holds are to be fetched from the store, with the
// next round trip that can wait: a member that meets hosts without end
// still makes at most one round trip per FlushInterval for them.
//
// A known host costs a map lookup under the read lock and no allocation.
func (f *Fleet) host(name string) *host {
	f.mu.RLock()
	h := f.hosts[name]
	clock := f.clock
	f.mu.RUnlock()
	if h == nil {
		return f.insert(name)
	}
	// Store only on change, so that steady lookups of a busy host do not
	// keep writing its cache line.
	if h.seen.Load() != clock {
		h.seen.Store(clock)
	}
	return h
}

// tracked returns the state of the host named name, or nil when the
// member has not met it (or has forgotten it).
func (f *Fleet) tracked(name string) *host {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.hosts[name]
}

// insert adds a host named name unless another goroutine added it since
// the caller's lookup, evicting first when the map is at its bound.
func (f *Fleet) insert(name string) *host {
	f.mu.Lock()
	if h := f.hosts[name]; h != nil {
		f.mu.Unlock()
		return h
	}
	if len(f.hosts) >= f.opts.MaxHosts {
		f.evict(time.Now().UnixMilli())
	}
	f.clock++
	h := &host{
		name:      name,
		budgetKey: f.opts.Prefix + budgetKeyPart + name,
		holdKey:   f.opts.Prefix + holdKeyPart + name,
	}
	h.seen.Store(f.clock)
	h.successes.Store(rand.Uint64N(successWeight)) // the sampling's phase
	h.fetch.Store(true)
	f.hosts[name] = h
	f.mu.Unlock()
	signal(f.wake)
	return h
}

// evict frees at least an eighth of the bound (at least one host), so
// that the next insertions run without evicting; f.mu must be held for
// writing. now is Unix ms.
//
// Every quiet host (nothing to send, no hold in force) that is idle (not
// looked up since the last eviction) goes: it holds nothing the store
// does not. If that is not enough, the rest go quiet ones first, then
// least recently looked up first; their pending deltas are lost and
// counted in Stats.Dropped. The cost, a scan and a sort, is amortised
// to a constant per new host.
func (f *Fleet) evict(now int64) {
	want := max(f.opts.MaxHosts/8, 1)
	freed := 0
	rest := make([]evictee, 0, len(f.hosts))
	for name, h := range f.hosts {
		quiet, seen := h.quiet(now), h.seen.Load()
		if quiet && seen < f.swept {
			delete(f.hosts, name)
			freed++
			continue
		}
		rest = append(rest, evictee{name: name, quiet: quiet, seen: seen})
	}
	if freed < want {
		slices.SortFunc(rest, evictee.compare)
		for _, e := range rest[:min(want-freed, len(rest))] {
			if !e.quiet {
				f.stats.dropped.Add(1)
			}
			delete(f.hosts, e.name)
		}
	}
	f.swept = f.clock
}

// evictee is a snapshot of one host, taken to rank it for eviction.
type evictee struct {
	name  string
	quiet bool
	seen  uint64
}

// compare orders evictees first to last to evict: quiet before busy,
// then least recently looked up.
func (e evictee) compare(o evictee) int {
	if e.quiet != o.quiet {
		if e.quiet {
			return -1
		}
		return 1
	}
	return cmp.Compare(e.seen, o.seen)
}
