package benchmarks

import (
	"net/http"
	"time"
)

// OutageHost is a host that is down for a while: it answers every
// attempt that arrives in [From, To) (since its start) 503, with no
// delay header, and every other one 200, each [HostLatency] after it
// arrives.
type OutageHost struct {
	ledger
	from, to time.Duration
}

// NewOutageHost returns an OutageHost down in [from, to).
func NewOutageHost(from, to time.Duration) *OutageHost {
	return &OutageHost{ledger: newLedger(), from: from, to: to}
}

// RoundTrip implements http.RoundTripper.
func (h *OutageHost) RoundTrip(req *http.Request) (*http.Response, error) {
	now := time.Now()
	status := http.StatusOK
	if at := h.since(now); at >= h.from && at < h.to {
		status = http.StatusServiceUnavailable
	}
	h.mu.Lock()
	h.record(req, now, now.Add(HostLatency), status)
	h.mu.Unlock()
	return reply(req, now, now.Add(HostLatency), status, nil)
}
