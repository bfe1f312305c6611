package redisfleet

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPendingDeltasAreClamped(t *testing.T) {
	tests := []struct {
		name    string
		deltas  []int64
		want    int64
		wantCut int
	}{
		{"within bounds", []int64{-1000, -1000, 250}, -1750, 0},
		{"floor at minus the capacity", []int64{-4000, -4000, -4000}, -10000, 1},
		// Successes cut at the ceiling fill any bucket all the same:
		// no loss, not counted.
		{"ceiling at the capacity", []int64{4000, 4000, 4000, 4000}, 10000, 0},
		{"a failure cut after successes", []int64{4000, 4000, 4000, -10000, -10000, -10000}, -10000, 1},
		{"back from the floor", []int64{-10000, -1000, 4000}, -6000, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h host
			cut := 0
			for _, d := range tt.deltas {
				if h.add(d, 10000) {
					cut++
				}
			}
			assert.Equal(t, tt.want, h.pending.Load(), "got pending %d, want %d", h.pending.Load(), tt.want)
			assert.Equal(t, tt.wantCut, cut, "got %d reports cut, want %d", cut, tt.wantCut)
		})
	}
}

// TestSuccessSampling checks that successes are counted, not drawn:
// from phase p, each successWeight-th carries the weight of them all,
// so n successes send n rounded to a multiple of the weight, and over
// the phases, n exactly.
func TestSuccessSampling(t *testing.T) {
	for _, n := range []int{1, 9, 15, 16, 17, 160, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var total int64
			for phase := range uint64(successWeight) {
				var h host
				h.successes.Store(phase)
				var sum int64
				for range n {
					sum += h.success()
				}
				want := int64((uint64(n) + phase) / successWeight * successWeight)
				assert.Equal(t, want, sum, "phase %d: got weight %d after %d successes, want %d", phase, sum, n, want)
				total += sum
			}
			assert.Equal(t, int64(n*successWeight), total, "got %d over all phases, want n per phase on average", total)
		})
	}
}

func TestSpentNeedsAFreshReading(t *testing.T) {
	const stale = 2000
	tests := []struct {
		name   string
		read   bool
		readAt int64
		spent  bool
		at     int64
		want   bool
	}{
		{"never read", false, 0, false, 10, false},
		{"read as spent, fresh", true, 0, true, 1999, true},
		{"read as spent, stale", true, 0, true, 2000, false},
		{"read as not spent", true, 500, false, 600, false},
		{"read as spent later in the run", true, 90_000, true, 91_000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h host
			if tt.read {
				h.setReading(tt.readAt, tt.spent)
			}
			got := h.spent(tt.at, stale)
			assert.Equal(t, tt.want, got, "got spent %v, want %v", got, tt.want)
		})
	}
}

func TestHoldsOnlyExtend(t *testing.T) {
	type step struct {
		rule       string
		end        int64
		status     int
		sent       bool
		now        int64
		wantExtend bool
	}
	steps := []step{
		{"r", 5000, 429, false, 1000, true},
		{"r", 4000, 503, true, 1000, false}, // shorter: ignored
		{"r", 5000, 503, true, 1000, false}, // as long: ignored
		{"r", 6000, 503, true, 1000, true},  // longer: taken, as sent
		{"r", 900, 429, false, 1000, false}, // already over
		{"s", 3000, 429, false, 1000, true}, // another rule
	}
	var h host
	for i, s := range steps {
		got, lost := h.setHold(s.rule, s.end, s.status, s.sent, s.now)
		require.Equal(t, s.wantExtend, got, "step %d: got extended %v, want %v", i, got, s.wantExtend)
		require.Zero(t, lost, "step %d: got a hold lost with room for 16", i)
	}
	k, ok := h.holdOn("r", time.UnixMilli(1000))
	assert.True(t, ok)
	assert.Equal(t, int64(6000), k.Until.UnixMilli())
	assert.Equal(t, 503, k.Status)
	_, ok = h.holdOn("r", time.UnixMilli(6000))
	assert.False(t, ok, "got a hold at its end, want none")
	_, ok = h.holdOn("r", time.UnixMilli(6000).Add(-time.Nanosecond))
	assert.True(t, ok, "got no hold just before its end")
	_, ok = h.holdOn("none", time.UnixMilli(1000))
	assert.False(t, ok, "got a hold on a rule that has none")

	unsent := h.unsent(nil, 1000)
	require.Len(t, unsent, 1, "got %v unsent, want only s's", unsent)
	assert.Equal(t, "s", unsent[0].Rule)
	h.markSent("s", 3000)
	assert.Empty(t, h.unsent(nil, 1000))
}

func TestHoldsPerHostAreBounded(t *testing.T) {
	var h host
	for i := range 3 * maxHolds {
		h.setHold(fmt.Sprint("rule", i), int64(2000+i), 429, true, 1000)
	}
	assert.Equal(t, maxHolds, h.holdCount(), "got %d holds kept, want %d", h.holdCount(), maxHolds)
	// The longest holds stay; the shortest made room.
	_, ok := h.holdOn(fmt.Sprint("rule", 3*maxHolds-1), time.UnixMilli(1000))
	assert.True(t, ok, "got the longest hold dropped")
	_, ok = h.holdOn("rule0", time.UnixMilli(1000))
	assert.False(t, ok, "got the shortest hold kept over longer ones")
	// A shorter hold than all kept does not push a longer one out.
	extended, lost := h.setHold("late", 1500, 429, true, 1000)
	assert.False(t, extended)
	assert.Zero(t, lost, "got a hold learned from the store counted lost")
}

// A hold the member met, and must send, that the bound on a host's holds
// keeps out, or another rule's unsent one that it pushes out, is lost:
// setHold says so, for Stats.Dropped.
func TestAHoldMetLostToTheBoundIsCounted(t *testing.T) {
	var h host
	for i := range maxHolds {
		h.setHold(fmt.Sprint("learned", i), int64(9000+i), 429, true, 1000)
	}
	extended, lost := h.setHold("met", 5000, 429, false, 1000)
	assert.False(t, extended, "got a hold shorter than all kept taken")
	assert.Equal(t, uint64(1), lost, "got the member's hold, kept out, not counted")

	var g host
	for i := range maxHolds {
		g.setHold(fmt.Sprint("met", i), int64(2000+i), 429, false, 1000) // unsent
	}
	extended, lost = g.setHold("learned", 9000, 429, true, 1000)
	assert.True(t, extended)
	assert.Equal(t, uint64(1), lost, "got the unsent hold it pushed out not counted")
	extended, lost = g.setHold("met1", 9500, 429, false, 1000)
	assert.True(t, extended)
	assert.Zero(t, lost, "got a rule's own hold, extended, counted lost")
}

func TestUnsentForgetsEndedHolds(t *testing.T) {
	var h host
	extended, _ := h.setHold("r", 2000, 429, false, 1000)
	require.True(t, extended)
	assert.Empty(t, h.unsent(nil, 2000), "got an ended hold to send")
	assert.True(t, h.quiet(2000), "got a host with only an ended hold busy")
	assert.False(t, h.quiet(1999), "got a host under a hold quiet")
}

// holdCount returns the number of holds h keeps, ended ones included.
func (h *host) holdCount() (n int) {
	h.holds.Edit(func(list []hold) []hold { n = len(list); return list })
	return n
}
