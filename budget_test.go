package retryhttp

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/policy"
)

// applyOps applies ops to k: 'F' is a Failure, 'S' a Success.
func applyOps(k *bucket, ops string) {
	for _, op := range ops {
		switch op {
		case 'F':
			k.Failure()
		case 'S':
			k.Success()
		default:
			panic("unknown op " + string(op))
		}
	}
}

func TestBucketArithmetic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		throttle   policy.Throttle
		ops        string
		wantTokens float64
		wantAllow  bool
	}{
		{"starts full", policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, "", 10, true},
		{"failure takes one", policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, "F", 9, true},
		{"above half allows", policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, "FFFF", 6, true},
		{"exactly half refuses", policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, "FFFFF", 5, false},
		{"a thousandth above half allows", policy.Throttle{MaxTokens: 10, TokenRatio: 0.001}, "FFFFFS", 5.001, true},
		{"success adds ratio", policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, "FFFFFS", 5.1, true},
		{"ten successes make one token exactly", policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, "FF" + strings.Repeat("S", 10), 9, true},
		{"floor at zero", policy.Throttle{MaxTokens: 3, TokenRatio: 0.5}, "FFFFFF", 0, false},
		{"floor cuts a partial token", policy.Throttle{MaxTokens: 3, TokenRatio: 0.5}, "FFFSF", 0, false},
		{"refill from zero", policy.Throttle{MaxTokens: 3, TokenRatio: 0.5}, "FFFFSSSS", 2, true},
		{"success at full stays full", policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, "SSS", 10, true},
		{"cap cuts a partial ratio", policy.Throttle{MaxTokens: 10, TokenRatio: 0.7}, "FSS", 10, true},
		{"odd capacity half", policy.Throttle{MaxTokens: 5, TokenRatio: 0.5}, "FFS", 3.5, true},
		{"odd capacity below half", policy.Throttle{MaxTokens: 5, TokenRatio: 0.5}, "FFFS", 2.5, false},
		{"one token refuses after one failure", policy.Throttle{MaxTokens: 1, TokenRatio: 1}, "F", 0, false},
		{"ratio rounds to a thousandth", policy.Throttle{MaxTokens: 10, TokenRatio: 0.12345}, "FS", 9.123, true},
		{"ratio below a thousandth refills a thousandth", policy.Throttle{MaxTokens: 10, TokenRatio: 0.0001}, "FS", 9.001, true},
		{"capacity rounds to a thousandth", policy.Throttle{MaxTokens: 2.0004, TokenRatio: 1}, "", 2, true},
		{"capacity over 1000 is 1000", policy.Throttle{MaxTokens: 1e300, TokenRatio: 1}, "", 1000, true},
		{"zero capacity is a thousandth", policy.Throttle{MaxTokens: 0, TokenRatio: 1}, "", 0.001, true},
		{"NaN capacity is a thousandth", policy.Throttle{MaxTokens: math.NaN(), TokenRatio: math.NaN()}, "FS", 0.001, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := newHostTable(&tt.throttle, 0).For("h")
			applyOps(k, tt.ops)
			assert.Equal(t, tt.wantTokens, k.Tokens(), "tokens after %q", tt.ops)
			assert.Equal(t, tt.wantAllow, k.Allow(), "allow after %q", tt.ops)
		})
	}
}

// Without a throttle, a bucket gates and counts nothing. (A Transport
// keeps its buckets whatever its policy, so that a throttle set later
// finds the buckets held before.)
func TestBudgetsWithoutThrottleAllowAll(t *testing.T) {
	t.Parallel()
	b := newHostTable(nil, 10)
	k := b.For("api.example.com")
	applyOps(k, strings.Repeat("F", 100))
	assert.True(t, k.Allow())
	assert.Equal(t, math.Inf(1), k.Tokens())
	k.Success()
	var none *bucket
	assert.True(t, none.Allow(), "a nil bucket allows too")
	assert.Equal(t, math.Inf(1), none.Tokens())
}

func TestBudgetsHostKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		a, b       string
		wantShared bool
	}{
		{"port kept", "api.example.com:443", "api.example.com:8443", false},
		{"port or none", "api.example.com", "api.example.com:443", false},
		{"different hosts", "a.example.com", "b.example.com", false},
		{"same host", "a.example.com", "a.example.com", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newHostTable(&policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, 0)
			ka := b.For(tt.a)
			ka.Failure()
			kb := b.For(tt.b)
			assert.Equal(t, tt.wantShared, ka == kb, "same bucket for %q and %q", tt.a, tt.b)
			wantTokens := 10.0
			if tt.wantShared {
				wantTokens = 9
			}
			assert.Equal(t, wantTokens, kb.Tokens())
		})
	}
}

func TestBudgetsDefaultBound(t *testing.T) {
	t.Parallel()
	th := &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}
	assert.Equal(t, defaultMaxHosts, newHostTable(th, 0).maxHosts)
	assert.Equal(t, defaultMaxHosts, newHostTable(th, -1).maxHosts)
	assert.Equal(t, 7, newHostTable(th, 7).maxHosts)
}

// TestBucketConcurrentExact checks that no update is lost under contention:
// the counts are chosen so that no interleaving reaches the floor or the cap,
// which makes the final count independent of the order.
func TestBucketConcurrentExact(t *testing.T) {
	t.Parallel()
	const goroutines, iterations, failEvery = 8, 20_000, 500
	b := newHostTable(&policy.Throttle{MaxTokens: 1000, TokenRatio: 0.001}, 0)
	k := b.For("h")
	applyOps(k, strings.Repeat("F", 500))
	// From 500 tokens, all 320 failures first leave 180 and all 160
	// tokens of refill first make 660: never the floor, never the cap.
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			<-start
			for i := range iterations {
				kk := b.For("h")
				if i%failEvery == 0 {
					kk.Failure()
				}
				kk.Success()
				kk.Allow()
			}
		})
	}
	close(start)
	wg.Wait()
	const want = 500 - goroutines*iterations/failEvery + goroutines*iterations*0.001
	assert.Equal(t, float64(want), k.Tokens())
}

// TestBucketConcurrentFloorCap checks the floor and the cap under
// contention: many more failures than tokens end at exactly zero, and many
// more refills than room end at exactly the capacity.
func TestBucketConcurrentFloorCap(t *testing.T) {
	t.Parallel()
	const goroutines, n = 8, 200
	k := newHostTable(&policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, 0).For("h")
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() { applyOps(k, strings.Repeat("F", n)) })
	}
	wg.Wait()
	require.Equal(t, 0.0, k.Tokens())
	require.False(t, k.Allow())
	for range goroutines {
		wg.Go(func() { applyOps(k, strings.Repeat("S", n)) }) // 160 tokens offered, room for 10
	}
	wg.Wait()
	assert.Equal(t, 10.0, k.Tokens())
	assert.True(t, k.Allow())
}

// has reports whether b keeps host (lowercase), without counting as a
// lookup.
func (b *hostTable) has(host string) bool { return b.hosts.Peek(host) != nil }

// For returns the bucket of host, a lowercase URL host.
func (b *hostTable) For(host string) *bucket { return &b.get(host).bucket }

// len reports how many hosts b keeps.
func (b *hostTable) len() int { return b.hosts.Len() }

func TestBudgetsBound(t *testing.T) {
	t.Parallel()
	const bound, hosts = 1000, 100_000
	b := newHostTable(&policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, bound)
	for i := range hosts {
		k := b.For(fmt.Sprintf("h%d.example.com", i))
		if i%7 == 0 {
			k.Failure()
		}
		require.LessOrEqual(t, b.len(), bound, "after %d hosts", i+1)
	}
}

// TestBudgetsDebtSurvives checks that buckets in debt outlive any number of
// full ones: a full bucket is worth nothing, a bucket in debt is what stops
// a retry storm.
func TestBudgetsDebtSurvives(t *testing.T) {
	t.Parallel()
	const bound = 64
	b := newHostTable(&policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, bound)
	debt := make([]*bucket, bound/2)
	for i := range debt {
		debt[i] = b.For(fmt.Sprintf("debt%d", i))
		applyOps(debt[i], "FFFFFF")
	}
	for i := range 100_000 {
		b.For(fmt.Sprintf("full%d", i)).Success()
	}
	for i, k := range debt {
		host := fmt.Sprintf("debt%d", i)
		require.True(t, b.has(host), "%s evicted", host)
		assert.Same(t, k, b.For(host))
		assert.Equal(t, 4.0, k.Tokens())
		assert.False(t, k.Allow())
	}
}

// TestBudgetsEvictFullFirst checks the order when the map is full: the full
// bucket goes even though a bucket in debt was looked up less recently.
func TestBudgetsEvictFullFirst(t *testing.T) {
	t.Parallel()
	b := newHostTable(&policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, 3)
	b.For("old-debt").Failure()
	b.For("full")
	b.For("new-debt").Failure()
	b.For("new")
	assert.False(t, b.has("full"))
	assert.True(t, b.has("old-debt"))
	assert.True(t, b.has("new-debt"))
	assert.True(t, b.has("new"))
}

// TestBudgetsEvictLRU checks that with no full bucket the least recently
// looked-up one goes, and among equally recent ones the one closest to full.
func TestBudgetsEvictLRU(t *testing.T) {
	t.Parallel()
	b := newHostTable(&policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, 4)
	for _, h := range []string{"a", "b", "c", "d"} {
		b.For(h).Failure()
	}
	b.For("a") // now b is the least recently looked up
	b.For("e").Failure()
	assert.False(t, b.has("b"), "b evicted")
	b.For("f").Failure()
	assert.False(t, b.has("c"), "c evicted")
	for _, h := range []string{"a", "d", "e", "f"} {
		assert.True(t, b.has(h), "%s kept", h)
	}

	b = newHostTable(&policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, 2)
	applyOps(b.For("deep"), "FF")
	applyOps(b.For("shallow"), "F")
	b.For("deep")
	b.For("shallow") // both looked up since the last insertion
	b.For("new")
	assert.False(t, b.has("shallow"), "the smaller debt is forgotten")
	assert.True(t, b.has("deep"))
}

// TestBudgetsEvictIdleFull checks that one eviction drops every full bucket
// not looked up since the previous eviction, and keeps the full ones that
// were, when those suffice.
func TestBudgetsEvictIdleFull(t *testing.T) {
	t.Parallel()
	b := newHostTable(&policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, 16)
	for i := range 16 {
		b.For(fmt.Sprintf("h%d", i))
	}
	b.For("x") // first eviction: nothing idle yet, so the two oldest go
	require.False(t, b.has("h0"))
	require.False(t, b.has("h1"))
	for i := 2; i <= 5; i++ {
		b.For(fmt.Sprintf("h%d", i))
	}
	b.For("y")
	require.Equal(t, 16, b.len())
	b.For("z") // second eviction: h6..h14 are idle; h15 came with the first
	for i := 2; i <= 5; i++ {
		assert.True(t, b.has(fmt.Sprintf("h%d", i)), "h%d looked up, kept", i)
	}
	for i := 6; i <= 14; i++ {
		assert.False(t, b.has(fmt.Sprintf("h%d", i)), "h%d idle, evicted", i)
	}
	assert.Equal(t, 8, b.len()) // h2..h5, h15, x, y, z
}

// TestBudgetsEvictedBucketHarmless checks that a goroutine still holding an
// evicted bucket does not disturb the host's new bucket.
func TestBudgetsEvictedBucketHarmless(t *testing.T) {
	t.Parallel()
	b := newHostTable(&policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, 1)
	old := b.For("a")
	b.For("b")
	require.False(t, b.has("a"))
	applyOps(old, "FFFFFF")
	assert.Equal(t, 4.0, old.Tokens())
	fresh := b.For("a")
	assert.NotSame(t, old, fresh)
	assert.Equal(t, 10.0, fresh.Tokens())
}

func TestBudgetsKnownHostDoesNotAllocate(t *testing.T) {
	b := newHostTable(&policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, 0)
	for _, host := range []string{"api.example.com:443", "API.Example.com:443"} {
		b.For(host)
		allocs := testing.AllocsPerRun(100, func() {
			k := b.For(host)
			if k.Allow() {
				k.Failure()
			}
			k.Success()
		})
		assert.Zero(t, allocs, "allocations per lookup of %q", host)
	}
}

// BenchmarkBudgetAllowRecord measures one attempt's use of the budget: a
// lookup of a known host, the gate, and the record of its outcome, one in
// ten a failure.
func BenchmarkBudgetAllowRecord(b *testing.B) {
	hosts := make([]string, 64)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("host%d.example.com:443", i)
	}
	newB := func() *hostTable {
		bs := newHostTable(&policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, 0)
		for _, h := range hosts {
			bs.For(h)
		}
		return bs
	}
	step := func(bs *hostTable, i int) {
		k := bs.For(hosts[i%len(hosts)])
		_ = k.Allow()
		if i%10 == 0 {
			k.Failure()
		} else {
			k.Success()
		}
	}
	b.Run("serial", func(b *testing.B) {
		bs := newB()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			step(bs, i)
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		bs := newB()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				step(bs, i)
				i++
			}
		})
	})
}

// A new throttle takes over the buckets as they are: their tokens carry
// on under the new limits, a count above a lower capacity reads as that
// capacity, and a throttle removed stops gating without forgetting.
func TestBudgetsKeepTheirTokensWhenTheThrottleChanges(t *testing.T) {
	t.Parallel()
	b := newHostTable(&policy.Throttle{MaxTokens: 10, TokenRatio: 0.5}, 0)
	k := b.For("h")
	applyOps(k, "FFF")
	assert.Equal(t, 7.0, k.Tokens())

	b.set(&policy.Throttle{MaxTokens: 20, TokenRatio: 1})
	assert.Equal(t, 7.0, k.Tokens(), "tokens carry on")
	assert.False(t, k.Allow(), "7 of 20 is not more than half")
	k.Success()
	assert.Equal(t, 8.0, k.Tokens(), "the new ratio refills")

	b.set(&policy.Throttle{MaxTokens: 4, TokenRatio: 1})
	assert.Equal(t, 4.0, k.Tokens(), "read as at most the new capacity")
	assert.True(t, k.Allow())
	k.Failure()
	assert.Equal(t, 3.0, k.Tokens(), "a failure counts from the capacity")

	b.set(nil)
	assert.True(t, b.For("h").Allow(), "no throttle: nothing gated")
	assert.True(t, k.Allow(), "a bucket held stops gating")
	applyOps(k, "FFFF")
	b.set(&policy.Throttle{MaxTokens: 4, TokenRatio: 1})
	assert.Equal(t, 3.0, k.Tokens(), "nothing was counted meanwhile")
	assert.Same(t, k, b.For("h"), "the bucket was kept")
	assert.Equal(t, 4.0, b.For("new").Tokens(), "a new host starts full")
}

// A bucket that refilled to its capacity is full: a capacity raised later
// finds it full too, as it finds a bucket never used.
func TestBudgetsFullStaysFullWhenCapacityRises(t *testing.T) {
	t.Parallel()
	b := newHostTable(&policy.Throttle{MaxTokens: 10, TokenRatio: 1}, 0)
	k := b.For("h")
	applyOps(k, "FS")
	assert.Equal(t, 10.0, k.Tokens())
	b.set(&policy.Throttle{MaxTokens: 100, TokenRatio: 1})
	assert.Equal(t, 100.0, k.Tokens(), "refilled to full, it is full under the new capacity")
	assert.True(t, k.Allow())
	assert.Equal(t, 100.0, b.For("new").Tokens())
}
