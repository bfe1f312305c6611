package redisfleet

import (
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestARehomedFailureKeepsItsCapacity has a report's record evicted
// between its lookup and its writes, as in
// TestAReportOnAnEvictedRecordIsNotLost, against a fleet bucket in debt:
// the failure moved to the host's record of now must reach the store as
// a failure, with the throttle's capacity, not refill the bucket.
func TestARehomedFailureKeepsItsCapacity(t *testing.T) {
	m := miniredis.RunT(t)
	key := DefaultPrefix + budgetKeyPart + "a"
	m.HSet(key, "level", "40000") // the fleet's bucket: 40 tokens of 100, spent
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	f := newFleet(c, Options{MaxHosts: 1})

	stale := f.host("a") // the report's lookup
	f.host("b")          // evicts a, idle
	require.Nil(t, f.tracked("a"))
	f.reportOn("a", stale, retryhttp.FleetReport{Rule: "r", Budget: retryhttp.FleetFailure, Throttle: throttle})

	var b batch
	f.flush(&b)
	var budget *item
	for i := range b.items {
		if b.items[i].kind == budgetItem {
			budget = &b.items[i]
		}
	}
	require.NotNil(t, budget, "got no budget batch")
	assert.Equal(t, int64(100_000), budget.capacity, "got the batch sent with the capacity of a record that saw no throttle")
	assert.Equal(t, "39000", m.HGet(key, "level"), "got the fleet's bucket after one failure (empty: refilled to full)")
}
