package redisfleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// budgetLevel returns host's bucket as a stored in the store a talks to,
// in milli-tokens: -1 for no bucket (full).
func budgetLevel(t *testing.T, a redis.Cmdable, prefix, host string) int64 {
	t.Helper()
	v, err := a.HGet(context.Background(), prefix+"budget:"+host, "level").Int64()
	if err == redis.Nil {
		return -1
	}
	require.NoError(t, err)
	return v
}

// countedOnce has f report failures on live, whose keys a live node
// holds, while every round trip also carries work for dead, whose node
// does not answer; each failure must count once, though the round trips
// that carry it fail. level reads live's bucket from its node.
func countedOnce(t *testing.T, f *redisfleet.Fleet, live, dead string, level func() int64) {
	t.Helper()
	const failures = 5
	f.Report(dead, failure)
	for i := range failures {
		f.Report(live, failure)
		want := int64(100_000 - (i+1)*1000)
		waitFor(t, "the failure on the live node", func() bool { l := level(); return l >= 0 && l <= want })
		assert.Equal(t, want, level(), "failure %d", i+1)
		f.Report(dead, failure) // more work for the dead node, in the next round trips
	}
	// A few more round trips, each with the dead node's work in it: none
	// may send a failure on the live node again.
	errs := f.Stats().FlushErrors
	waitFor(t, "more round trips", func() bool { return f.Stats().FlushErrors >= errs+3 })
	assert.Equal(t, int64(100_000-failures*1000), level(), "got the bucket after %d failures", failures)
}

// TestRealOneNodeDownCountsOnce stops one node of a store whose keys
// several nodes share, and checks that the round trips, which fail for
// that node's commands, settle the other nodes' commands as answered:
// their deltas count once.
func TestRealOneNodeDownCountsOnce(t *testing.T) {
	t.Run("cluster, a primary frozen", func(t *testing.T) {
		c := startCluster(t, time.Second)
		const down, up = 2, 0
		live := hostOn(t, func(h string) bool { return c.primaryOf(t, redisfleet.DefaultPrefix+"budget:"+h) == up })
		dead := hostOn(t, func(h string) bool { return c.primaryOf(t, redisfleet.DefaultPrefix+"budget:"+h) == down })
		// A frozen primary accepts and never answers: the round trips
		// wait for their deadline, and go-redis's own retries to it
		// outlast it, which it then reports on every command, answered
		// or not.
		cc := c.client(t, func(o *redis.ClusterOptions) { o.ContextTimeoutEnabled = true })
		f := clientMember(t, cc, redisfleet.Options{Timeout: 200 * time.Millisecond})
		waitFor(t, "the warm-up", func() bool { return f.Stats().Flushes > 0 })
		c.nodes[down].Pause()
		defer c.nodes[down].Resume()
		countedOnce(t, f, live, dead, func() int64 { return budgetLevel(t, c.admins[up], redisfleet.DefaultPrefix, live) })
	})
	t.Run("ring, a shard killed", func(t *testing.T) {
		shards := startRing(t, 2)
		// No heartbeat in the test's time: the Ring keeps the dead
		// shard, as it does for the seconds before it judges it down.
		r := ringClient(t, shards, func(o *redis.RingOptions) { o.HeartbeatFrequency = time.Hour })
		live := hostOn(t, func(h string) bool { return shardOf(t, r, shards, redisfleet.DefaultPrefix+"budget:"+h) == 0 })
		dead := hostOn(t, func(h string) bool { return shardOf(t, r, shards, redisfleet.DefaultPrefix+"budget:"+h) == 1 })
		f := clientMember(t, r, redisfleet.Options{Timeout: 200 * time.Millisecond})
		waitFor(t, "the warm-up", func() bool { return f.Stats().Flushes > 0 })
		shards[1].Kill()
		a := admin(t, shards[0].addr)
		countedOnce(t, f, live, dead, func() int64 { return budgetLevel(t, a, redisfleet.DefaultPrefix, live) })
	})
}

// TestRealBatchSentAgainAfterARefillCountsOnce has the store apply a
// member's failure and the member lose the answer (it comes after the
// round trip's deadline), then another member's successes refill the
// bucket to full, and the first member sends its failure again: the
// store, which kept the member's record through the refill, counts the
// failure once.
func TestRealBatchSentAgainAfterARefillCountsOnce(t *testing.T) {
	s := startRedis(t)
	p := startProxy(t, s.addr, 0)
	const prefix = "p:"
	a := newMember(t, p.Addr(), redisfleet.Options{Prefix: prefix, Timeout: 200 * time.Millisecond})
	b := newMember(t, s.addr, redisfleet.Options{Prefix: prefix})
	waitFor(t, "the warm-ups", func() bool { return a.Stats().Flushes > 0 && b.Stats().Flushes > 0 })
	st := admin(t, s.addr)
	level := func() int64 { return budgetLevel(t, st, prefix, host) }

	p.Freeze() // the store's replies to a held back: its requests go through
	errs := a.Stats().FlushErrors
	a.Report(host, failure)
	waitFor(t, "a's failure applied", func() bool { return level() == 99_000 })
	waitFor(t, "a's answer lost", func() bool { return a.Stats().FlushErrors > errs })

	// 16 successes make one sample, worth 16 x 0.25 tokens: full again.
	for range 16 {
		b.Report(host, success)
	}
	waitFor(t, "b's refill", func() bool { return level() == -1 })

	n := a.Stats().Flushes
	p.Thaw()
	waitFor(t, "a's failure sent again and answered", func() bool { return a.Stats().Flushes > n })
	assert.Equal(t, int64(-1), level(), "got a's failure counted twice")

	// The full bucket is a key of the members' records, which expires,
	// under the prefix.
	ttl, err := st.PTTL(t.Context(), prefix+"budget:"+host).Result()
	require.NoError(t, err)
	assert.True(t, ttl > 0 && ttl <= redisfleet.DefaultExpiry, "got the full bucket's records expiring in %v", ttl)
	keys, err := st.Keys(t.Context(), "*").Result()
	require.NoError(t, err)
	for _, k := range keys {
		assert.True(t, strings.HasPrefix(k, prefix), "got key %q outside the prefix", k)
	}
}
