package redisfleet_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRealOddOptionsWork makes members with Options no one would choose
// (a prefix of glob characters, a hash tag, spaces and a newline; bounds
// of a host and fewer; the longest durations): New returns a working
// Fleet whatever they are, whose failures and holds reach the store and
// the other members, and every key and channel it uses begins with its
// prefix.
func TestRealOddOptionsWork(t *testing.T) {
	const longest = time.Duration(math.MaxInt64)
	tests := []struct {
		name string
		opts redisfleet.Options
	}{
		{"glob characters", redisfleet.Options{Prefix: "*?[a-z]\\"}},
		{"a hash tag, spaces and a newline", redisfleet.Options{Prefix: "{svc} a b\n:é:"}},
		{"one character", redisfleet.Options{Prefix: ":"}},
		{"no prefix", redisfleet.Options{}},
		{"a bound of one host", redisfleet.Options{Prefix: "one:", MaxHosts: 1}},
		{"a negative bound", redisfleet.Options{Prefix: "neg:", MaxHosts: -7}},
		{"the largest bound", redisfleet.Options{Prefix: "max:", MaxHosts: math.MaxInt}},
		{"everything at its extreme", redisfleet.Options{Prefix: "x:", MaxHosts: math.MinInt,
			FlushInterval: math.MinInt64, StaleAfter: longest, Expiry: -1, Timeout: longest}},
	}
	s := startRedis(t)
	a := admin(t, s.addr)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, a.FlushAll(t.Context()).Err())
			prefix := tt.opts.Prefix
			if prefix == "" {
				prefix = redisfleet.DefaultPrefix
			}
			f := newMember(t, s.addr, tt.opts)
			g := newMember(t, s.addr, tt.opts)
			subscribed(t, f)
			subscribed(t, g)
			g.Look(host, "r")

			f.Report(host, failure)
			waitFor(t, "the failure in the store", func() bool { return budgetLevel(t, a, prefix, host) == 99_000 })
			end := time.Now().Add(time.Minute).Truncate(time.Millisecond)
			f.Report(host, heldUntil("r", end))
			waitFor(t, "the hold to reach the other member", func() bool { return g.Look(host, "r").HoldUntil.Equal(end) })

			keys, err := a.Keys(t.Context(), "*").Result()
			require.NoError(t, err)
			assert.ElementsMatch(t, []string{prefix + "budget:" + host, prefix + "hold:" + host}, keys)
			channels, err := a.PubSubChannels(t.Context(), "*").Result()
			require.NoError(t, err)
			require.NotEmpty(t, channels, "got no channel while two members listen")
			for _, c := range channels {
				assert.True(t, strings.HasPrefix(c, prefix), "got channel %q outside the prefix %q", c, prefix)
			}
		})
	}
}

// TestRealBucketExpiresToFull lets a bucket in debt expire in a real
// store: its key lives Expiry after the last batch, and once it is gone
// the bucket is full again, the next failure finding 99 tokens of 100.
func TestRealBucketExpiresToFull(t *testing.T) {
	const expiry = 500 * time.Millisecond
	s := startRedis(t)
	a := admin(t, s.addr)
	f := newMember(t, s.addr, redisfleet.Options{Expiry: expiry})
	key := redisfleet.DefaultPrefix + "budget:" + host
	for range 60 {
		f.Report(host, failure)
	}
	waitFor(t, "the debt in the store", func() bool { return budgetLevel(t, a, redisfleet.DefaultPrefix, host) == 40_000 })
	waitFor(t, "the member to read the bucket spent", func() bool { return f.Look(host, "r").Spent })
	ttl, err := a.PTTL(t.Context(), key).Result()
	require.NoError(t, err)
	if ttl != -2 { // -2: gone already, on a busy machine
		assert.True(t, ttl > 0 && ttl <= expiry, "got the bucket in debt expiring in %v, want at most %v", ttl, expiry)
	}
	waitFor(t, "the bucket's key to expire", func() bool {
		n, err := a.Exists(t.Context(), key).Result()
		return err == nil && n == 0
	})

	f.Report(host, failure)
	waitFor(t, "the next failure to find a full bucket", func() bool { return budgetLevel(t, a, redisfleet.DefaultPrefix, host) == 99_000 })
	waitFor(t, "the member to read the bucket not spent", func() bool { return !f.Look(host, "r").Spent })
}

// TestRealBucketIsClampedAtEmpty has one member empty the bucket and
// another fail once more: the real store's script keeps the level at
// zero rather than run a debt deeper than the bucket.
func TestRealBucketIsClampedAtEmpty(t *testing.T) {
	s := startRedis(t)
	a := admin(t, s.addr)
	f := newMember(t, s.addr, redisfleet.Options{})
	g := newMember(t, s.addr, redisfleet.Options{})
	for range 100 {
		f.Report(host, failure)
	}
	waitFor(t, "the bucket emptied", func() bool { return budgetLevel(t, a, redisfleet.DefaultPrefix, host) == 0 })
	waitFor(t, "g's warm-up", func() bool { return g.Stats().Flushes > 0 })
	n := g.Stats().Flushes
	g.Report(host, failure) // sent at once: g sent nothing before
	waitFor(t, "g's failure answered", func() bool { return g.Stats().Flushes > n && g.Look(host, "r").Spent })
	assert.Equal(t, int64(0), budgetLevel(t, a, redisfleet.DefaultPrefix, host), "got the level below an empty bucket")
}

// TestRealSuccessesSampledFromARandomPhasePerHost has a member send one
// success to each of many hosts in debt: each success is sent with a
// chance of one in 16, drawn per host, so some hosts, and only some,
// are refilled. A phase of zero would send none (the successes of a
// member that sends a host fewer than 16 would be lost), a phase shared
// by the hosts all or none.
func TestRealSuccessesSampledFromARandomPhasePerHost(t *testing.T) {
	const hosts = 256
	s := startRedis(t)
	a := admin(t, s.addr)
	f := newMember(t, s.addr, redisfleet.Options{})
	name := func(i int) string { return fmt.Sprintf("h%d.example.com", i) }
	levels := func() []int64 {
		p := a.Pipeline()
		cmds := make([]*redis.StringCmd, hosts)
		for i := range hosts {
			cmds[i] = p.HGet(t.Context(), redisfleet.DefaultPrefix+"budget:"+name(i), "level")
		}
		_, _ = p.Exec(t.Context())
		out := make([]int64, hosts)
		for i, c := range cmds {
			v, err := c.Int64()
			if err == redis.Nil {
				v = -1
			}
			out[i] = v
		}
		return out
	}
	for i := range hosts {
		f.Report(name(i), failure)
	}
	waitFor(t, "every host's failure in the store", func() bool {
		for _, l := range levels() {
			if l != 99_000 {
				return false
			}
		}
		return true
	})
	for i := range hosts {
		f.Report(name(i), success)
	}
	// Whatever waits travels in the next round trip, and round trips go
	// one after the other: once a failure reported after the successes
	// is in the store, and then another, every success sent was applied.
	for _, marker := range []string{"marker1.example.com", "marker2.example.com"} {
		f.Report(marker, failure)
		waitFor(t, marker+"'s failure in the store", func() bool { return budgetLevel(t, a, redisfleet.DefaultPrefix, marker) == 99_000 })
	}
	refilled := 0
	for i, l := range levels() {
		switch l {
		case -1: // 99 tokens and a sample worth 16 x 0.25: full
			refilled++
		case 99_000:
		default:
			t.Errorf("host %d: got level %d, want 99000 or full", i, l)
		}
	}
	t.Logf("%d of %d hosts refilled by their one success (expected %d)", refilled, hosts, hosts/16)
	// Binomial(256, 1/16): mean 16, deviation 3.9; the bounds are 4 of
	// them away, and far from none or all.
	assert.GreaterOrEqual(t, refilled, 1, "got no success sent: sampled from a fixed phase")
	assert.LessOrEqual(t, refilled, 48, "got %d of %d single successes sent, want about one in 16", refilled, hosts)
	assert.Zero(t, f.Stats().Dropped)
}

// TestRealHoldIsAKeyWithAnExpiry checks a hold in a real store: a hash
// of rule to "END STATUS" under the prefix, which expires when the hold
// ends, not later, and is gone from the store then.
func TestRealHoldIsAKeyWithAnExpiry(t *testing.T) {
	const ahead = 2 * time.Second
	s := startRedis(t)
	a := admin(t, s.addr)
	f := newMember(t, s.addr, redisfleet.Options{Prefix: "px:"})
	key := "px:hold:" + host
	end := time.Now().Add(ahead).Truncate(time.Millisecond)
	f.Report(host, heldUntil("r", end))
	var v string
	waitFor(t, "the hold in the store", func() bool {
		var err error
		v, err = a.HGet(t.Context(), key, "r").Result()
		return err == nil
	})
	assert.Equal(t, fmt.Sprint(end.UnixMilli(), " 429"), v)
	ttl, err := a.PTTL(t.Context(), key).Result()
	require.NoError(t, err)
	if ttl != -2 { // -2: ended already, on a busy machine
		assert.True(t, ttl > 0 && ttl <= ahead, "got the hold's key expiring in %v, want within the hold's %v", ttl, ahead)
	}
	waitFor(t, "the hold's key to expire", func() bool {
		n, err := a.Exists(t.Context(), key).Result()
		return err == nil && n == 0
	})
	assert.False(t, time.Now().Before(end), "got the hold's key gone before its end")
}
