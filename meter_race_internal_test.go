package retryhttp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Two attempts going at once, counted 10 and 11, may both find the
// window due, and the second roll first: the first's roll, counted
// before the window that won, changes nothing. A rate read with a count
// loaded before another attempt rolled the window reads none in it, not
// a count that wrapped below zero: a rate of 10^19 a second, which a
// throttle would cut from, pacing nothing.
func TestMeterRacesReadNoWrappedCount(t *testing.T) {
	now := time.Now()
	var m meter
	m.roll(now, 1)
	next := now.Add(time.Second)
	m.roll(next, 11) // 10 in the first second
	m.roll(next, 10) // lost the race, rolled late
	assert.InDelta(t, 10, m.rate(next.Add(100*time.Millisecond), 11), 1e-9, "the last window's")
	assert.InDelta(t, 0, m.rate(next.Add(500*time.Millisecond), 9), 1e-9, "a count from before the roll")
}
