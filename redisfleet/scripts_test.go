package redisfleet

import (
	"context"
	"strings"
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

// runBudget runs budgetLua on key for member's batch seq of delta, at
// now (Unix ms), with an expiry of a minute.
func runBudget(t *testing.T, c *redis.Client, key, member string, seq, delta, capacity, now int64) int64 {
	t.Helper()
	got, err := c.Eval(context.Background(), budgetLua, []string{key}, member, seq, delta, capacity, 60000, now).Int64()
	require.NoError(t, err)
	return got
}

func TestBudgetScript(t *testing.T) {
	const key = "retryhttp:budget:api.example.com"
	const now = 1_000_000
	tests := []struct {
		name       string
		stored     map[string]string // the hash before; nil for no key
		member     string
		seq, delta int64
		capacity   int64
		want       int64
		wantHash   map[string]string // the hash after; nil for no key
		untouched  bool              // the key's expiry not set: left as it was (none, here)
	}{
		{"absent is full, a failure takes a token", nil, "m1", 1, -1000, 10000, 9000,
			map[string]string{"level": "9000", "m1": "1 1000000"}, false},
		{"a success on a full bucket stores nothing", nil, "m1", 1, 250, 10000, 10000, nil, false},
		{"reaching the capacity drops the level, keeps the records", map[string]string{"level": "9000", "m2": "4 999000"},
			"m1", 1, 1000, 10000, 10000, map[string]string{"m1": "1 1000000", "m2": "4 999000"}, false},
		{"passing the capacity drops the level", map[string]string{"level": "9900"}, "m1", 1, 4000, 10000, 10000,
			map[string]string{"m1": "1 1000000"}, false},
		{"a full bucket's record applies a batch sent again once", map[string]string{"m1": "7 999990"}, "m1", 7, -1000, 10000, 10000,
			map[string]string{"m1": "7 999990"}, true},
		{"a failure on a full bucket's records takes a token", map[string]string{"m1": "7 999990"}, "m2", 3, -1000, 10000, 9000,
			map[string]string{"level": "9000", "m1": "7 999990", "m2": "3 1000000"}, false},
		{"a success on a full bucket's records adds its own, the expiry as it was", map[string]string{"m1": "7 999990"},
			"m2", 3, 250, 10000, 10000, map[string]string{"m1": "7 999990", "m2": "3 1000000"}, true},
		{"a corrupt level refilled is dropped", map[string]string{"level": "junk", "m2": "4 999000"}, "m1", 1, 250, 10000, 10000,
			map[string]string{"m1": "1 1000000", "m2": "4 999000"}, false},
		{"a debt below zero is clamped at zero", map[string]string{"level": "500"}, "m1", 1, -1000, 10000, 0,
			map[string]string{"level": "0", "m1": "1 1000000"}, false},
		{"an empty bucket stays a key", map[string]string{"level": "0"}, "m1", 1, -16000, 10000, 0,
			map[string]string{"level": "0", "m1": "1 1000000"}, false},
		{"a refill below the capacity is kept", map[string]string{"level": "4000"}, "m1", 1, 250, 10000, 4250,
			map[string]string{"level": "4250", "m1": "1 1000000"}, false},
		{"a level above a smaller capacity reads as it", map[string]string{"level": "90000"}, "m1", 1, -1000, 10000, 9000,
			map[string]string{"level": "9000", "m1": "1 1000000"}, false},
		{"a corrupt level reads as full", map[string]string{"level": "junk"}, "m1", 1, -1000, 10000, 9000,
			map[string]string{"level": "9000", "m1": "1 1000000"}, false},
		{"a batch sent again is applied once", map[string]string{"level": "9000", "m1": "7 999990"}, "m1", 7, -1000, 10000, 9000,
			map[string]string{"level": "9000", "m1": "7 999990"}, true},
		{"an older batch, come late, is not applied", map[string]string{"level": "9000", "m1": "7 999990"}, "m1", 6, -1000, 10000, 9000,
			map[string]string{"level": "9000", "m1": "7 999990"}, true},
		{"the member's next batch is applied", map[string]string{"level": "9000", "m1": "7 999990"}, "m1", 8, -1000, 10000, 8000,
			map[string]string{"level": "8000", "m1": "8 1000000"}, false},
		{"another member's batch of the same number is applied", map[string]string{"level": "9000", "m1": "7 999990"}, "m2", 7, -1000, 10000, 8000,
			map[string]string{"level": "8000", "m1": "7 999990", "m2": "7 1000000"}, false},
		{"a corrupt record applies the batch", map[string]string{"level": "9000", "m1": "junk"}, "m1", 7, -1000, 10000, 8000,
			map[string]string{"level": "8000", "m1": "7 1000000"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, c := newMini(t)
			for f, v := range tt.stored {
				m.HSet(key, f, v)
			}
			got := runBudget(t, c, key, tt.member, tt.seq, tt.delta, tt.capacity, now)
			assert.Equal(t, tt.want, got, "got level %d, want %d", got, tt.want)
			if tt.wantHash == nil {
				assert.False(t, m.Exists(key), "got a key, want none (a full bucket)")
				return
			}
			fields, err := m.HKeys(key)
			require.NoError(t, err)
			hash := map[string]string{}
			for _, f := range fields {
				hash[f] = m.HGet(key, f)
			}
			assert.Equal(t, tt.wantHash, hash)
			wantTTL := time.Minute
			if tt.untouched {
				wantTTL = 0
			}
			assert.Equal(t, wantTTL, m.TTL(key), "got the key's expiry")
		})
	}
}

// TestBudgetScriptForgetsOldRecords checks that the records of members
// gone quiet for longer than the expiry are forgotten, a few at each
// call, while the bucket stays in debt, and while a bucket refilled to
// full keeps its records.
func TestBudgetScriptForgetsOldRecords(t *testing.T) {
	const key = "p:budget:h"
	const now = 10_000_000
	tests := []struct {
		name  string
		level string // "" for none: full
		delta int64
	}{
		{"in debt", "5000", -1},
		{"full", "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, c := newMini(t)
			if tt.level != "" {
				m.HSet(key, "level", tt.level)
			}
			m.HSet(key, "gone", "3 1000")      // quiet since long before now - expiry
			m.HSet(key, "recent", "3 9999000") // within the expiry
			for seq := int64(1); m.HGet(key, "gone") != ""; seq++ {
				require.Less(t, seq, int64(200), "got the old record kept after %d calls", seq)
				runBudget(t, c, key, "busy", seq, tt.delta, 10000, now)
			}
			assert.Equal(t, "3 9999000", m.HGet(key, "recent"), "got a recent record forgotten")
			assert.NotEmpty(t, m.HGet(key, "busy"), "got the calling member's record forgotten")
			assert.Equal(t, tt.level == "", m.HGet(key, "level") == "", "got the bucket's fullness changed")
		})
	}
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
	tests := []struct {
		name       string
		host, rule string
	}{
		{"a host and a port", "api.example.com:8443", "methodConfig[0]"},
		{"an IPv6 zone with a space, as Windows names interfaces", "[fe80::1%ethernet 2]:8080", "r"},
		{"a zone with an escape in it", "[fe80::1%eth%250]:80", "r"},
		{"a rule with spaces and escapes", "h", "methodConfig[0] with spaces %20 and +"},
		{"bytes that are not UTF-8", "h\xff\x00", "\x80 r\n"},
		{"an empty host and rule", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := holdMessage(1700000000123, 429, tt.host, tt.rule)
			assert.Equal(t, 3, strings.Count(p, " "), "got the fields of %q not four", p)
			end, status, host, rule, ok := parseHoldMessage(p)
			require.True(t, ok, "got no parse of %q", p)
			assert.Equal(t, int64(1700000000123), end)
			assert.Equal(t, 429, status)
			assert.Equal(t, tt.host, host)
			assert.Equal(t, tt.rule, rule)
		})
	}
}

// TestHoldMessageOfAnEarlierMember reads a message of the earlier
// format, unescaped, whose host and rule need no escaping: it reads the
// same.
func TestHoldMessageOfAnEarlierMember(t *testing.T) {
	end, status, host, rule, ok := parseHoldMessage("1700000000123 503 api.example.com:8443 methodConfig[0]")
	require.True(t, ok)
	assert.Equal(t, int64(1700000000123), end)
	assert.Equal(t, 503, status)
	assert.Equal(t, "api.example.com:8443", host)
	assert.Equal(t, "methodConfig[0]", rule)
}

func TestHoldMessageRefused(t *testing.T) {
	for _, bad := range []string{"", "1 2 3", "x 429 h r", "1 x h r", "-5 429 h r", "0 429 h r",
		"1 429 h r extra", "1 429 %zz r", "1 429 h %"} {
		_, _, _, _, ok := parseHoldMessage(bad)
		assert.False(t, ok, "got %q parsed, want it refused", bad)
	}
}

// FuzzHoldMessage checks that any host and rule go through a message
// whole, and that no payload makes the parser panic.
func FuzzHoldMessage(f *testing.F) {
	f.Add(int64(1700000000123), 429, "[fe80::1%ethernet 2]:8080", "methodConfig[0]", "1 429 h r")
	f.Add(int64(1), -1, "", " ", "1 429 %zz r")
	f.Fuzz(func(t *testing.T, end int64, status int, host, rule, payload string) {
		parseHoldMessage(payload) // must not panic
		if end <= 0 {
			return
		}
		gotEnd, gotStatus, gotHost, gotRule, ok := parseHoldMessage(holdMessage(end, status, host, rule))
		if !ok || gotEnd != end || gotStatus != status || gotHost != host || gotRule != rule {
			t.Fatalf("got %d %d %q %q %v from the message of %d %d %q %q", gotEnd, gotStatus, gotHost, gotRule, ok, end, status, host, rule)
		}
	})
}
