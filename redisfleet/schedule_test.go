package redisfleet

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSchedule(t *testing.T) {
	const interval = 100 * time.Millisecond
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type step struct {
		// "urgent", "wake", "start", "ok", "fail", and the answers to a
		// round trip of fetches alone ("fetched") and to the warm-up
		// ("warm"); a round trip of fetches sent aside ("aside"), and
		// how it went ("aside ok", "aside fail"); a round trip with
		// nothing to send ("nothing").
		event   string
		at      int // ms after t0
		wantDue int // ms after t0; -1: nothing due
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"a first failure goes at once", []step{{"urgent", 0, 0}}},
		{"fetches wait the interval", []step{{"wake", 0, 100}}},
		{"a failure soon after a round trip waits out the interval", []step{
			{"start", 0, -1}, {"ok", 0, -1}, {"urgent", 30, 100},
		}},
		{"a failure long after a round trip goes at once", []step{
			{"start", 0, -1}, {"ok", 0, -1}, {"urgent", 500, 500},
		}},
		{"a failure moves waiting fetches forward", []step{
			{"start", 0, -1}, {"ok", 0, -1}, {"wake", 150, 250}, {"urgent", 160, 160},
		}},
		{"fetches do not delay a failure", []step{
			{"urgent", 10, 10}, {"wake", 10, 10},
		}},
		{"a failure after a round trip of fetches alone goes at once", []step{
			{"wake", 0, 100}, {"start", 100, -1}, {"fetched", 100, -1},
			{"urgent", 130, 130},
		}},
		{"a failure after fetches alone waits out the interval of the urgent trip before them", []step{
			{"urgent", 0, 0}, {"start", 0, -1}, {"ok", 0, -1},
			{"wake", 20, 120}, {"start", 120, -1}, {"fetched", 120, -1},
			{"urgent", 130, 130}, {"start", 130, -1}, {"ok", 130, -1},
			{"urgent", 140, 230},
		}},
		{"fetches after fetches still wait the interval", []step{
			{"wake", 0, 100}, {"start", 100, -1}, {"fetched", 100, -1},
			{"wake", 110, 210},
		}},
		{"a failure just after the warm-up goes at once", []step{
			{"urgent", 0, 0}, {"start", 0, -1}, {"warm", 0, -1}, {"urgent", 10, 10},
		}},
		{"a failed round trip of fetches counts until it is answered", []step{
			{"wake", 0, 100}, {"start", 100, -1}, {"fail", 100, 200}, {"urgent", 110, 200},
		}},
		{"a failed round trip is tried again after the backoff", []step{
			{"start", 0, -1}, {"fail", 0, 100}, {"urgent", 10, 100},
			{"start", 100, -1}, {"fail", 100, 300}, // 2 x interval, rnd 0.5
			{"start", 300, -1}, {"fail", 300, 700},
			{"start", 700, -1}, {"fail", 700, 1200}, // capped at 500 ms
			{"start", 1200, -1}, {"fail", 1200, 1700},
			{"start", 1700, -1}, {"ok", 1700, -1}, {"urgent", 1750, 1800},
		}},
		{"fetches sent aside do not count: a failure goes at once", []step{
			{"wake", 0, 100}, {"start", 100, -1}, {"aside", 100, -1},
			{"urgent", 110, 110},
		}},
		{"fetches sent aside answered: the fetches met meanwhile wait the interval", []step{
			{"wake", 0, 100}, {"start", 100, -1}, {"aside", 100, -1},
			{"aside ok", 150, 250},
		}},
		{"fetches sent aside failed: tried again after the backoff", []step{
			{"urgent", 0, 0}, {"start", 0, -1}, {"ok", 0, -1},
			{"wake", 20, 120}, {"start", 120, -1}, {"aside", 120, -1},
			{"aside fail", 150, 250}, // the first backoff: the interval
			{"start", 250, -1}, {"aside", 250, -1},
			{"aside fail", 260, 460}, // twice as long
			{"urgent", 270, 270},     // a failure goes at once all the same
		}},
		{"a round trip with nothing to send leaves the backoff as it is", []step{
			{"wake", 0, 100}, {"start", 100, -1}, {"aside", 100, -1},
			{"aside fail", 150, 250}, {"start", 250, -1}, {"aside", 250, -1},
			{"aside fail", 260, 460},
			{"wake", 270, 370}, {"start", 370, -1}, {"nothing", 370, -1}, // the fetches still in flight
			{"aside fail", 380, 780}, // the third failure in a row: 400 ms
		}},
		{"fetches answered aside leave the backoff as it is", []step{
			{"start", 0, -1}, {"fail", 0, 100}, {"start", 100, -1}, {"fail", 100, 300},
			{"aside ok", 150, 300}, // the urgent work still waits out its backoff
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := schedule{interval: interval}
			for i, st := range tt.steps {
				switch st.event {
				case "urgent":
					s.work(at(st.at), true)
				case "wake":
					s.work(at(st.at), false)
				case "start":
					s.start(at(st.at))
				case "ok", "fail":
					s.end(st.event == "ok", carriedUrgent, 0.5)
				case "fetched":
					s.end(true, carriedFetches, 0.5)
				case "warm":
					s.end(true, carriedWarmUp, 0.5)
				case "aside", "nothing":
					s.end(true, carriedNothing, 0.5)
				case "aside ok", "aside fail":
					s.aside(st.event == "aside ok", at(st.at), 0.5)
				}
				if st.wantDue < 0 {
					assert.True(t, s.due.IsZero(), "step %d (%s): got due at %v, want nothing due", i, st.event, s.due.Sub(t0))
					continue
				}
				assert.Equal(t, at(st.wantDue), s.due, "step %d (%s): got due at %v, want %dms", i, st.event, s.due.Sub(t0), st.wantDue)
			}
		})
	}
}

// TestHoldLeavesWithinTheInterval checks the member's half of "a fleet
// hold is in force for every member within 200 ms": whenever the store
// answers, a hold reported at any moment goes out at most FlushInterval
// (100 ms) later, which leaves the rest for the store's round trip and
// the message's delivery.
func TestHoldLeavesWithinTheInterval(t *testing.T) {
	const interval = 100 * time.Millisecond
	t0 := time.Unix(1000, 0)
	for _, since := range []time.Duration{0, time.Millisecond, 50 * time.Millisecond, 99 * time.Millisecond, interval, time.Hour} {
		for _, pendingFetches := range []bool{false, true} {
			t.Run(fmt.Sprint(since, pendingFetches), func(t *testing.T) {
				s := schedule{interval: interval}
				s.start(t0)
				s.end(true, carriedUrgent, 0.5)
				now := t0.Add(since)
				if pendingFetches {
					s.work(now, false)
				}
				s.work(now, true) // the hold
				assert.LessOrEqual(t, s.due.Sub(now), interval, "got the hold sent %v after it was met, want at most %v", s.due.Sub(now), interval)
				assert.False(t, s.due.Before(t0.Add(interval)), "got two round trips within the interval")
			})
		}
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		n    int
		base time.Duration
		rnd  float64
		want time.Duration
	}{
		{1, 100 * time.Millisecond, 0.5, 100 * time.Millisecond},
		{2, 100 * time.Millisecond, 0.5, 200 * time.Millisecond},
		{3, 100 * time.Millisecond, 0.5, 400 * time.Millisecond},
		{4, 100 * time.Millisecond, 0.5, 500 * time.Millisecond},
		{50, 100 * time.Millisecond, 0.5, 500 * time.Millisecond},
		{1, 100 * time.Millisecond, 0, 80 * time.Millisecond},
		{50, 100 * time.Millisecond, 0.999999, 599999 * time.Microsecond},
		{3, 5 * time.Second, 0.5, 5 * time.Second},  // a long interval is its own cap
		{1, math.MaxInt64, 0.999999, math.MaxInt64}, // no overflow
		{50, math.MaxInt64, 0.5, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n, tt.base, tt.rnd), func(t *testing.T) {
			got := backoff(tt.n, tt.base, tt.rnd)
			assert.InDelta(t, float64(tt.want), float64(got), float64(time.Microsecond), "got %v, want %v", got, tt.want)
		})
	}
}

func TestBatchUrgent(t *testing.T) {
	tests := []struct {
		kinds []itemKind
		want  bool
	}{
		{nil, false},
		{[]itemKind{fetchItem}, false},
		{[]itemKind{fetchItem, fetchItem}, false},
		{[]itemKind{fetchItem, budgetItem}, true},
		{[]itemKind{holdItem}, true},
	}
	for _, tt := range tests {
		var b batch
		for _, k := range tt.kinds {
			b.items = append(b.items, item{kind: k})
		}
		assert.Equal(t, tt.want, b.urgent(), "items %v", tt.kinds)
	}
}
