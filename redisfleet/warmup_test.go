package redisfleet_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// connectionsReceived returns how many connections each server has
// accepted so far.
func connectionsReceived(t *testing.T, admins []*redis.Client) []int {
	t.Helper()
	var n []int
	for _, a := range admins {
		n = append(n, infoField(t, a, "stats", "total_connections_received"))
	}
	return n
}

// infoField returns an integer field of a server's INFO section.
func infoField(t *testing.T, a *redis.Client, section, field string) int {
	t.Helper()
	info, err := a.Info(context.Background(), section).Result()
	require.NoError(t, err)
	_, rest, ok := strings.Cut(info, "\n"+field+":")
	require.True(t, ok, "no %s in INFO %s", field, section)
	v, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]))
	require.NoError(t, err)
	return v
}

// firstFailures has f report one failure on each of hosts, one round
// trip at a time, and returns the servers' new connections meanwhile.
func firstFailures(t *testing.T, f *redisfleet.Fleet, admins []*redis.Client, hosts []string) []int {
	t.Helper()
	before := connectionsReceived(t, admins)
	for _, h := range hosts {
		n := f.Stats().Flushes
		f.Report(h, failure)
		waitFor(t, "the failure's round trip", func() bool { return f.Stats().Flushes > n })
	}
	after := connectionsReceived(t, admins)
	for i := range after {
		after[i] -= before[i]
	}
	return after
}

// TestRealWarmUpReachesEveryNode guards the warm-up on the topologies
// whose keys several servers share: every primary of a Cluster and
// every shard of a Ring gets the scripts and a connection of the
// flushes' own pipeline pool before the first flush, so that a member's
// first failure on a host, whichever node holds its keys, goes on an
// open connection instead of dialing during the outage it reports.
func TestRealWarmUpReachesEveryNode(t *testing.T) {
	t.Run("cluster", func(t *testing.T) {
		c := startCluster(t, time.Second)
		var hosts []string
		for i := range clusterPrimaries {
			hosts = append(hosts, hostOn(t, func(h string) bool { return c.primaryOf(t, redisfleet.DefaultPrefix+"budget:"+h) == i }))
		}
		f := clientMember(t, c.client(t, nil), redisfleet.Options{})
		subscribed(t, f)
		waitFor(t, "the warm-up", func() bool { return f.Stats().Flushes > 0 })
		admins := c.admins[:clusterPrimaries]
		assert.Equal(t, make([]int, clusterPrimaries), firstFailures(t, f, admins, hosts),
			"got connections opened by the first flush to each primary, want none")
		assertScriptsLoaded(t, admins)
	})
	t.Run("ring", func(t *testing.T) {
		shards := startRing(t, 2)
		r := ringClient(t, shards, nil)
		var hosts []string
		for i := range shards {
			hosts = append(hosts, hostOn(t, func(h string) bool { return shardOf(t, r, shards, redisfleet.DefaultPrefix+"budget:"+h) == i }))
		}
		f := clientMember(t, r, redisfleet.Options{})
		subscribed(t, f)
		waitFor(t, "the warm-up", func() bool { return f.Stats().Flushes > 0 })
		// The Ring's heartbeat opens a connection of its own to each shard.
		waitFor(t, "the heartbeats", func() bool { return r.PoolStats().TotalConns >= uint32(len(shards)) })
		var admins []*redis.Client
		for _, s := range shards {
			admins = append(admins, admin(t, s.addr))
		}
		assert.Equal(t, make([]int, len(shards)), firstFailures(t, f, admins, hosts),
			"got connections opened by the first flush to each shard, want none")
		assertScriptsLoaded(t, admins)
	})
}

// assertScriptsLoaded checks that every server has the Fleet's two
// scripts.
func assertScriptsLoaded(t *testing.T, admins []*redis.Client) {
	t.Helper()
	for i, a := range admins {
		assert.Equal(t, 2, infoField(t, a, "memory", "number_of_cached_scripts"), "got the scripts cached on server %d", i)
	}
}

// The warm-up leaves two connections open to the server, one for the
// flushes and one for a round trip of fetches aside, even when the two
// pipelines meant to open them ran one after the other (as when one's
// goroutine is slow to start, and the other ends first): it checks the
// pool, and tries the pair again.
func TestWarmUpOpensASecondConnection(t *testing.T) {
	s := startRedis(t)
	p := startProxy(t, s.addr, 50*time.Millisecond) // each round trip that long: a pair overlaps
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	var serial sync.Mutex
	var loads atomic.Int32
	c.AddHook(pipelineHook(func(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
		return func(ctx context.Context, cs []redis.Cmder) error {
			if len(cs) > 0 && cs[0].Name() == "script" {
				if n := loads.Add(1); n <= 2 { // the first pair, one after the other
					serial.Lock()
					defer serial.Unlock()
				}
			}
			return next(ctx, cs)
		}
	}))
	f := redisfleet.New(c, redisfleet.Options{})
	t.Cleanup(func() {
		require.NoError(t, f.Close())
		_ = c.Close()
	})
	subscribed(t, f)
	waitFor(t, "the warm-up", func() bool { return f.Stats().Flushes > 0 })
	require.Equal(t, 3, p.Accepted(), "got %d connections, want two for the flushes and the listener's", p.Accepted())
	require.EqualValues(t, 4, loads.Load(), "want the pair run one after the other, and the pair again")
}
