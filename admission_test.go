package retryhttp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Slots go to attempts while the limit allows, and then to those in line,
// oldest first, as slots come back; one that leaves the line keeps a slot
// handed to it meanwhile.
func TestAdmissionSlots(t *testing.T) {
	now := time.Now()
	a := newAdmission(2)
	_, ok := a.acquire()
	require.True(t, ok)
	_, ok = a.acquire()
	require.True(t, ok)
	w1, ok := a.acquire()
	require.False(t, ok)
	w2, _ := a.acquire()
	assert.Equal(t, admitFacts{limit: 2, inFlight: 2, queued: true}, a.factsNow())

	a.release(now, 0, false, false)
	assert.True(t, a.granted(w1), "the oldest in line gets the slot")
	assert.False(t, a.granted(w2))
	<-w1.ch // closed for it
	assert.False(t, a.leave(w2), "nothing was handed to the second")
	assert.True(t, a.leave(w1), "the first keeps its slot when it leaves")
	assert.Equal(t, admitFacts{limit: 2, inFlight: 2}, a.factsNow())
}

// judgeWindow releases a full window of samples of latency d at now,
// with the limit in use, and returns the limit after it is judged.
func judgeWindow(a *admission, now time.Time, d time.Duration, lost bool) float64 {
	for range admitWindow {
		a.mu.Lock()
		a.take()
		a.mu.Unlock()
	}
	for i := range admitWindow {
		a.release(now, d, !lost || i > 0, lost && i == 0)
	}
	flush(a, now)
	return a.limit
}

// flush judges what a's window holds at now, so that the next one starts
// afresh.
func flush(a *admission, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n > 0 || a.lost {
		a.judge(now)
	}
}

// The limit follows the host: down in proportion when the tenth
// percentile of a window's latencies passes 1.5 times the unloaded one (by
// half at most), down by a tenth on a loss, up by a tenth (one at least)
// in a window that used it and showed neither; between 1 and its max.
func TestAdmissionJudges(t *testing.T) {
	now := time.Now()
	a := newAdmission(100)
	a.limit = 40
	assert.InDelta(t, 44, judgeWindow(a, now, 10*time.Millisecond, false), 1e-9, "healthy: up by a tenth")
	assert.InDelta(t, 44*15.0/30, judgeWindow(a, now, 30*time.Millisecond, false), 1e-9, "3x the unloaded: by 1.5/3")
	before := a.limit
	assert.InDelta(t, before/2, judgeWindow(a, now, time.Second, false), 1e-9, "by half at most")
	before = a.limit
	assert.InDelta(t, before*0.9, judgeWindow(a, now, 10*time.Millisecond, true), 1e-9, "a loss: down by a tenth")
	for range 100 {
		judgeWindow(a, now, time.Second, false)
	}
	assert.Equal(t, 1.0, a.limit, "never under one")

	a.reset()
	assert.Equal(t, 100.0, a.limit, "reset: back to where it starts")
	for range 10 {
		judgeWindow(a, now, 10*time.Millisecond, false)
	}
	assert.Equal(t, 100.0, a.limit, "never past its max")

	// Unused, it does not grow.
	b := newAdmission(100)
	b.limit = 40
	for i := range admitWindow {
		b.mu.Lock()
		b.take()
		b.mu.Unlock()
		b.release(now, 10*time.Millisecond, true, false)
		_ = i
	}
	assert.Equal(t, 40.0, b.limit, "one attempt at a time uses no limit of 40")
}

// The unloaded latency is the least of the last minute: a heavy tail, or a
// mix of fast and slow answers, moves no tenth percentile; a host whose
// latency truly grew is judged anew once a minute has passed.
func TestAdmissionUnloaded(t *testing.T) {
	now := time.Now()
	a := newAdmission(100)
	a.limit = 50
	judgeWindow(a, now, 10*time.Millisecond, false)
	mixed := func(now time.Time) float64 {
		for range admitWindow {
			a.mu.Lock()
			a.take()
			a.mu.Unlock()
		}
		for i := range admitWindow {
			d := 10 * time.Millisecond
			if i%2 == 0 || i%50 == 0 {
				d = 200 * time.Millisecond // half slow, and a tail
			}
			a.release(now, d, true, false)
		}
		flush(a, now)
		return a.limit
	}
	before := a.limit
	assert.Greater(t, mixed(now.Add(time.Second)), before, "a mix of fast and slow answers is no queue")
	before = a.limit
	assert.Less(t, judgeWindow(a, now.Add(2*time.Second), 50*time.Millisecond, false), before, "5x: a queue")
	before = a.limit
	assert.Greater(t, judgeWindow(a, now.Add(61*time.Second), 50*time.Millisecond, false), before,
		"a minute on, 50 ms is the host's own")
}
