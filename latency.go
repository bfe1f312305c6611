package retryhttp

import (
	"math"
	"slices"
	"sync/atomic"
	"time"
)

// Sizes of the latency sketch behind an adaptive hedging delay.
const (
	latencySamples    = 128 // kept per host: enough for a p99 to mean something
	minLatencySamples = 20  // below this, the fixed hedgingDelay is used
)

// latencyRing keeps the latest latencies seen to one host in fixed memory.
// Recording takes no lock: an atomic index picks the slot and an atomic
// store fills it. A reader may see a slot whose writer has taken the index
// but not stored yet; it holds the older sample or 0, and zeros are
// skipped, which is harmless for a quantile over a sliding window.
type latencyRing struct {
	n     atomic.Uint64
	slots [latencySamples]atomic.Int64
}

func (r *latencyRing) add(d time.Duration) {
	if d <= 0 {
		return
	}
	i := r.n.Add(1) - 1
	r.slots[i%latencySamples].Store(int64(d))
}

// quantile returns the q-quantile (0 < q < 1) of the samples, and false
// while there are fewer than minLatencySamples.
func (r *latencyRing) quantile(q float64) (time.Duration, bool) {
	var buf [latencySamples]int64
	s := r.sorted(buf[:0])
	if len(s) < minLatencySamples {
		return 0, false
	}
	return time.Duration(s[quantileIndex(q, len(s))]), true
}

// sorted appends the samples to s, sorted, and returns it.
func (r *latencyRing) sorted(s []int64) []int64 {
	for i := range r.slots {
		if v := r.slots[i].Load(); v > 0 {
			s = append(s, v)
		}
	}
	slices.Sort(s)
	return s
}

// quantileIndex is the nearest-rank index of quantile q among n sorted
// samples.
func quantileIndex(q float64, n int) int {
	i := int(math.Ceil(q*float64(n))) - 1
	return min(max(i, 0), n-1)
}

// tailGap is how much slower an answer must be than the one before it,
// in a host's sorted latencies, to start a mode of its own: a tail of
// slow answers (a cold cache, a long GC pause) stands apart from the
// fast ones by far more than the noise within each.
const tailGap = 2

// budgetDelay returns the hedging delay that spends a hedge budget of
// fraction f of requests: the latency at quantile 1-f of the samples, or,
// when that lies in the host's slow mode, the start of the tail below it
// (the last fast answer before a gap of tailGap), so that a hedge goes
// while it can still beat the slow answer, and when more requests are slow
// than the budget pays for, the budget decides which are hedged. It is
// false while there are fewer than minLatencySamples.
func (r *latencyRing) budgetDelay(f float64) (time.Duration, bool) {
	var buf [latencySamples]int64
	s := r.sorted(buf[:0])
	if len(s) < minLatencySamples {
		return 0, false
	}
	return time.Duration(tailStart(s, f)), true
}

// tailStart is budgetDelay over s, sorted: the sample at quantile 1-f,
// or the last sample before the first gap between the median and it.
func tailStart(s []int64, f float64) int64 {
	i := quantileIndex(1-f, len(s))
	for j := quantileIndex(0.5, len(s)) + 1; j <= i; j++ {
		if s[j] >= tailGap*s[j-1] {
			return s[j-1]
		}
	}
	return s[i]
}
