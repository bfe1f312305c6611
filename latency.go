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
	s := buf[:0]
	for i := range r.slots {
		if v := r.slots[i].Load(); v > 0 {
			s = append(s, v)
		}
	}
	if len(s) < minLatencySamples {
		return 0, false
	}
	slices.Sort(s)
	return time.Duration(s[quantileIndex(q, len(s))]), true
}

// quantileIndex is the nearest-rank index of quantile q among n sorted
// samples.
func quantileIndex(q float64, n int) int {
	i := int(math.Ceil(q*float64(n))) - 1
	return min(max(i, 0), n-1)
}
