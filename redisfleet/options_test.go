package redisfleet_test

import (
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRealDurationsOfAnyLength runs a member whose durations are
// negative (their defaults) or the longest a Duration holds: its
// failure reaches the store, under a key that expires, and its
// subscription works, so another member's hold reaches it.
func TestRealDurationsOfAnyLength(t *testing.T) {
	const longest = time.Duration(math.MaxInt64)
	tests := []struct {
		name string
		opts redisfleet.Options
	}{
		{"negative", redisfleet.Options{FlushInterval: -1, StaleAfter: -1, Expiry: -1, Timeout: -1}},
		{"the longest", redisfleet.Options{FlushInterval: longest, StaleAfter: longest, Expiry: longest, Timeout: longest}},
		{"the longest Timeout", redisfleet.Options{Timeout: longest}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startRedis(t)
			a := admin(t, s.addr)
			f := newMember(t, s.addr, tt.opts)
			other := newMember(t, s.addr, redisfleet.Options{})
			subscribed(t, f)
			f.Look(host, "r")
			f.Report(host, failure)
			waitFor(t, "the failure in the store", func() bool { return budgetLevel(t, a, redisfleet.DefaultPrefix, host) == 99_000 })
			ttl, err := a.PTTL(t.Context(), redisfleet.DefaultPrefix+"budget:"+host).Result()
			require.NoError(t, err)
			assert.Positive(t, ttl, "got the bucket's key not expiring")

			end := time.Now().Add(time.Minute).Truncate(time.Millisecond)
			other.Report(host, heldUntil("r", end))
			waitFor(t, "the hold to reach the member", func() bool { return f.Look(host, "r").HoldUntil.Equal(end) })
		})
	}
}

// TestAnExpiryBelowAMillisecond checks that an Expiry shorter than a
// millisecond, which the store counts in, still expires the key rather
// than delete it at once (PEXPIRE 0): miniredis's clock stands still,
// so the key stays.
func TestAnExpiryBelowAMillisecond(t *testing.T) {
	m := miniStore(t)
	key := redisfleet.DefaultPrefix + "budget:" + host
	f := newMember(t, m.Addr(), redisfleet.Options{Expiry: time.Microsecond})
	f.Report(host, failure)
	waitFor(t, "the failure in the store", func() bool { return m.Exists(key) })
	assert.Equal(t, int64(99_000), stored(t, m, key))
	assert.Equal(t, time.Millisecond, m.TTL(key))
}

// New with no client panics with a message that says so, whether the
// client is nil or a nil pointer of go-redis's client types.
func TestNewWithANilClientSaysSo(t *testing.T) {
	var client *redis.Client
	var cluster *redis.ClusterClient
	var ring *redis.Ring
	for _, c := range []redis.UniversalClient{nil, client, cluster, ring} {
		assert.PanicsWithValue(t, "redisfleet: New with a nil client", func() { redisfleet.New(c, redisfleet.Options{}) }, "%T", c)
	}
}
