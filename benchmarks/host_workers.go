package benchmarks

import (
	"net/http"
	"time"
)

// Loss is a stretch of time during which a [WorkerHost] runs short of
// workers. The zero Loss loses none.
type Loss struct {
	// Workers is how many workers are gone.
	Workers int
	// From and To bound the loss, since the host's start: a lost worker
	// starts no attempt in [From, To); one it started before From runs
	// to its end.
	From, To time.Duration
}

// WorkerHost is a host that never refuses: its workers serve attempts
// one at a time, each for the same Service time, in the order of
// arrival (one FIFO queue, unbounded), and answer each 200. It does not
// notice abandonment: an attempt whose caller gave up while it waited in
// the queue is served all the same, and holds its worker for as long as
// any other. Its capacity is Workers/Service attempts per second, less
// during its [Loss]; its unloaded latency is Service.
//
// The schedule is worked out when an attempt arrives (the earliest start
// a worker allows, which is the queue's order), so the host runs no
// goroutine of its own.
type WorkerHost struct {
	ledger
	service time.Duration
	loss    Loss
	free    []time.Time // when each worker is next free; guarded by ledger.mu
}

// NewWorkerHost returns a WorkerHost of workers workers (at least 1),
// each taking service over an attempt, that loses loss.Workers of them
// (at most all) during loss.
func NewWorkerHost(workers int, service time.Duration, loss Loss) *WorkerHost {
	workers = max(workers, 1)
	loss.Workers = min(max(loss.Workers, 0), workers)
	h := &WorkerHost{ledger: newLedger(), service: service, loss: loss, free: make([]time.Time, workers)}
	for i := range h.free {
		h.free[i] = h.start
	}
	return h
}

// RoundTrip implements http.RoundTripper.
func (h *WorkerHost) RoundTrip(req *http.Request) (*http.Response, error) {
	now := time.Now()
	h.mu.Lock()
	w, start := h.earliest(now)
	at := start.Add(h.service)
	h.free[w] = at
	h.record(req, now, at, http.StatusOK)
	h.mu.Unlock()
	return reply(req, now, at, http.StatusOK, nil)
}

// earliest returns the worker that can start an attempt arrived at now
// the soonest, and when. The workers lost are the last ones; ties go to
// the first. The caller holds h.mu.
func (h *WorkerHost) earliest(now time.Time) (int, time.Time) {
	from, to := h.start.Add(h.loss.From), h.start.Add(h.loss.To)
	best, bestAt := -1, time.Time{}
	for i, free := range h.free {
		at := free
		if now.After(at) {
			at = now
		}
		if i >= len(h.free)-h.loss.Workers && !at.Before(from) && at.Before(to) {
			at = to
		}
		if best < 0 || at.Before(bestAt) {
			best, bestAt = i, at
		}
	}
	return best, bestAt
}
