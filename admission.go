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
// admitWindow attempts has ended (or admitTick has passed with at least
// admitMinSamples): by the tenth percentile of its latency samples, which
// neither a heavy tail nor a mix of fast and slow answers moves, while a
// queue at the host delays every answer; against the host's unloaded
// latency, the lowest such percentile of the last minute; and by the
// share of its attempts that were lost work. A percentile past
// admitTolerance times the unloaded latency cuts the limit in proportion;
// a loss rate past admitLossRate cuts it by that rate, when both the
// window's rate (with at least admitMinLosses lost) and the host's loss
// rate smoothed over the last admitWindow attempts or so are past it; by
// half at most, the deeper cut of the two. A window with neither raises
// it by a tenth, at least one, while the limit was used.
//
// Lost work is what a host shows when it is sent more than it can take:
// a throttle (a 429, a 503 with a server delay, a Throttled verdict), a
// 503, a timeout, a reset. Another 5xx is not: a healthy host answers a
// 500 now and then for reasons of its own. Neither a 503 nor another 5xx
// is a latency sample: a fast error is no measure of the host's service,
// and would pull its unloaded latency down.
//
// admitLossRate is a quarter because the two cases lie far apart on
// either side of it. A host that answers a few 503s at random, far from
// its capacity, stays well under it: at 10% lost, a window of 64
// attempts holds 17 losses about once in ten thousand windows, and the
// smoothed rate (whose deviation is then under 3 points) is further
// still; a limit that fell on any loss, as a loss-based limit that cuts
// on each error does, would collapse on such a host. A host that refuses
// what it is sent past its capacity loses the share of the excess, and a
// cut by the rate lost takes the limit back to what was served. Both
// rates must be past it: the window's alone is noisy in short windows,
// and the smoothed one alone still remembers a cut that already worked.
// admitMinLosses keeps a short window from being judged by one or two.
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
	admitLossRate   = 0.25
	admitMinLosses  = 3
	// The unloaded latency is the least of admitBuckets minima, each of
	// admitBucket.
	admitBuckets = 6
	admitBucket  = 10 * time.Second
)

// admitSign is what an attempt that gives its slot back showed of its
// host's load.
type admitSign uint8

const (
	// signNone: nothing; it was not sent, or was cut off by the client.
	signNone admitSign = iota
	// signAnswer: an answer, whose latency is a sample of the host's.
	signAnswer
	// signError: an answer that says nothing of the host's load, a 5xx
	// that is neither a throttle nor a 503; it counts among the window's
	// attempts.
	signError
	// signLost: lost work, a throttle, a 503, a timeout or a reset.
	signLost
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
	mu       sync.Mutex
	max      int // the policy's MaxConcurrency, where the limit starts
	limit    float64
	inFlight int
	line     []*admitWaiter // oldest first
	// The window being gathered: the latency samples of its answers,
	// the attempts that ended in it and those of them lost; when it
	// started; and the most attempts in flight at once during it.
	samples     [admitWindow]time.Duration
	n           int
	ended, lost int
	started     time.Time
	// lossRate is the share of attempts lost, smoothed over the last
	// admitWindow or so, window after window.
	lossRate float64
	peak     int
	// mins are the least window percentiles of the last buckets, by the
	// number of the bucket (the time divided by admitBucket) they are
	// of; the host's unloaded latency is their least (0: none yet).
	mins [admitBuckets]struct {
		bucket int64
		min    time.Duration
	}

	// maxNow, limitNow and inFlightNow mirror max, limit and inFlight,
	// for the check of a policy's maximum, for Stats and for the facts
	// of a decision, read without the lock.
	maxNow, limitNow, inFlightNow atomic.Int64
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

// fit takes max, the MaxConcurrency of the policy in force, as a's
// maximum, once the policy has changed it. A limit at the old maximum
// was held there by the policy, not by the host, and moves to the new
// one; a limit the host brought lower keeps what it learnt, within the
// new maximum. Slots that a higher limit frees go to the line.
func (a *admission) fit(max int) {
	if a.maxNow.Load() == int64(max) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.max, a.limit = max, a.fitted(max)
	a.handOver()
	a.publish()
}

// fitted is the limit fit makes of a's under max. a.mu must be held.
func (a *admission) fitted(max int) float64 {
	if a.limit >= float64(a.max) {
		return float64(max)
	}
	return min(a.limit, float64(max))
}

// shown returns a's limit as fit would make it under max, the
// MaxConcurrency of the policy in force, and the attempts in flight,
// for Stats, without fitting a: a fit hands the slots a higher limit
// frees to the line, and so sends attempts, which a reading must not do.
// The next request of the host fits it.
func (a *admission) shown(max int) (limit, inFlight int) {
	if a.maxNow.Load() == int64(max) {
		return int(a.limitNow.Load()), int(a.inFlightNow.Load())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return int(a.fitted(max)), a.inFlight
}

// settled reports whether forgetting a loses nothing: its limit is where
// it starts, and no attempt holds a slot or waits for one. What it
// learnt of the host's unloaded latency goes, which matters little for a
// host nobody sent to for a while.
func (a *admission) settled() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.limit >= float64(a.max) && a.inFlight == 0 && len(a.line) == 0
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
		a.publish()
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

// release gives an attempt's slot back at now, with what it showed of
// the host (see admitSign): the latency of an answer, or lost work.
// Slots free under the limit go to the waiters in line, oldest first.
func (a *admission) release(now time.Time, latency time.Duration, sign admitSign) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inFlight--
	if a.started.IsZero() {
		a.started = now
	}
	switch sign {
	case signAnswer:
		a.samples[a.n] = latency
		a.n++
	case signLost:
		a.lost++
	}
	if sign != signNone {
		a.ended++
		x := 0.0
		if sign == signLost {
			x = 1
		}
		a.lossRate += (x - a.lossRate) / admitWindow
	}
	if a.ended == admitWindow || now.Sub(a.started) >= admitTick && a.ended >= admitMinSamples {
		a.judge(now)
	}
	a.handOver()
	a.publish()
}

// judge adapts the limit to the window that ended at now, and starts the
// next. a.mu must be held.
func (a *admission) judge(now time.Time) {
	used := a.peak >= int(a.limit)/2
	var low time.Duration
	if a.n >= admitMinSamples {
		low = a.low()
	}
	base := a.unloaded(now, low)
	cut := 1.0
	if a.lost >= admitMinLosses && float64(a.lost) > admitLossRate*float64(a.ended) && a.lossRate > admitLossRate {
		cut = 1 - float64(a.lost)/float64(a.ended)
	}
	if low > 0 && float64(low) > admitTolerance*float64(base) {
		cut = min(cut, admitTolerance*float64(base)/float64(low))
	}
	switch {
	case cut < 1:
		a.limit *= max(0.5, cut)
	case low > 0 && used:
		a.limit += max(1, a.limit/10)
	}
	a.limit = min(max(a.limit, 1), float64(a.max))
	a.n, a.ended, a.lost, a.started, a.peak = 0, 0, 0, now, a.inFlight
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
	a.limit, a.n, a.ended, a.lost, a.started, a.lossRate = float64(a.max), 0, 0, 0, time.Time{}, 0
	a.mins = [admitBuckets]struct {
		bucket int64
		min    time.Duration
	}{}
	a.handOver()
	a.publish()
}

// publish mirrors the limit and the attempts in flight. a.mu must be held.
func (a *admission) publish() {
	a.maxNow.Store(int64(a.max))
	a.limitNow.Store(int64(a.limit))
	a.inFlightNow.Store(int64(a.inFlight))
}
