package hostmap

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rec is a record whose rank a test sets: busy is not idle, and loss
// orders records looked up as recently as each other.
type rec struct {
	key  string
	busy atomic.Bool
	loss atomic.Int64
}

// newMap returns a Map of recs bounded to bound that counts the busy
// records it drops in dropped.
func newMap(bound int, dropped *atomic.Int64) *Map[string, rec] {
	return New(Options[string, rec]{
		Bound: bound,
		Init:  func(key string, r *rec) { r.key = key },
		Rank: func(r *rec, _ time.Time) Rank {
			return Rank{Idle: !r.busy.Load(), Loss: r.loss.Load()}
		},
		Dropped: func(*rec) { dropped.Add(1) },
	})
}

// TestEvictionOrder drives a map through steps and checks which keys it
// keeps: "k" looks k up, "k!" looks it up and makes it busy, "k~N" looks
// it up and gives it a loss of N.
func TestEvictionOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		bound       int
		steps       string
		kept, gone  string
		wantDropped int64
	}{
		{"idle goes before busy, however old", 3, "a! b c! d", "a c d", "b", 0},
		{"least recently looked up goes first", 4, "a! b! c! d! a e!", "a c d e", "b", 1},
		{"busy go when nothing is idle, counted", 2, "a! b! c! d!", "c d", "a b", 2},
		{"least loss goes first among as recent", 2, "a~5 b~1 a~5 b~1 c", "a c", "b", 1},
		{"recency before loss", 2, "a~5 b~1 c", "b c", "a", 1},
		{"an idle record looked up since the last eviction stays if others suffice",
			16, "h0 h1 h2 h3 h4 h5 h6 h7 h8 h9 h10 h11 h12 h13 h14 h15 x h2 h3 h4 h5 y z",
			"h2 h3 h4 h5 h15 x y z", "h0 h1 h6 h7 h8 h9 h10 h11 h12 h13 h14", 0},
		{"a bound below one is one", 0, "a b c", "c", "a b", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var dropped atomic.Int64
			m := newMap(tt.bound, &dropped)
			for _, s := range strings.Fields(tt.steps) {
				key, loss, hasLoss := strings.Cut(s, "~")
				key, busy := strings.CutSuffix(key, "!")
				r := m.Get(key)
				if hasLoss {
					var n int64
					fmt.Sscan(loss, &n)
					r.busy.Store(true)
					r.loss.Store(n)
				}
				if busy {
					r.busy.Store(true)
				}
			}
			for _, k := range strings.Fields(tt.kept) {
				assert.NotNil(t, m.Peek(k), "got %s evicted, want it kept", k)
			}
			for _, k := range strings.Fields(tt.gone) {
				assert.Nil(t, m.Peek(k), "got %s kept, want it evicted", k)
			}
			assert.Equal(t, len(strings.Fields(tt.kept)), m.Len(), "got %d records, want %d", m.Len(), len(strings.Fields(tt.kept)))
			assert.Equal(t, tt.wantDropped, dropped.Load(), "got %d busy records dropped, want %d", dropped.Load(), tt.wantDropped)
		})
	}
}

// TestEvictionFreesAnEighth checks that an eviction frees at least an
// eighth of the bound, so that the next insertions run without one.
func TestEvictionFreesAnEighth(t *testing.T) {
	t.Parallel()
	var dropped atomic.Int64
	m := newMap(64, &dropped)
	for i := range 64 {
		m.Get(fmt.Sprint(i)).busy.Store(true)
	}
	m.Get("new")
	assert.Equal(t, 64-8+1, m.Len(), "got %d records after one eviction, want %d", m.Len(), 64-8+1)
	assert.Equal(t, int64(8), dropped.Load())
	for i := range 8 {
		assert.Nil(t, m.Peek(fmt.Sprint(i)), "got %d kept, want the eight oldest gone", i)
	}
	for i := range 7 {
		m.Get(fmt.Sprint("more", i))
	}
	assert.Equal(t, int64(8), dropped.Load(), "got an eviction before the map was full again")
}

// TestBoundUnderChurn meets many more keys than the bound, some of them
// kept busy: the map never holds more than its bound, and the busy ones
// outlive any number of idle ones.
func TestBoundUnderChurn(t *testing.T) {
	t.Parallel()
	const bound = 256
	var dropped atomic.Int64
	m := newMap(bound, &dropped)
	busy := make([]*rec, bound/2)
	for i := range busy {
		busy[i] = m.Get(fmt.Sprint("busy", i))
		busy[i].busy.Store(true)
	}
	for i := range 50_000 {
		m.Get(fmt.Sprint("idle", i))
		require.LessOrEqual(t, m.Len(), bound, "after %d keys", i+1)
	}
	for i, r := range busy {
		assert.Same(t, r, m.Peek(fmt.Sprint("busy", i)), "got busy%d evicted or remade", i)
	}
	assert.Zero(t, dropped.Load(), "got busy records dropped while idle ones could go")
}

// TestRecordsAreMadeOnce checks that Init runs once per record made, with
// its key, and that a key met again after its eviction gets a new record.
func TestRecordsAreMadeOnce(t *testing.T) {
	t.Parallel()
	made := map[string]int{}
	m := New(Options[string, rec]{
		Bound: 1,
		Init:  func(key string, r *rec) { made[key]++; r.key = key },
		Rank:  func(*rec, time.Time) Rank { return Rank{Idle: true} },
	})
	a := m.Get("a")
	assert.Same(t, a, m.Get("a"))
	assert.Equal(t, "a", a.key)
	m.Get("b")
	require.Nil(t, m.Peek("a"))
	a.busy.Store(true) // an evicted record stays usable, and changes nothing
	again := m.Get("a")
	assert.NotSame(t, a, again)
	assert.False(t, again.busy.Load(), "got the key met again with its old record's state")
	assert.Equal(t, map[string]int{"a": 2, "b": 1}, made)
}

// TestPeekIsNoLookup checks that neither Peek nor a listing counts as a
// lookup: a record only peeked at is idle since the last eviction.
func TestPeekIsNoLookup(t *testing.T) {
	t.Parallel()
	var dropped atomic.Int64
	m := newMap(4, &dropped)
	for _, k := range []string{"a", "b", "c", "d"} {
		m.Get(k)
	}
	m.Get("e") // first eviction: a goes
	m.Get("b")
	m.Peek("c")
	m.Each(func(string, *rec) {})
	m.Append(nil)
	m.Get("f") // second: c, not looked up since, goes; d came just before the first
	for k, want := range map[string]bool{"b": true, "c": false, "d": true, "e": true, "f": true} {
		assert.Equal(t, want, m.Peek(k) != nil, "got %s kept %v, want %v", k, !want, want)
	}
}

func TestOverflow(t *testing.T) {
	t.Parallel()
	m := New(Options[string, atomic.Int64]{Bound: 3, Overflow: "(other)"})
	for i := range 10 {
		m.Get(fmt.Sprint("h", i)).Add(1)
	}
	m.Get("h1").Add(1)
	got := map[string]int64{}
	m.Each(func(k string, v *atomic.Int64) { got[k] = v.Load() })
	assert.Equal(t, map[string]int64{"h0": 1, "h1": 2, "h2": 1, "(other)": 7}, got)
	assert.Same(t, m.Get("h7"), m.Get("h8"), "got keys past the bound apart")
	assert.Nil(t, m.Peek("h7"), "got a key past the bound kept")
}

func TestListings(t *testing.T) {
	t.Parallel()
	var dropped atomic.Int64
	m := newMap(8, &dropped)
	for _, k := range []string{"a", "b", "c"} {
		m.Get(k)
	}
	var keys []string
	m.Each(func(k string, r *rec) {
		assert.Equal(t, k, r.key)
		m.Get(k) // Each runs without the lock: the map may be used
		keys = append(keys, k)
	})
	assert.ElementsMatch(t, []string{"a", "b", "c"}, keys)
	dst := make([]*rec, 0, 8)
	dst = m.Append(dst)
	require.Len(t, dst, 3)
	assert.ElementsMatch(t, []*rec{m.Peek("a"), m.Peek("b"), m.Peek("c")}, dst)
}

func TestKnownKeyDoesNotAllocate(t *testing.T) {
	var dropped atomic.Int64
	m := newMap(8, &dropped)
	m.Get("api.example.com:443")
	allocs := testing.AllocsPerRun(100, func() { m.Get("api.example.com:443").busy.Load() })
	assert.Zero(t, allocs, "got %v allocations a lookup, want 0", allocs)
}

// TestConcurrentUse runs lookups, insertions, evictions and listings at
// once, for the race detector, and checks the bound after.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	const bound, goroutines, keys = 64, 8, 1000
	var dropped atomic.Int64
	m := newMap(bound, &dropped)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range 2000 {
				k := fmt.Sprint((i*7 + g*131) % keys)
				r := m.Get(k)
				r.busy.Store(i%3 == 0)
				r.loss.Add(1)
				switch i % 50 {
				case 0:
					m.Each(func(string, *rec) {})
				case 1:
					m.Append(nil)
				case 2:
					m.Peek(k)
				case 3:
					m.Len()
				}
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, m.Len(), bound)
}

// BenchmarkGet measures a lookup of a known key, from one goroutine and
// from all.
func BenchmarkGet(b *testing.B) {
	var dropped atomic.Int64
	m := newMap(4096, &dropped)
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("host%d.example.com:443", i)
		m.Get(keys[i])
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			m.Get(keys[i%len(keys)])
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				m.Get(keys[i%len(keys)])
				i++
			}
		})
	})
}

// BenchmarkEvict measures a new key's insertion into a full map of 4096,
// its share of the evictions included: every key is new, a quarter of
// them busy.
func BenchmarkEvict(b *testing.B) {
	var dropped atomic.Int64
	m := newMap(4096, &dropped)
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = fmt.Sprint("host", i)
	}
	for i := range 4096 {
		m.Get(fmt.Sprint("warm", i))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r := m.Get(keys[i%len(keys)])
		r.busy.Store(i%4 == 0)
		i++
	}
}
