package retryhttp

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ErrShed is matched by the error of a request that was not sent because
// its host's concurrency limit (policy.Admission) was reached and no slot
// came free within the policy's maxWait and the request's deadline.
var ErrShed = errors.New("retryhttp: host at its concurrency limit")

// The admission's constants. The limit is judged once a window of
// admitWindow latency samples has come (or admitTick has passed with at
// least admitMinSamples): by the window's tenth percentile, which neither
// a heavy tail nor a mix of fast and slow answers moves, while a queue at
// the host delays every answer; against the host's unloaded latency, the
// lowest such percentile of the last minute. A percentile past
// admitTolerance times the unloaded latency
// cuts the limit in proportion (by half at most); a loss (a 503, a 429,
// a timeout, a reset) cuts it by admitLossCut; a window with neither
// raises it by its square root, at least one, while the limit was used.
//
// The unloaded latency is a minimum over a minute, not an average that
// follows the medians: an average would rise with the queue the limit
// lets build, and judge a host that the client overloads healthy (the
// drift of gradient limiters). A host whose latency truly grew is judged
// anew within the minute. So is one that was overloaded from the start:
// the first answers, before a queue built, show its unloaded latency.
const (
	admitWindow     = 64
	admitMinSamples = 8
	admitTick       = 100 * time.Millisecond
	admitTolerance  = 1.5
	admitLossCut    = 0.9
	// The unloaded latency is the least of admitBuckets minima, each of
	// admitBucket.
	admitBuckets = 6
	admitBucket  = 10 * time.Second
)

// admission is a host's concurrency limit that adapts to the host, in the
// style of Netflix's concurrency-limits and failsafe-go's adaptive
// limiter: attempts hold a slot while in flight; past the limit they wait
// in line for one, first come first served.
//
// Its methods are safe for concurrent use. mu guards everything below it:
// a slot is taken, handed over and given back as one step with the line,
// so that no waiter misses a slot freed while it joins.
type admission struct {
	max int // the policy's MaxConcurrency, where the limit starts

	mu       sync.Mutex
	limit    float64
	inFlight int
	line     []*admitWaiter // oldest first
	// The window of latency samples being gathered, and whether it saw a
	// loss; when it started; and the most attempts in flight at once
	// during the window.
	samples [admitWindow]time.Duration
	n       int
	lost    bool
	started time.Time
	peak    int
	// mins are the least window percentiles of the last buckets, by the
	// number of the bucket (the time divided by admitBucket) they are
	// of; the host's unloaded latency is their least (0: none yet).
	mins [admitBuckets]struct {
		bucket int64
		min    time.Duration
	}

	// limitNow and inFlightNow mirror limit and inFlight for Stats and
	// for the facts of a decision, read without the lock.
	limitNow, inFlightNow atomic.Int64
}

// admitWaiter is an attempt waiting in line for a slot: ch is closed when
// one is handed to it.
type admitWaiter struct {
	ch      chan struct{}
	granted bool
}

// newAdmission returns a limit of max concurrent attempts, where it
// starts.
func newAdmission(max int) *admission {
	a := &admission{max: max, limit: float64(max)}
	a.publish()
	return a
}

// admitFacts are what a decision reads of a host's admission: its limit
// (0: no admission), the attempts in flight, and whether others wait in
// line already.
type admitFacts struct {
	limit, inFlight int
	queued          bool
}

// factsNow reads a for a decision.
func (a *admission) factsNow() admitFacts {
	a.mu.Lock()
	defer a.mu.Unlock()
	return admitFacts{limit: int(a.limit), inFlight: a.inFlight, queued: len(a.line) > 0}
}

// acquire takes a slot for an attempt if one is free and nobody waits,
// and otherwise puts it in line, returning its waiter.
func (a *admission) acquire() (*admitWaiter, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.line) == 0 && a.inFlight < int(a.limit) {
		a.take()
		return nil, true
	}
	w := &admitWaiter{ch: make(chan struct{})}
	a.line = append(a.line, w)
	return w, false
}

// granted reports whether a slot was handed to w.
func (a *admission) granted(w *admitWaiter) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return w.granted
}

// leave takes w out of line, its wait over; it reports whether a slot was
// handed to it meanwhile, which is then its own.
func (a *admission) leave(w *admitWaiter) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w.granted {
		return true
	}
	if i := slices.Index(a.line, w); i >= 0 {
		a.line = slices.Delete(a.line, i, i+1)
	}
	return false
}

// release gives an attempt's slot back at now, with what it showed: its
// latency, when it is a sample (an answer that is no throttle), and
// whether it was lost work (a 503, a 429, a timeout, a reset). Slots free
// under the limit go to the waiters in line, oldest first.
func (a *admission) release(now time.Time, latency time.Duration, sample, lost bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inFlight--
	if a.started.IsZero() {
		a.started = now
	}
	a.lost = a.lost || lost
	if sample && a.n < len(a.samples) {
		a.samples[a.n] = latency
		a.n++
	}
	if a.n == len(a.samples) || now.Sub(a.started) >= admitTick && (a.n >= admitMinSamples || a.lost) {
		a.judge(now)
	}
	a.handOver()
	a.publish()
}

// judge adapts the limit to the window that ended at now, and starts the
// next. a.mu must be held.
func (a *admission) judge(now time.Time) {
	used := a.peak >= int(a.limit)/2
	low := a.low()
	base := a.unloaded(now, low)
	switch {
	case a.lost:
		a.limit *= admitLossCut
	case low == 0:
	case float64(low) > admitTolerance*float64(base):
		a.limit *= max(0.5, admitTolerance*float64(base)/float64(low))
	case used:
		a.limit += max(1, a.limit/10)
	}
	a.limit = min(max(a.limit, 1), float64(a.max))
	a.n, a.lost, a.started, a.peak = 0, false, now, a.inFlight
}

// unloaded notes low, the tenth percentile of a window that ended at now
// (0: none), and returns the host's unloaded latency: the least of the
// last minute. a.mu must be held.
func (a *admission) unloaded(now time.Time, low time.Duration) time.Duration {
	bucket := now.UnixNano() / int64(admitBucket)
	if low > 0 {
		m := &a.mins[bucket%admitBuckets]
		if m.bucket != bucket || low < m.min {
			m.bucket, m.min = bucket, low
		}
	}
	var least time.Duration
	for _, m := range a.mins {
		if m.min > 0 && bucket-m.bucket < admitBuckets && (least == 0 || m.min < least) {
			least = m.min
		}
	}
	return least
}

// low is the tenth percentile of the window's samples, 0 when it has
// none.
func (a *admission) low() time.Duration {
	if a.n == 0 {
		return 0
	}
	s := a.samples[:a.n]
	slices.Sort(s)
	return s[a.n/10]
}

// handOver gives the slots free under the limit to the waiters in line.
// a.mu must be held.
func (a *admission) handOver() {
	for len(a.line) > 0 && a.inFlight < int(a.limit) {
		w := a.line[0]
		a.line = a.line[1:]
		w.granted = true
		a.take()
		close(w.ch)
	}
}

// take counts a slot taken. a.mu must be held.
func (a *admission) take() {
	a.inFlight++
	a.peak = max(a.peak, a.inFlight)
}

// reset lifts the limit back to where it starts, for a host its owner
// says is back; the latency it learnt is forgotten.
func (a *admission) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.limit, a.n, a.lost, a.started = float64(a.max), 0, false, time.Time{}
	a.mins = [admitBuckets]struct {
		bucket int64
		min    time.Duration
	}{}
	a.handOver()
	a.publish()
}

// publish mirrors the limit and the attempts in flight. a.mu must be held.
func (a *admission) publish() {
	a.limitNow.Store(int64(a.limit))
	a.inFlightNow.Store(int64(a.inFlight))
}
