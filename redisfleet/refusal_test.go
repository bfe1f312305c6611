package redisfleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRealStoreRefusesTheMember starts a store that requires a password
// the member does not give: the store refuses every round trip, which
// Stats counts as failed, and says why; the member keeps its failures
// and its hold, which reach the store once it accepts the member.
func TestRealStoreRefusesTheMember(t *testing.T) {
	tests := []struct {
		name     string
		password string // the member's
	}{
		{"a wrong password", "member's"},
		{"no password", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startRedisWith(t, "", "--requirepass", "store's")
			ctx := context.Background()
			a := redis.NewClient(&redis.Options{Addr: s.addr, Password: "store's"})
			defer a.Close()
			c := redis.NewClient(&redis.Options{Addr: s.addr, Password: tt.password, MaxRetries: -1})
			t.Cleanup(func() { _ = c.Close() })
			f := clientMember(t, c, redisfleet.Options{})
			end := time.Now().Add(time.Minute).Truncate(time.Millisecond)
			for range 2 {
				f.Report(host, failure)
			}
			f.Report(host, heldUntil("r", end)) // a failure too

			waitFor(t, "refused round trips", func() bool { return f.Stats().StoreRefusals >= 3 })
			st := f.Stats()
			assert.Zero(t, st.Flushes, "got round trips counted as answered")
			assert.GreaterOrEqual(t, st.FlushErrors, st.StoreRefusals, "got refusals not counted as failed round trips")
			exists, err := a.Exists(ctx, "retryhttp:budget:"+host, "retryhttp:hold:"+host).Result()
			require.NoError(t, err)
			require.Zero(t, exists, "got keys written by a member the store refuses")

			require.NoError(t, a.ConfigSet(ctx, "requirepass", tt.password).Err())
			waitFor(t, "the kept failures in the store", func() bool {
				return budgetLevel(t, a, redisfleet.DefaultPrefix, host) == 97_000
			})
			waitFor(t, "the kept hold in the store", func() bool {
				v, err := a.HGet(ctx, "retryhttp:hold:"+host, "r").Result()
				return err == nil && v != ""
			})
			waitFor(t, "an answered round trip", func() bool { return f.Stats().Flushes > 0 })
		})
	}
}

// TestRealAKeyOfAnotherTypeIsDropped has a real store hold a string
// where a host's bucket goes, as something else sharing the prefix may
// write: the store answers the host's failures WRONGTYPE, which no round
// trip mends. Its batches are dropped and counted, and the member's
// round trips go on being answered: another host's failures and hold
// reach the store and the other members.
func TestRealAKeyOfAnotherTypeIsDropped(t *testing.T) {
	s := startRedis(t)
	a := admin(t, s.addr)
	require.NoError(t, a.Set(context.Background(), redisfleet.DefaultPrefix+"budget:bad.example.com", "not a hash", 0).Err())
	m := newMember(t, s.addr, redisfleet.Options{})
	other := newMember(t, s.addr, redisfleet.Options{})
	subscribed(t, m)
	subscribed(t, other)
	other.Look(host, "r") // met
	m.Report("bad.example.com", failure)
	waitFor(t, "the bad host's batch dropped", func() bool { return m.Stats().Dropped == 1 })
	errs := m.Stats().FlushErrors
	for range 3 {
		m.Report(host, failure)
	}
	end := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	m.Report(host, heldUntil("r", end))
	waitFor(t, "the good host's hold at the other member", func() bool { return other.Look(host, "r").HoldUntil.Equal(end) })
	assert.Equal(t, int64(96_000), budgetLevel(t, a, redisfleet.DefaultPrefix, host), "the good host's failures")
	assert.Equal(t, errs, m.Stats().FlushErrors, "round trips failed after the rejection")
	assert.Equal(t, uint64(1), m.Stats().Dropped)
}
