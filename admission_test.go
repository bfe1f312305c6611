package retryhttp

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/internal/tokens"
	"github.com/retryhttp/retryhttp/retrytrace"
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

	a.release(now, 0, signNone)
	assert.True(t, a.granted(w1), "the oldest in line gets the slot")
	assert.False(t, a.granted(w2))
	<-w1.ch // closed for it
	assert.False(t, a.leave(w2), "nothing was handed to the second")
	assert.True(t, a.leave(w1), "the first keeps its slot when it leaves")
	assert.Equal(t, admitFacts{limit: 2, inFlight: 2}, a.factsNow())
}

// judgeWindow releases a full window of attempts at now, with the limit
// in use: lost of them lost work, the others answered in d; and returns
// the limit after it is judged.
func judgeWindow(a *admission, now time.Time, d time.Duration, lost int) float64 {
	for range admitWindow {
		a.mu.Lock()
		a.take()
		a.mu.Unlock()
	}
	for i := range admitWindow {
		sign := signAnswer
		if i < lost {
			sign = signLost
		}
		a.release(now, d, sign)
	}
	flush(a, now)
	return a.limit
}

// flush judges what a's window holds at now, so that the next one starts
// afresh.
func flush(a *admission, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended > 0 {
		a.judge(now)
	}
}

// The limit follows the host: down in proportion when the tenth
// percentile of a window's latencies passes 1.5 times the unloaded one (by
// half at most), down by the loss rate when more than a quarter of the
// window, and of the host's recent attempts, was lost, up by a tenth (one at least) in a window that used it
// and showed neither; between 1 and its max.
func TestAdmissionJudges(t *testing.T) {
	now := time.Now()
	a := newAdmission(100)
	a.limit = 40
	assert.InDelta(t, 44, judgeWindow(a, now, 10*time.Millisecond, 0), 1e-9, "healthy: up by a tenth")
	assert.InDelta(t, 44*15.0/30, judgeWindow(a, now, 30*time.Millisecond, 0), 1e-9, "3x the unloaded: by 1.5/3")
	before := a.limit
	assert.InDelta(t, before/2, judgeWindow(a, now, time.Second, 0), 1e-9, "by half at most")
	before = a.limit
	a.lossRate = 0.5 // a host that was losing before
	assert.InDelta(t, before*(1-20.0/64), judgeWindow(a, now, 10*time.Millisecond, 20), 1e-9, "20 of 64 lost: by 20/64")
	for range 100 {
		judgeWindow(a, now, time.Second, 0)
	}
	assert.Equal(t, 1.0, a.limit, "never under one")

	a.reset()
	assert.Equal(t, 100.0, a.limit, "reset: back to where it starts")
	for range 10 {
		judgeWindow(a, now, 10*time.Millisecond, 0)
	}
	assert.Equal(t, 100.0, a.limit, "never past its max")

	// Unused, it does not grow.
	b := newAdmission(100)
	b.limit = 40
	for i := range admitWindow {
		b.mu.Lock()
		b.take()
		b.mu.Unlock()
		b.release(now, 10*time.Millisecond, signAnswer)
		_ = i
	}
	assert.Equal(t, 40.0, b.limit, "one attempt at a time uses no limit of 40")
}

// A window's losses cut the limit by their rate, once they pass a quarter
// of its attempts, number three at least, and the host's smoothed loss
// rate is past a quarter too: sporadic losses, and 5xx that are neither
// throttles nor 503s however many, leave it to grow; a short window's
// losses cut only a host that was losing before; a host that loses most
// of what it is sent, or whose latency climbs, still cuts it, by the
// deeper of the two cuts, by half at most.
func TestAdmissionLossRate(t *testing.T) {
	const fast, slow = 10 * time.Millisecond, 30 * time.Millisecond
	for _, tc := range []struct {
		name    string
		attempt func(i int) (time.Duration, admitSign) // the window's i-th
		ended   int                                    // attempts in the window
		want    float64                                // the limit after it, from 40
		before  float64                                // the host's smoothed loss rate before it
	}{
		{name: "one loss grows", ended: admitWindow, want: 44, attempt: func(i int) (time.Duration, admitSign) {
			return fast, lostIf(i == 0)
		}},
		{name: "six of 64 lost, under a tenth, grows", ended: admitWindow, want: 44, attempt: func(i int) (time.Duration, admitSign) {
			return fast, lostIf(i < 6)
		}},
		{name: "sixteen of 64 lost, a quarter, grows", ended: admitWindow, want: 44, before: 0.5, attempt: func(i int) (time.Duration, admitSign) {
			return fast, lostIf(i < 16)
		}},
		{name: "seventeen of 64 lost, from a healthy host, grows", ended: admitWindow, want: 44, attempt: func(i int) (time.Duration, admitSign) {
			return fast, lostIf(i < 17)
		}},
		{name: "seventeen of 64 lost, the host losing before: by 17/64", ended: admitWindow, want: 40 * 47.0 / 64, before: 0.5, attempt: func(i int) (time.Duration, admitSign) {
			return fast, lostIf(i < 17)
		}},
		{name: "half of 5xx that are no throttle grows", ended: admitWindow, want: 44, attempt: func(i int) (time.Duration, admitSign) {
			if i%2 == 0 {
				return time.Millisecond, signError // fast errors, no samples
			}
			return fast, signAnswer
		}},
		{name: "two of a short window of eight: no rate", ended: admitMinSamples, want: 40, attempt: func(i int) (time.Duration, admitSign) {
			return fast, lostIf(i < 2) // and too few samples to grow
		}},
		{name: "three of a short window of eight, from a healthy host: no cut", ended: admitMinSamples, want: 40, attempt: func(i int) (time.Duration, admitSign) {
			return fast, lostIf(i < 3)
		}},
		{name: "three of a short window of eight, the host losing before: by 3/8", ended: admitMinSamples, want: 25, before: 0.3, attempt: func(i int) (time.Duration, admitSign) {
			return fast, lostIf(i < 3)
		}},
		{name: "all lost: by half", ended: admitWindow, want: 20, attempt: func(int) (time.Duration, admitSign) {
			return 0, signLost
		}},
		{name: "the deeper cut: latency", ended: admitWindow, want: 40 * 15.0 / 30, attempt: func(i int) (time.Duration, admitSign) {
			return slow, lostIf(i < 8)
		}},
		{name: "the deeper cut: losses", ended: admitWindow, want: 40 * 44.0 / 64, before: 0.5, attempt: func(i int) (time.Duration, admitSign) {
			return 20 * time.Millisecond, lostIf(i < 20) // 1.5/2 for the latency
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			a := newAdmission(100)
			a.limit = 40
			judgeWindow(a, now, fast, 0) // the unloaded latency
			a.limit, a.lossRate = 40, tc.before
			a.mu.Lock()
			for range 40 {
				a.take() // in use
			}
			a.mu.Unlock()
			at := now // a full window
			if tc.ended < admitWindow {
				at = now.Add(admitTick) // a short one, which the tick ends
			}
			for i := range tc.ended {
				d, sign := tc.attempt(i)
				a.release(at, d, sign)
			}
			assert.Zero(t, a.ended, "judged")
			assert.InDelta(t, tc.want, a.limit, 1e-9)
		})
	}
}

// lostIf is signLost when lost is set, and an answer otherwise.
func lostIf(lost bool) admitSign {
	if lost {
		return signLost
	}
	return signAnswer
}

// The unloaded latency is the least of the last minute: a heavy tail, or a
// mix of fast and slow answers, moves no tenth percentile; a host whose
// latency truly grew is judged anew once a minute has passed.
func TestAdmissionUnloaded(t *testing.T) {
	now := time.Now()
	a := newAdmission(100)
	a.limit = 50
	judgeWindow(a, now, 10*time.Millisecond, 0)
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
			a.release(now, d, signAnswer)
		}
		flush(a, now)
		return a.limit
	}
	before := a.limit
	assert.Greater(t, mixed(now.Add(time.Second)), before, "a mix of fast and slow answers is no queue")
	before = a.limit
	assert.Less(t, judgeWindow(a, now.Add(2*time.Second), 50*time.Millisecond, 0), before, "5x: a queue")
	before = a.limit
	assert.Greater(t, judgeWindow(a, now.Add(61*time.Second), 50*time.Millisecond, 0), before,
		"a minute on, 50 ms is the host's own")
}

// The gate takes a slot under the host's limit for an attempt that holds
// none, to wait in line for up to maxWait within its deadline whenever no
// slot is free when it takes one: the host full when the facts were read,
// or its last slot taken since by another request. An attempt that cannot
// wait at all is shed when the host is full.
func TestGateAdmission(t *testing.T) {
	now := time.Now()
	room := admitFacts{limit: 4, inFlight: 3}
	full := admitFacts{limit: 4, inFlight: 4}
	shed := noMore(1, retrytrace.RefusedShed)
	shed.limit = 4
	for _, tc := range []struct {
		name     string
		admit    admitFacts
		admitted bool
		maxWait  time.Duration
		deadline time.Duration // 0: none
		want     step
	}{
		{name: "room: the wait in line, should it lose the last slot", admit: room, maxWait: time.Second,
			want: step{kind: stepSend, attempt: 1, acquire: true, wait: time.Second}},
		{name: "room: within the deadline", admit: room, maxWait: time.Second, deadline: 200 * time.Millisecond,
			want: step{kind: stepSend, attempt: 1, acquire: true, wait: 200*time.Millisecond - 1}},
		{name: "room, no wait", admit: room,
			want: step{kind: stepSend, attempt: 1, acquire: true}},
		{name: "full: in line", admit: full, maxWait: time.Second,
			want: step{kind: stepSend, attempt: 1, acquire: true, wait: time.Second}},
		{name: "others in line: in line", admit: admitFacts{limit: 4, inFlight: 1, queued: true}, maxWait: time.Second,
			want: step{kind: stepSend, attempt: 1, acquire: true, wait: time.Second}},
		{name: "full, no wait: shed", admit: full, want: shed},
		{name: "full, at the deadline: shed", admit: full, maxWait: time.Second, deadline: -time.Millisecond, want: shed},
		{name: "a slot held already", admit: full, admitted: true, maxWait: time.Second,
			want: step{kind: stepSend, attempt: 1}},
		{name: "no admission", want: step{kind: stepSend, attempt: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := facts{now: now, replayable: true, maxServerDelay: time.Minute, admitted: tc.admitted, admitWait: tc.maxWait,
				host: hostFacts{budget: true, admit: tc.admit}}
			if tc.deadline != 0 {
				f.deadline = now.Add(tc.deadline)
			}
			assert.Equal(t, tc.want, gate(&f, 1, false, 0.5))
		})
	}
}

// A host whose limit the host brought down, or with attempts in flight
// under it, is not idle: the table keeps it past its bound, and its limit
// with it, while idle hosts can go instead. Back at its start, with no
// attempt in flight, it is idle again.
func TestAdmissionKeepsItsHost(t *testing.T) {
	now := time.Now()
	ht := newHostTable(nil, 16)
	h := ht.get("slow")
	a := h.admission(100)
	assert.True(t, h.idle(tokens.Max, now), "a limit where it starts")
	_, ok := a.acquire()
	require.True(t, ok)
	assert.False(t, h.idle(tokens.Max, now), "an attempt in flight")
	a.release(now, 0, signNone)
	a.mu.Lock()
	a.limit = 40
	a.publish()
	a.mu.Unlock()
	assert.False(t, h.idle(tokens.Max, now), "a lowered limit")

	for i := range 64 {
		ht.get(fmt.Sprintf("h%d", i)) // idle, and past the bound
	}
	require.True(t, ht.has("slow"), "kept past the bound")
	assert.Same(t, a, ht.get("slow").admit.Load())
	assert.Equal(t, int64(40), a.limitNow.Load())

	a.reset()
	assert.True(t, h.idle(tokens.Max, now), "back at its start")
}

// A new maximum moves a limit that sat at the old one, bounds a limit
// the host brought lower without raising it, and hands the slots a
// higher limit frees to the line.
func TestAdmissionFit(t *testing.T) {
	a := newAdmission(2)
	for range 2 {
		_, ok := a.acquire()
		require.True(t, ok)
	}
	w, ok := a.acquire()
	require.False(t, ok)
	a.fit(10)
	assert.Equal(t, admitFacts{limit: 10, inFlight: 3}, a.factsNow(), "at the old maximum: to the new one")
	assert.True(t, a.granted(w), "the slot the new limit frees goes to the line")

	a.mu.Lock()
	a.limit = 4 // the host's
	a.mu.Unlock()
	a.fit(20)
	assert.Equal(t, 4.0, a.limit, "learnt: kept")
	a.fit(3)
	assert.Equal(t, 3.0, a.limit, "within the new maximum")
	a.fit(8)
	assert.Equal(t, 8.0, a.limit, "at the maximum again: to the new one")
	assert.Equal(t, int64(8), a.limitNow.Load())
}
