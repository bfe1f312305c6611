package redisfleet

import (
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAReportOnAnEvictedRecordIsNotLost has another host's meeting evict
// a host's record between a report's lookup and its writes: the failure
// and the hold the report carries go to the host's record of now, which
// the next round trip sends, rather than to a record no round trip
// lists, where they were lost without a count.
func TestAReportOnAnEvictedRecordIsNotLost(t *testing.T) {
	f := idleFleetWith(t, Options{MaxHosts: 1})
	end := time.Now().Add(time.Hour)
	report := retryhttp.FleetReport{Rule: "r", Budget: retryhttp.FleetFailure, Throttle: throttle,
		HoldUntil: end, HoldStatus: 429}

	stale := f.host("a") // the report's lookup
	f.host("b")          // evicts a, idle
	require.Nil(t, f.tracked("a"), "a evicted")
	f.reportOn("a", stale, report)

	now := f.tracked("a")
	require.NotNil(t, now, "a tracked again")
	assert.NotSame(t, stale, now)
	assert.Equal(t, int64(-1000), now.pending.Load(), "the failure on the record the flusher lists")
	holds := now.unsent(nil, time.Now().UnixMilli())
	require.Len(t, holds, 1, "the hold to send")
	assert.InDelta(t, end.UnixMilli(), holds[0].Until.UnixMilli(), 1)
	assert.Zero(t, stale.pending.Load())
	assert.Zero(t, f.Stats().Dropped, "nothing lost")

	// A report whose record stays is written once, where it was.
	f.reportOn("a", now, report)
	assert.Equal(t, int64(-2000), now.pending.Load())
}
