package redisfleet_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// subscribed waits until f listens to the holds channel.
func subscribed(t *testing.T, f *redisfleet.Fleet) {
	t.Helper()
	waitFor(t, "the subscription", func() bool { return f.Stats().Subscriptions > 0 })
}

func TestHoldReachesMembersThatMetTheHost(t *testing.T) {
	m := miniStore(t)
	a := newMember(t, m.Addr(), redisfleet.Options{})
	b := newMember(t, m.Addr(), redisfleet.Options{})
	c := newMember(t, m.Addr(), redisfleet.Options{})
	subscribed(t, b)
	subscribed(t, c)
	b.Look(host, "r") // b has met the host; c has not

	end := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	a.Report(host, heldUntil("r", end))
	assert.Equal(t, end, a.Look(host, "r").HoldUntil, "got the reporting member's own hold not in force at once")
	waitFor(t, "the hold to reach b", func() bool { return b.Look(host, "r").HoldUntil.Equal(end) })
	v := b.Look(host, "r")
	assert.Equal(t, 429, v.HoldStatus)
	assert.False(t, v.Spent)
	assert.True(t, b.Look(host, "other").HoldUntil.IsZero(), "got another rule held")
	assert.Equal(t, uint64(1), b.Stats().HoldsLearned)
	assert.Equal(t, uint64(0), c.Stats().HoldsLearned, "got a member that never met the host tracking its hold")

	// c meets the host later: it fetches the hold.
	c.Look(host, "r")
	waitFor(t, "c to fetch the hold", func() bool { return c.Look(host, "r").HoldUntil.Equal(end) })
}

func TestHoldsOnlyExtendAcrossMembers(t *testing.T) {
	m := miniStore(t)
	a := newMember(t, m.Addr(), redisfleet.Options{})
	b := newMember(t, m.Addr(), redisfleet.Options{})
	subscribed(t, a)
	subscribed(t, b)
	a.Look(host, "r")
	b.Look(host, "r")

	long := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	short := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	a.Report(host, heldUntil("r", long))
	waitFor(t, "a's hold to reach b", func() bool { return b.Look(host, "r").HoldUntil.Equal(long) })
	before := b.Stats().Flushes
	b.Report(host, heldUntil("r", short))
	// b's shorter hold reaches the store and a's listener; neither
	// shortens the long one.
	waitFor(t, "b's round trip", func() bool { return b.Stats().Flushes > before })
	assert.Equal(t, long, b.Look(host, "r").HoldUntil)
	assert.Equal(t, long, a.Look(host, "r").HoldUntil)
	ttl := m.TTL("retryhttp:hold:" + host)
	assert.Greater(t, ttl, 59*time.Minute, "got the hold key expiring in %v, want the long hold's", ttl)
}

func TestAHoldEnds(t *testing.T) {
	m := miniStore(t)
	a := newMember(t, m.Addr(), redisfleet.Options{})
	end := time.Now().Add(50 * time.Millisecond)
	a.Report(host, heldUntil("r", end))
	require.False(t, a.Look(host, "r").HoldUntil.IsZero())
	waitFor(t, "the hold to end", func() bool { return a.Look(host, "r").HoldUntil.IsZero() })
	assert.False(t, time.Now().Before(end), "got the hold lifted before its end")
}

// TestHoldsFetchedAgainAfterAReconnect sets a hold in the store while a
// member's subscription is down, so that no message reaches it: the
// member fetches the host's holds when it subscribes again.
func TestHoldsFetchedAgainAfterAReconnect(t *testing.T) {
	m := miniStore(t)
	b := newMember(t, m.Addr(), redisfleet.Options{})
	subscribed(t, b)
	b.Look(host, "r")
	waitFor(t, "b's first fetch", func() bool { return b.Stats().Flushes >= 2 })

	m.Close()
	end := time.Now().Add(time.Minute).UnixMilli()
	m.HSet("retryhttp:hold:"+host, "r", strconv.FormatInt(end, 10)+" 503")
	require.NoError(t, m.Restart())
	waitFor(t, "b to subscribe again", func() bool { return b.Stats().Subscriptions >= 2 })
	waitFor(t, "b to fetch the hold set while it was away", func() bool {
		return b.Look(host, "r").HoldUntil.Equal(time.UnixMilli(end))
	})
	assert.Equal(t, 503, b.Look(host, "r").HoldStatus)
}

// TestHoldsTravelThroughARing runs the members over a Ring of two shards:
// a hold's message must go to the shard the members subscribe on, which
// go-redis picks by the channel's name, not to a shard picked otherwise
// (a Ring pipeline sends a keyless command by the hash of its name).
// Several prefixes, so that some channel lands on the other shard.
func TestHoldsTravelThroughARing(t *testing.T) {
	m1, m2 := miniStore(t), miniStore(t)
	for _, prefix := range []string{"p0:", "p1:", "p2:", "p3:", "p4:", "p5:"} {
		t.Run(prefix, func(t *testing.T) {
			opts := redisfleet.Options{Prefix: prefix}
			a := newRingMember(t, opts, m1.Addr(), m2.Addr())
			b := newRingMember(t, opts, m1.Addr(), m2.Addr())
			subscribed(t, a)
			subscribed(t, b)
			b.Look(host, "r")
			waitFor(t, "b's fetch", func() bool { return b.Stats().Flushes >= 2 })
			end := time.Now().Add(time.Minute).Truncate(time.Millisecond)
			a.Report(host, heldUntil("r", end))
			waitFor(t, "the hold to reach b", func() bool { return b.Look(host, "r").HoldUntil.Equal(end) })
		})
	}
}

// newRingMember returns a Fleet over its own Ring of the shards at addrs,
// both closed at the end of the test.
func newRingMember(t *testing.T, opts redisfleet.Options, addrs ...string) *redisfleet.Fleet {
	shards := map[string]string{}
	for i, a := range addrs {
		shards[fmt.Sprint("shard", i)] = a
	}
	r := redis.NewRing(&redis.RingOptions{Addrs: shards})
	f := redisfleet.New(r, opts)
	t.Cleanup(func() {
		_ = f.Close()
		_ = r.Close()
	})
	return f
}

// TestRealFarHoldsAreKept has a member meet holds that end far ahead,
// past what a Unix time in nanoseconds holds (the year 2262): each is
// in force for the member, at most a century ahead, and reaches another
// member through a real store, which takes the hold key's expiry.
func TestRealFarHoldsAreKept(t *testing.T) {
	s := startRedis(t)
	a := newMember(t, s.addr, redisfleet.Options{})
	b := newMember(t, s.addr, redisfleet.Options{})
	subscribed(t, b)
	tests := []struct {
		name string
		end  time.Time
	}{
		{"the year 2300", time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"the year 100,000", time.Date(100_000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"the year a billion", time.Date(1_000_000_000, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.name + ".example.com"
			b.Look(h, "r")
			before := time.Now()
			a.Report(h, heldUntil("r", tt.end))
			v := a.Look(h, "r")
			assert.True(t, v.HoldUntil.After(before.AddDate(99, 0, 0)), "got the hold until %v", v.HoldUntil)
			assert.False(t, v.HoldUntil.After(tt.end), "got the hold until %v, past its end", v.HoldUntil)
			waitFor(t, "the hold to reach b", func() bool { return b.Look(h, "r").HoldUntil.Equal(v.HoldUntil) })
		})
	}
	assert.Zero(t, a.Stats().FlushErrors, "got the store refusing a far hold")
}
