package redisfleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoreStoppedAndBack stops the store under a member: Report and
// Look go on answering from memory ("allow" once the reading is stale),
// the flusher keeps trying, and when the store is back the deltas kept
// meanwhile reach it.
func TestStoreStoppedAndBack(t *testing.T) {
	m := miniStore(t)
	key := "retryhttp:budget:" + host
	a := newMember(t, m.Addr(), redisfleet.Options{StaleAfter: 300 * time.Millisecond})
	for range 60 {
		a.Report(host, failure)
	}
	waitFor(t, "a to read the bucket spent", func() bool { return a.Look(host, "r").Spent })

	m.Close()
	errs := a.Stats().FlushErrors
	a.Report(host, failure) // kept while the store is down
	waitFor(t, "a failed round trip", func() bool { return a.Stats().FlushErrors > errs })
	waitFor(t, "the reading to go stale", func() bool { return !a.Look(host, "r").Spent })
	assert.Equal(t, retryhttp.FleetView{}, a.Look(host, "r"), "got a view from a stale reading")

	require.NoError(t, m.Restart())
	waitFor(t, "the kept failure in the store", func() bool { return stored(t, m, key) == 39_000 })
	waitFor(t, "a to read the bucket spent again", func() bool { return a.Look(host, "r").Spent })
	a.Report(host, failure)
	waitFor(t, "the next failure in the store", func() bool { return stored(t, m, key) == 38_000 })
}

// TestStoreRefusing makes every command fail with an error reply: the
// store answers, but takes nothing; the deltas wait for it to take them.
func TestStoreRefusing(t *testing.T) {
	m := miniStore(t)
	key := "retryhttp:budget:" + host
	a := newMember(t, m.Addr(), redisfleet.Options{})
	waitFor(t, "the warm-up", func() bool { return a.Stats().Flushes > 0 })
	m.SetError("LOADING the store is loading")
	for range 3 {
		a.Report(host, failure)
	}
	waitFor(t, "a refused round trip", func() bool { return a.Stats().StoreRefusals > 0 })
	assert.False(t, m.Exists(key))
	assert.GreaterOrEqual(t, a.Stats().FlushErrors, a.Stats().StoreRefusals, "got refused round trips not counted as failed")
	m.SetError("")
	waitFor(t, "the kept failures in the store", func() bool { return stored(t, m, key) == 97_000 })
}

// TestScriptsLoadedAgain flushes the store's scripts, as a restart
// does: the next EVALSHA meets NOSCRIPT, and the delta goes again with
// the script whole.
func TestScriptsLoadedAgain(t *testing.T) {
	m := miniStore(t)
	key := "retryhttp:budget:" + host
	a := newMember(t, m.Addr(), redisfleet.Options{})
	a.Report(host, failure)
	waitFor(t, "the first failure", func() bool { return stored(t, m, key) == 99_000 })

	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	require.NoError(t, c.ScriptFlush(context.Background()).Err())
	a.Report(host, failure)
	waitFor(t, "the failure after the scripts went", func() bool { return stored(t, m, key) == 98_000 })
	a.Report(host, failure) // by EVALSHA again: EVAL cached the script
	waitFor(t, "the next failure", func() bool { return stored(t, m, key) == 97_000 })
	assert.Zero(t, a.Stats().Dropped)
}

// TestWarmUpRetriedWhileTheStoreIsDown starts a member while the store
// is down: its warm-up, a round trip with no work in it, is tried again
// until the store answers, so that the member's first flush finds the
// scripts and an open connection.
func TestWarmUpRetriedWhileTheStoreIsDown(t *testing.T) {
	m := miniStore(t)
	addr := m.Addr()
	m.Close()
	a := newMember(t, addr, redisfleet.Options{})
	waitFor(t, "failed warm-ups", func() bool { return a.Stats().FlushErrors >= 2 })
	require.NoError(t, m.Restart())
	waitFor(t, "the warm-up", func() bool { return a.Stats().Flushes > 0 })
}
