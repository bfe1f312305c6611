package redisfleet

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newMini starts a miniredis and a client of it, both closed at the end
// of the test.
func newMini(t *testing.T) (*miniredis.Miniredis, *redis.Client) {
	t.Helper()
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return m, c
}

func TestBudgetScript(t *testing.T) {
	const key = "retryhttp:budget:api.example.com"
	tests := []struct {
		name      string
		stored    string // "" for no key
		delta     int64
		capacity  int64
		want      int64
		wantKey   string // "" for no key
		wantTTLMs int64  // expiry set on the key, when there is one
	}{
		{"absent is full, a failure takes a token", "", -1000, 10000, 9000, "9000", 60000},
		{"a success on a full bucket stores nothing", "", 250, 10000, 10000, "", 0},
		{"reaching the capacity deletes the key", "9000", 1000, 10000, 10000, "", 0},
		{"passing the capacity deletes the key", "9900", 4000, 10000, 10000, "", 0},
		{"a debt below zero is clamped at zero", "500", -1000, 10000, 0, "0", 60000},
		{"an empty bucket stays a key", "0", -16000, 10000, 0, "0", 60000},
		{"a refill below the capacity is kept", "4000", 250, 10000, 4250, "4250", 60000},
		{"a level above a smaller capacity reads as it", "90000", -1000, 10000, 9000, "9000", 60000},
		{"a corrupt value reads as full", "junk", -1000, 10000, 9000, "9000", 60000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, c := newMini(t)
			if tt.stored != "" {
				require.NoError(t, m.Set(key, tt.stored))
			}
			got, err := c.Eval(context.Background(), budgetLua, []string{key}, tt.delta, tt.capacity, 60000).Int64()
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "got level %d, want %d", got, tt.want)
			if tt.wantKey == "" {
				assert.False(t, m.Exists(key), "got a key, want none (a full bucket)")
				return
			}
			v, err := m.Get(key)
			require.NoError(t, err)
			assert.Equal(t, tt.wantKey, v, "got stored %q, want %q", v, tt.wantKey)
			assert.Equal(t, time.Duration(tt.wantTTLMs)*time.Millisecond, m.TTL(key))
		})
	}
}

func TestBudgetKeyExpiresToFull(t *testing.T) {
	const key = "p:budget:h"
	m, c := newMini(t)
	ctx := context.Background()
	_, err := c.Eval(ctx, budgetLua, []string{key}, -3000, 10000, 1000).Int64()
	require.NoError(t, err)
	m.FastForward(999 * time.Millisecond)
	require.True(t, m.Exists(key), "the debt expired before its expiry")
	// Each write sets the expiry anew.
	_, err = c.Eval(ctx, budgetLua, []string{key}, -1000, 10000, 1000).Int64()
	require.NoError(t, err)
	m.FastForward(999 * time.Millisecond)
	require.True(t, m.Exists(key), "a write did not renew the expiry")
	m.FastForward(2 * time.Millisecond)
	assert.False(t, m.Exists(key), "got the debt after its expiry, want it forgotten")
	got, err := c.Eval(ctx, budgetLua, []string{key}, 0, 10000, 1000).Int64()
	require.NoError(t, err)
	assert.Equal(t, int64(10000), got, "got level %d after expiry, want full", got)
}

func TestHoldScriptOnlyExtends(t *testing.T) {
	const key = "p:hold:h"
	type set struct {
		rule    string
		end     int64
		status  int
		ttlMs   int64
		wantSet int64
	}
	steps := []set{
		{"r", 5000, 429, 5000, 1},
		{"r", 4000, 503, 4000, 0}, // shorter: kept as it was
		{"r", 5000, 503, 5000, 0}, // as long: kept
		{"r", 9000, 503, 9000, 1}, // longer: extended
		{"s", 2000, 429, 2000, 1}, // another rule, shorter: the key's expiry stays
	}
	m, c := newMini(t)
	for i, s := range steps {
		got, err := c.Eval(context.Background(), holdLua, []string{key}, s.rule, s.end, s.status, s.ttlMs).Int64()
		require.NoError(t, err)
		assert.Equal(t, s.wantSet, got, "step %d: got %d, want %d", i, got, s.wantSet)
	}
	assert.Equal(t, "9000 503", m.HGet(key, "r"))
	assert.Equal(t, "2000 429", m.HGet(key, "s"))
	assert.Equal(t, 9000*time.Millisecond, m.TTL(key), "got expiry %v, want the longest hold's", m.TTL(key))
}

func TestHoldMessage(t *testing.T) {
	p := holdMessage(1700000000123, 429, "api.example.com:8443", "methodConfig[0] with spaces")
	end, status, host, rule, ok := parseHoldMessage(p)
	require.True(t, ok, "got no parse of %q", p)
	assert.Equal(t, int64(1700000000123), end)
	assert.Equal(t, 429, status)
	assert.Equal(t, "api.example.com:8443", host)
	assert.Equal(t, "methodConfig[0] with spaces", rule)

	for _, bad := range []string{"", "1 2 3", "x 429 h r", "1 x h r", "-5 429 h r", "1 429  r", "0 429 h r"} {
		_, _, _, _, ok := parseHoldMessage(bad)
		assert.False(t, ok, "got %q parsed, want it refused", bad)
	}
}
