package retryhttp

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
