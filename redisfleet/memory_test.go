package redisfleet_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRealSmallPipelineBuffersCarryALargeRoundTrip gives the member's
// client pipeline buffers of 1 KiB, far smaller than its round trips of
// a thousand hosts' failures: every failure reaches the store, and every
// bucket's level comes back, as with go-redis's own buffers.
func TestRealSmallPipelineBuffersCarryALargeRoundTrip(t *testing.T) {
	s := startRedis(t)
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1,
		PipelineReadBufferSize: 1 << 10, PipelineWriteBufferSize: 1 << 10})
	f := redisfleet.New(c, redisfleet.Options{})
	t.Cleanup(func() {
		require.NoError(t, f.Close())
		_ = c.Close()
	})
	waitFor(t, "the warm-up", func() bool { return f.Stats().Flushes > 0 })
	const hosts, failures = 1000, 50 // 50 failures spend a bucket of 100 tokens
	name := func(i int) string { return fmt.Sprintf("h%d.example.com", i) }
	for range failures {
		for i := range hosts {
			f.Report(name(i), failure)
		}
	}
	spent := func() (n int) {
		for i := range hosts {
			if f.Look(name(i), failure.Rule).Spent {
				n++
			}
		}
		return n
	}
	waitFor(t, "every bucket read back spent", func() bool { return spent() == hosts },
		func() string { return fmt.Sprintf("%d of %d spent, %+v", spent(), hosts, f.Stats()) })
	for i := range hosts {
		require.Equal(t, int64(50_000), storeLevel(t, s.addr, name(i)), "got %s's bucket", name(i))
	}
	st := f.Stats()
	assert.Zero(t, st.FlushErrors)
	assert.Zero(t, st.Dropped)
}

// BenchmarkMemberHeap measures the heap one member holds once started
// (its first round trip made and its subscription in place): its
// Transport, its Fleet and its own go-redis client, over one server and
// over a Cluster of three primaries, with go-redis's pipeline buffers as
// they come (pipelineBuffers=0) and at 16 KiB each way, and, as the
// baseline, with the Transport alone (no Fleet, no client).
// heap-KiB/member is the heap allocated and still reachable after a
// collection, per member, of 100 members started at once.
//
//	go test -run XXX -bench MemberHeap -benchtime 1x .
func BenchmarkMemberHeap(b *testing.B) {
	s := startRedis(b)
	c := startCluster(b, time.Second)
	stores := []struct {
		name  string
		store func(buf int) redis.UniversalClient
		reset func()
	}{
		{"server", func(buf int) redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: s.addr,
				PipelineReadBufferSize: buf, PipelineWriteBufferSize: buf})
		}, func() { flushStore(b, s) }},
		{"cluster", func(buf int) redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.addrs(),
				PipelineReadBufferSize: buf, PipelineWriteBufferSize: buf})
		}, func() { flushAll(b, c.admins[:clusterPrimaries]) }},
	}
	b.Run("alone", func(b *testing.B) {
		b.ReportMetric(memberHeap(b, alone, nil), "heap-KiB/member")
	})
	for _, st := range stores {
		for _, buf := range []int{0, 16 << 10} {
			b.Run(fmt.Sprintf("%s/pipelineBuffers=%d", st.name, buf), func(b *testing.B) {
				st.reset()
				b.ReportMetric(memberHeap(b, fleet, func() redis.UniversalClient { return st.store(buf) }),
					"heap-KiB/member")
			})
		}
	}
}

// memberHeap returns the heap in use, in KiB per member, that 100
// members wired by w, with their clients made by store, hold once
// started: the last of b's runs.
func memberHeap(b *testing.B, w wiring, store func() redis.UniversalClient) float64 {
	const n = 100
	var perMember float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		members := newMembers(w, n, store, nil, redisfleet.Options{})
		runtime.GC()
		runtime.ReadMemStats(&after)
		perMember = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
		closeMembers(members)
	}
	return perMember / 1024
}
