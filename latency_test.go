package retryhttp

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLatencyQuantileIsTheNearestRank(t *testing.T) {
	var r latencyRing
	// 1..100 ms in a shuffled order: the ring must not depend on it.
	rng := rand.New(rand.NewPCG(1, 2))
	for _, i := range rng.Perm(100) {
		r.add(time.Duration(i+1) * time.Millisecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{
		{0.01, 1 * time.Millisecond},
		{0.5, 50 * time.Millisecond},
		{0.501, 51 * time.Millisecond},
		{0.9, 90 * time.Millisecond},
		{0.95, 95 * time.Millisecond},
		{0.99, 99 * time.Millisecond},
		{0.999, 100 * time.Millisecond},
	} {
		got, ok := r.quantile(tc.q)
		require.True(t, ok)
		assert.Equal(t, tc.want, got, "q=%v", tc.q)
	}
}

func TestLatencyQuantileNeedsEnoughSamples(t *testing.T) {
	var r latencyRing
	r.add(0) // not a latency: ignored
	r.add(-time.Millisecond)
	for i := range minLatencySamples - 1 {
		r.add(time.Duration(i+1) * time.Millisecond)
		_, ok := r.quantile(0.5)
		require.False(t, ok, "after %d samples", i+1)
	}
	r.add(time.Hour)
	got, ok := r.quantile(0.95)
	require.True(t, ok, "after %d samples", minLatencySamples)
	// 20 samples: nearest rank of 0.95 is the 19th, 19 ms.
	assert.Equal(t, 19*time.Millisecond, got)
	got, _ = r.quantile(0.96)
	assert.Equal(t, time.Hour, got)
}

func TestLatencyRingKeepsOnlyTheLatestSamples(t *testing.T) {
	var r latencyRing
	for range latencySamples {
		r.add(time.Millisecond)
	}
	for range latencySamples {
		r.add(5 * time.Millisecond)
	}
	got, _ := r.quantile(0.01)
	assert.Equal(t, 5*time.Millisecond, got, "every old sample is overwritten")

	// Half the window moves on: the oldest half (5 ms) stays, the rest
	// is 9 ms.
	for range latencySamples / 2 {
		r.add(9 * time.Millisecond)
	}
	got, _ = r.quantile(0.5)
	assert.Equal(t, 5*time.Millisecond, got)
	got, _ = r.quantile(0.51)
	assert.Equal(t, 9*time.Millisecond, got)
}

func TestLatencyRingUnderConcurrentUse(t *testing.T) {
	const writers, each = 8, 1000
	var r latencyRing
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				r.add(time.Duration(1+(w*each+i)%50) * time.Millisecond)
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range each {
				if d, ok := r.quantile(0.9); ok {
					assert.True(t, d >= time.Millisecond && d <= 50*time.Millisecond, "got %v", d)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, uint64(writers*each), r.n.Load())
	for i := range r.slots {
		v := time.Duration(r.slots[i].Load())
		assert.True(t, v >= time.Millisecond && v <= 50*time.Millisecond, "slot %d holds %v", i, v)
	}
	_, ok := r.quantile(0.5)
	assert.True(t, ok)
}

// BenchmarkLatencyRing measures recording a latency and reading the 0.95
// quantile, which a hedged request does once per attempt and once per hedge
// delay, alone and from every CPU at once.
func BenchmarkLatencyRing(b *testing.B) {
	var r latencyRing
	rng := rand.New(rand.NewPCG(1, 2))
	for range latencySamples {
		r.add(time.Duration(1 + rng.IntN(int(time.Second))))
	}
	b.Run("quantile", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, ok := r.quantile(0.95); !ok {
					b.Fatal("no quantile from a full ring")
				}
			}
		})
	})
	b.Run("add", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				r.add(3 * time.Millisecond)
			}
		})
	})
}

// The delay that spends a hedge budget sits at the start of the host's
// tail: at quantile 1-f where the latencies grow smoothly, and before a
// gap, never inside the slow mode beyond it, however many slow answers
// there are.
func TestTailStart(t *testing.T) {
	ms := func(vs ...int64) []int64 {
		for i := range vs {
			vs[i] *= int64(time.Millisecond)
		}
		return vs
	}
	// fastSlow is n answers, fast of them in 10 or 11 ms and the rest
	// at 200 ms, sorted.
	fastSlow := func(n, fast int) []int64 {
		s := make([]int64, n)
		for i := range s {
			s[i] = 200
			if i < fast {
				s[i] = 10 + int64(i)*2/int64(fast)
			}
		}
		return ms(s...)
	}
	smooth := make([]int64, 100)
	for i := range smooth {
		smooth[i] = int64(i + 1) // 1..100 ms
	}
	for _, tc := range []struct {
		name string
		s    []int64
		f    float64
		want time.Duration
	}{
		{"smooth: quantile 1-f", ms(slices.Clone(smooth)...), 0.05, 95 * time.Millisecond},
		{"smooth, 2%", ms(slices.Clone(smooth)...), 0.02, 98 * time.Millisecond},
		{"2% slow, budget 2%: the top of the fast mode", fastSlow(100, 98), 0.02, 11 * time.Millisecond},
		{"1% slow, budget 2%: still before the tail", fastSlow(100, 99), 0.02, 11 * time.Millisecond},
		{"10% slow, budget 2%: before the gap, not in the slow mode", fastSlow(100, 90), 0.02, 11 * time.Millisecond},
		{"no slow answer: quantile 1-f", fastSlow(100, 100), 0.02, 11 * time.Millisecond},
		{"everything slow: quantile 1-f", fastSlow(100, 0), 0.02, 200 * time.Millisecond},
		{"a gap below the median is no tail", ms(1, 1, 1, 10, 10, 10, 10, 10, 10, 11), 0.1, 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, time.Duration(tailStart(tc.s, tc.f)))
		})
	}
}

func TestBudgetDelayNeedsEnoughSamples(t *testing.T) {
	var r latencyRing
	for i := range minLatencySamples - 1 {
		r.add(time.Duration(i+1) * time.Millisecond)
	}
	_, ok := r.budgetDelay(0.02)
	require.False(t, ok)
	r.add(time.Second)
	got, ok := r.budgetDelay(0.02)
	require.True(t, ok)
	assert.Equal(t, 19*time.Millisecond, got, "the answer before the gap to 1 s")
}
