package redisfleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/require"
)

// TestRealRingShardDies kills the shard of a Ring that holds the host's
// keys and the holds channel, and starts it again, empty: while it is
// out of the Ring, the host's bucket and holds live on the other shard,
// fresh (a full bucket, no hold), and the members follow the channel
// there; once the Ring puts it back, they follow it back.
func TestRealRingShardDies(t *testing.T) {
	shards := startRing(t, 2)
	fast := func(o *redis.RingOptions) { o.HeartbeatFrequency = 50 * time.Millisecond }
	probe := ringClient(t, shards, fast)
	const dies = 1
	opts := redisfleet.Options{Prefix: ringPrefixOn(t, probe, shards, host, dies, dies)}
	var members []*redisfleet.Fleet
	for range 3 {
		members = append(members, clientMember(t, ringClient(t, shards, fast), opts))
	}
	for _, f := range members {
		subscribed(t, f)
		f.Look(host, "r")
	}
	holdReaches := func(what string, d time.Duration) {
		t.Helper()
		end := time.Now().Add(d).Truncate(time.Millisecond)
		members[0].Report(host, heldUntil("r", end))
		for _, f := range members[1:] {
			waitFor(t, what, func() bool { return f.Look(host, "r").HoldUntil.Equal(end) })
		}
	}
	holdReaches("a hold through the first shard", time.Minute)
	// Its 429 counted as a failure there, before the shard dies: a
	// failure the shard never answered would go to the other shard,
	// rightly, and count there too.
	dying := admin(t, shards[dies].addr)
	waitFor(t, "the first failure in the shard that dies", func() bool {
		return budgetLevel(t, dying, opts.Prefix, host) == 99_000
	})

	following := func(n uint64) {
		t.Helper()
		for _, f := range members {
			waitFor(t, "the members to follow the channel", func() bool { return f.Stats().Subscriptions >= n })
		}
	}
	shards[dies].Kill()
	waitFor(t, "the Ring to take the shard out", func() bool { return probe.Len() == 1 })
	following(2)
	holdReaches("a hold through the other shard", 2*time.Minute)
	members[1].Report(host, failure)
	a := admin(t, shards[0].addr)
	// The 429 of the hold counted as a failure too.
	var level int64
	waitFor(t, "the failures in the other shard, on a full bucket", func() bool {
		level = budgetLevel(t, a, opts.Prefix, host)
		return level == 98_000
	}, func() string { return fmt.Sprintf("its level is %d", level) })

	require.NoError(t, shards[dies].Start())
	waitFor(t, "the Ring to put the shard back", func() bool { return probe.Len() == 2 })
	following(3)
	holdReaches("a hold through the first shard again", 3*time.Minute)
}
