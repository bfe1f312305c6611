package redisfleet_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memberName is the client name the member's connections carry, so that
// a server's CLIENT LIST tells them from the test's own.
const memberName = "warmcheck"

var scriptLoads = regexp.MustCompile(`cmdstat_script\|load:calls=(\d+)`)

// serverWarmth returns how many SCRIPT LOADs the server a talks to has
// run, how many scripts it has cached, and how many connections of the
// member it has open, the subscription's included.
func serverWarmth(t *testing.T, a *redis.Client) (loads, cached, conns int) {
	t.Helper()
	ctx := context.Background()
	stats, err := a.Info(ctx, "commandstats").Result()
	if err != nil { // a server restarted: the admin's connection went with it
		return 0, 0, 0
	}
	if m := scriptLoads.FindStringSubmatch(stats); m != nil {
		loads, _ = strconv.Atoi(m[1])
	}
	mem, err := a.Info(ctx, "memory").Result()
	if err != nil {
		return 0, 0, 0
	}
	for _, l := range strings.Split(mem, "\r\n") {
		if v, ok := strings.CutPrefix(l, "number_of_cached_scripts:"); ok {
			cached, _ = strconv.Atoi(v)
		}
	}
	list, err := a.ClientList(ctx).Result()
	if err != nil {
		return 0, 0, 0
	}
	conns = strings.Count(list, "name="+memberName+" ")
	return loads, cached, conns
}

// warmEverywhere waits until every server of admins has loaded both
// scripts, by SCRIPT LOAD, and holds two of the member's connections
// besides a subscription, failing past eventually with what each had.
func warmEverywhere(t *testing.T, admins []*redis.Client, what string) {
	t.Helper()
	waitFor(t, what, func() bool {
		for _, a := range admins {
			loads, cached, conns := serverWarmth(t, a)
			if loads < 2 || cached < 2 || conns < 2 {
				return false
			}
		}
		return true
	}, func() string {
		var s []string
		for i, a := range admins {
			loads, cached, conns := serverWarmth(t, a)
			s = append(s, fmt.Sprintf("server %d: %d loads, %d cached, %d conns", i, loads, cached, conns))
		}
		return strings.Join(s, "; ")
	})
}

// TestRealWarmUpLoadsEveryServer starts a member that reports nothing
// on each topology: its warm-up alone loads the scripts on every
// primary of a Cluster and every shard of a Ring, with its connections
// open to each.
func TestRealWarmUpLoadsEveryServer(t *testing.T) {
	t.Run("cluster of three primaries", func(t *testing.T) {
		c := startCluster(t, time.Second)
		cc := c.client(t, func(o *redis.ClusterOptions) { o.ClientName = memberName })
		clientMember(t, cc, redisfleet.Options{})
		warmEverywhere(t, c.admins[:clusterPrimaries], "the scripts on every primary")
	})
	t.Run("ring of two shards", func(t *testing.T) {
		shards := startRing(t, 2)
		r := ringClient(t, shards, func(o *redis.RingOptions) { o.ClientName = memberName })
		clientMember(t, r, redisfleet.Options{})
		var admins []*redis.Client
		for _, s := range shards {
			admins = append(admins, admin(t, s.addr))
		}
		warmEverywhere(t, admins, "the scripts on every shard")
	})
}

// TestRealWarmUpReachesAServerThatLostItsScripts has a server lose the
// scripts and the member's connections (a Cluster replica promoted, a
// Ring shard restarted, a Sentinel's switch): the warm-up
// loads the scripts on it again, and opens connections to it, though
// the member reports nothing more for its hosts.
func TestRealWarmUpReachesAServerThatLostItsScripts(t *testing.T) {
	t.Run("cluster replica promoted", func(t *testing.T) {
		c := startCluster(t, time.Second)
		const victim = 2
		cc := c.client(t, func(o *redis.ClusterOptions) { o.ClientName = memberName })
		f := clientMember(t, cc, redisfleet.Options{})
		warmEverywhere(t, c.admins[:clusterPrimaries], "the first warm-up")
		replica := c.admins[victim+clusterPrimaries]
		require.NoError(t, replica.ScriptFlush(context.Background()).Err())
		dead := hostOn(t, func(h string) bool { return c.primaryOf(t, redisfleet.DefaultPrefix+"budget:"+h) == victim })
		errs := f.Stats().FlushErrors
		c.nodes[victim].Kill()
		f.Report(dead, failure)
		waitFor(t, "a round trip failed on the dead primary", func() bool { return f.Stats().FlushErrors > errs })
		c.promote(t, victim)
		n := f.Stats().Flushes
		waitFor(t, "the dead host's failure taken by the new primary", func() bool { return budgetLevel(t, replica, redisfleet.DefaultPrefix, dead) == 99_000 })
		waitFor(t, "an answered round trip", func() bool { return f.Stats().Flushes > n })
		// As TestRealWarmUpReachesEveryNode asks at the start: the first
		// failure on a new host of the new primary dials nothing.
		fresh := hostOn(t, func(h string) bool {
			return h != dead && c.primaryOf(t, redisfleet.DefaultPrefix+"budget:"+h) == victim
		})
		assert.Equal(t, []int{0}, firstFailures(t, f, []*redis.Client{replica}, []string{fresh}),
			"got connections opened to the promoted replica by a first failure after the failover")
		admins := append([]*redis.Client{}, c.admins[:clusterPrimaries]...)
		admins[victim] = replica
		warmEverywhere(t, admins, "the scripts on the promoted replica")
	})
	t.Run("ring shard restarted", func(t *testing.T) {
		shards := startRing(t, 2)
		r := ringClient(t, shards, func(o *redis.RingOptions) { o.ClientName = memberName; o.HeartbeatFrequency = time.Hour })
		f := clientMember(t, r, redisfleet.Options{Timeout: 300 * time.Millisecond})
		var admins []*redis.Client
		for _, s := range shards {
			admins = append(admins, admin(t, s.addr))
		}
		warmEverywhere(t, admins, "the first warm-up")
		dead := hostOn(t, func(h string) bool { return shardOf(t, r, shards, redisfleet.DefaultPrefix+"budget:"+h) == 1 })
		errs := f.Stats().FlushErrors
		shards[1].Kill()
		f.Report(dead, failure)
		waitFor(t, "a round trip failed on the dead shard", func() bool { return f.Stats().FlushErrors > errs })
		require.NoError(t, shards[1].Start()) // no persistence: no scripts
		warmEverywhere(t, admins, "the scripts on the restarted shard")
	})
	t.Run("sentinel switch", func(t *testing.T) {
		s := startSentinel(t, 300*time.Millisecond)
		fc := s.client(t, func(o *redis.FailoverOptions) { o.ClientName = memberName })
		f := clientMember(t, fc, redisfleet.Options{})
		warmEverywhere(t, []*redis.Client{admin(t, s.primary.addr)}, "the first warm-up")
		replica := admin(t, s.replica.addr)
		require.NoError(t, replica.ScriptFlush(context.Background()).Err())
		s.failover(t)
		f.Report("x.example.com", failure)
		warmEverywhere(t, []*redis.Client{replica}, "the scripts on the new primary")
		t.Logf("member after the switch: %+v", f.Stats())
	})
}
