package retryhttp

import "sync"

// overflowHost is where a hostMap files hosts beyond its bound.
const overflowHost = "(other)"

// hostMap keeps one *T per host, for at most max hosts; every later host
// shares one overflow entry, so that a client talking to millions of hosts
// keeps a fixed amount of memory. Entries are never removed: what they
// hold (counters, latency samples) would be lost.
type hostMap[T any] struct {
	max int
	// mu guards m, which grows as hosts are first seen. Readers of an
	// entry already in hand take no lock.
	mu sync.RWMutex
	m  map[string]*T
}

func newHostMap[T any](max int) *hostMap[T] {
	return &hostMap[T]{max: max, m: make(map[string]*T)}
}

// get returns host's entry, creating it if need be.
func (h *hostMap[T]) get(host string) *T {
	h.mu.RLock()
	v := h.m[host]
	h.mu.RUnlock()
	if v != nil {
		return v
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if v = h.m[host]; v != nil {
		return v
	}
	if len(h.m) >= h.max {
		host = overflowHost
		if v = h.m[host]; v != nil {
			return v
		}
	}
	v = new(T)
	h.m[host] = v
	return v
}

// snapshot returns a copy of the map, so that the caller can read the
// entries without holding the lock.
func (h *hostMap[T]) snapshot() map[string]*T {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make(map[string]*T, len(h.m))
	for k, v := range h.m {
		out[k] = v
	}
	return out
}
