package redisfleet_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const host = "api.example.com"

func TestMembersShareABudget(t *testing.T) {
	m := miniStore(t)
	a := newMember(t, m.Addr(), redisfleet.Options{})
	b := newMember(t, m.Addr(), redisfleet.Options{})

	// 49 failures leave 51 tokens: not spent.
	for range 49 {
		a.Report(host, failure)
	}
	waitFor(t, "a's failures in the store", func() bool {
		return m.Exists("retryhttp:budget:"+host) && stored(t, m, "retryhttp:budget:"+host) == 51_000
	})
	b.Report(host, failure) // b learns the level by its own report: 50 tokens, spent
	waitFor(t, "b to read the bucket spent", func() bool { return b.Look(host, "methodConfig[0]").Spent })
	assert.False(t, a.Look(host, "methodConfig[0]").Spent, "got a spent before it read the store again")
	assert.Equal(t, retryhttp.FleetView{}, a.Look("other.example.com", "methodConfig[0]"), "got another host's view changed")
}

// stored returns the level of the bucket at key in m, in milli-tokens:
// -1 for no level (full).
func stored(t *testing.T, m *miniredis.Miniredis, key string) int64 {
	t.Helper()
	v := m.HGet(key, "level")
	if v == "" {
		return -1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	require.NoError(t, err)
	return n
}

func TestSuccessesRefillTheFleet(t *testing.T) {
	m := miniStore(t)
	a := newMember(t, m.Addr(), redisfleet.Options{})
	key := "retryhttp:budget:" + host
	for range 60 {
		a.Report(host, failure)
	}
	waitFor(t, "the debt in the store", func() bool { return stored(t, m, key) == 40_000 })
	waitFor(t, "a to read the bucket spent", func() bool { return a.Look(host, "r").Spent })
	// 240 successes at 0.25 make the 60 tokens missing: 15 samples of
	// 16, whatever the phase of the sampling.
	for range 240 {
		a.Report(host, success)
	}
	waitFor(t, "the refill in the store", func() bool { return stored(t, m, key) == -1 })
	waitFor(t, "a to read the bucket full", func() bool { return !a.Look(host, "r").Spent })
	// The full bucket keeps a's record, for a batch sent again, until
	// the key expires an Expiry after the refill.
	fields, err := m.HKeys(key)
	require.NoError(t, err)
	assert.Len(t, fields, 1, "got fields %v, want a's record only", fields)
	assert.Equal(t, redisfleet.DefaultExpiry, m.TTL(key), "got the full bucket's expiry")
}

func TestNoThrottleChangesNoBudget(t *testing.T) {
	m := miniStore(t)
	a := newMember(t, m.Addr(), redisfleet.Options{Prefix: "p:"})
	r := failure
	r.Throttle = nil
	for range 80 {
		a.Report(host, r)
	}
	r.HoldUntil, r.HoldStatus = time.Now().Add(time.Minute), 429
	a.Report(host, r) // a hold still goes
	waitFor(t, "the hold in the store", func() bool { return m.Exists("p:hold:" + host) })
	assert.Equal(t, []string{"p:hold:" + host}, m.Keys(), "got keys %v, want the hold's only", m.Keys())
}
