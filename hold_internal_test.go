package retryhttp

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/internal/tokens"
)

// TestHoldsPerHostAreBounded fills a host's holds to maxHoldsPerHost
// rules: a hold that ends before all of them is not kept, a longer one
// takes the place of the one that ends first.
func TestHoldsPerHostAreBounded(t *testing.T) {
	t.Parallel()
	now := time.Now()
	const limit = time.Hour
	var hs holds
	for i := range maxHoldsPerHost {
		_, set := hs.set(fmt.Sprint("rule", i), now, time.Duration(i+10)*time.Minute, limit, 429)
		require.True(t, set, "rule%d not held", i)
	}
	_, set := hs.set("short", now, 5*time.Minute, limit, 429)
	assert.False(t, set, "got a hold shorter than all kept taken")
	_, state := hs.get("short", now)
	assert.Equal(t, holdNone, state)

	hd, set := hs.set("long", now, 50*time.Minute, limit, 503)
	require.True(t, set, "got a hold longer than the shortest kept refused")
	assert.Equal(t, 503, hd.Status)
	_, state = hs.get("rule0", now)
	assert.Equal(t, holdNone, state, "got the hold that ends first kept")
	_, state = hs.get("rule1", now)
	assert.Equal(t, holdHeld, state)
	assert.Len(t, hs.inForce(now), maxHoldsPerHost)
}

// TestHoldsWakeTheProbesWaitersOfAHoldReplaced checks that a capped
// hold's waiters are woken when its hold is replaced: by a longer hold
// of its rule, or, the list being full, by another rule's.
func TestHoldsWakeTheProbesWaitersOfAHoldReplaced(t *testing.T) {
	t.Parallel()
	now := time.Now()
	const limit = time.Minute
	tests := []struct {
		name    string
		fill    int // other rules held, for an hour
		replace string
	}{
		{"a longer hold of the rule", 0, "capped"},
		{"a hold of another rule, the list full", maxHoldsPerHost - 1, "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var hs holds
			_, set := hs.set("capped", now, time.Hour, limit, 503) // capped to a minute
			require.True(t, set)
			for i := range tt.fill {
				hs.set(fmt.Sprint("rule", i), now, 2*time.Hour, 2*time.Hour, 429)
			}
			ended := now.Add(2 * limit)
			hd, state := hs.get("capped", ended)
			require.Equal(t, holdProbe, state)
			wake, ok := hs.probe("capped", hd.Until, ended, ended.Add(time.Minute))
			require.True(t, ok)
			_, set = hs.set(tt.replace, ended, time.Hour, 2*time.Hour, 429)
			require.True(t, set)
			select {
			case <-wake:
			default:
				t.Error("got the probe's waiters left waiting for a hold replaced")
			}
		})
	}
}

// TestHoldsUnprobeGivesTheTurnBack checks that a probe's turn given back
// wakes its waiters and lets another go first, and that a turn settled
// already (by an answer, a new hold, a reset, or a later turn) is left
// alone, its channel closed once.
func TestHoldsUnprobeGivesTheTurnBack(t *testing.T) {
	t.Parallel()
	now := time.Now()
	const limit = time.Minute
	ended := now.Add(2 * limit)
	tests := []struct {
		name   string
		settle func(hs *holds) // what happens to the turn before it is given back
		want   holdState       // where the next request stands after
	}{
		{"given back", func(*holds) {}, holdProbe},
		{"answered already", func(hs *holds) { hs.answered("capped", ended, true) }, holdNone},
		{"errored already", func(hs *holds) { hs.answered("capped", ended, false) }, holdProbe},
		{"held again", func(hs *holds) { hs.set("capped", ended, time.Hour, limit, 503) }, holdHeld},
		{"reset", func(hs *holds) { hs.clear() }, holdNone},
		{"taken again after its lapse", func(hs *holds) {
			hd, _ := hs.get("capped", ended.Add(time.Minute))
			_, ok := hs.probe("capped", hd.Until, ended.Add(time.Minute), ended.Add(2*time.Minute))
			require.True(t, ok)
		}, holdProbing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var hs holds
			hs.set("capped", now, time.Hour, limit, 503)
			hd, state := hs.get("capped", ended)
			require.Equal(t, holdProbe, state)
			wake, ok := hs.probe("capped", hd.Until, ended, ended.Add(time.Minute))
			require.True(t, ok)
			_, state = hs.get("capped", ended)
			require.Equal(t, holdProbing, state)
			tt.settle(&hs)
			hs.unprobe("capped", wake) // closing wake a second time would panic
			select {
			case <-wake:
			default:
				t.Error("got the probe's waiters left waiting")
			}
			_, state = hs.get("capped", ended.Add(time.Second))
			assert.Equal(t, tt.want, state)
		})
	}
}

// TestHoldsForgetTheFleetsHolds reads which fleet holds a host's owner
// ended: those in force when it did, and no later ones.
func TestHoldsForgetTheFleetsHolds(t *testing.T) {
	t.Parallel()
	now := time.Now()
	fleet := map[string]FleetView{
		"held":  {HoldUntil: now.Add(time.Minute), HoldStatus: 429},
		"ended": {HoldUntil: now.Add(-time.Second), HoldStatus: 429},
	}
	var hs holds
	assert.False(t, hs.forgot("held", now.Add(time.Minute)), "nothing forgotten before a reset")
	hs.forget([]string{"held", "ended", "none"}, func(rule string) FleetView { return fleet[rule] }, now)
	tests := []struct {
		rule  string
		until time.Time
		want  bool
	}{
		{"held", now.Add(time.Minute), true},
		{"held", now.Add(30 * time.Second), true},
		{"held", now.Add(time.Minute + time.Millisecond), false}, // set since: it ends later
		{"ended", now.Add(time.Second), false},                   // not in force at the reset
		{"none", now.Add(time.Second), false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, hs.forgot(tt.rule, tt.until), "%s until %v", tt.rule, tt.until.Sub(now))
	}

	// A second reset, which the fleet cannot tell of: what was forgotten
	// and is still in force stays forgotten; what ended goes.
	hs.forget([]string{"held"}, func(string) FleetView { return FleetView{} }, now.Add(time.Second))
	assert.True(t, hs.forgot("held", now.Add(time.Minute)))
	hs.forget([]string{"held"}, func(string) FleetView { return FleetView{} }, now.Add(2*time.Minute))
	assert.Nil(t, hs.forgotten.Load())
}

// A host whose owner ended a fleet's hold for it, or whose requests met
// one, is not idle while that hold would be in force: forgetting the host
// would forget the reset, and the fleet would hold it again.
func TestHostWithAFleetHoldIsNotIdle(t *testing.T) {
	now := time.Now()
	fleetHold := FleetView{HoldUntil: now.Add(30 * time.Second), HoldStatus: 429}
	h := newHostTable(nil, 16).get("api.test")
	require.True(t, h.idle(tokens.Max, now), "a fresh host")

	h.held("r", now, fleetHold, time.Minute)
	assert.False(t, h.idle(tokens.Max, now), "a fleet's hold met")
	h.holds.forget([]string{"r"}, func(string) FleetView { return fleetHold }, now)
	h.holds.clear()
	assert.False(t, h.idle(tokens.Max, now), "a fleet's hold its owner ended")
	assert.True(t, h.idle(tokens.Max, now.Add(31*time.Second)), "once that hold would be over")
}

// TestAFleetHoldMetAtOnceHoldsEveryone has requests meet a fleet's hold
// at the same instant: each that returns from meeting it is held, not
// only the one that first recorded it (the others found it recorded,
// and must not go before it is in force).
func TestAFleetHoldMetAtOnceHoldsEveryone(t *testing.T) {
	now := time.Now()
	v := FleetView{HoldUntil: now.Add(time.Hour), HoldStatus: 429}
	for round := range 2000 {
		var hs holds
		var wg sync.WaitGroup
		var free atomic.Int64
		for range 4 {
			wg.Go(func() {
				hs.meet("r", v, now, time.Minute)
				if _, state := hs.get("r", now); state != holdHeld {
					free.Add(1)
				}
			})
		}
		wg.Wait()
		require.Zero(t, free.Load(), "round %d: requests that met the hold went free", round)
	}
}
