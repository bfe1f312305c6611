package redisfleet_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/require"
)

// The topologies users run, started from redis-server processes on
// loopback for one test and stopped at its end: a Redis Cluster of three
// primaries with a replica each, a Ring of shards, a primary and its
// replica watched by a Sentinel.

// admin returns a plain client of one server, for the test's own
// commands, closed at the end of the test.
func admin(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// cluster is a Redis Cluster: nodes[i] for i < 3 is a primary, nodes[i+3]
// its replica.
type cluster struct {
	nodes  []*redisServer
	admins []*redis.Client
	ids    []string
}

// clusterPrimaries is the number of primaries of a test cluster.
const clusterPrimaries = 3

// startCluster starts a cluster of three primaries, slots split evenly,
// and a replica each. A node is judged failed after nodeTimeout; the
// cluster keeps serving the slots of the live primaries meanwhile
// (cluster-require-full-coverage no). A replica takes over from its
// primary only when the test says so (failover), so that the tests do
// not wait for the cluster's own judgment, nor race with it.
func startCluster(t testing.TB, nodeTimeout time.Duration) *cluster {
	t.Helper()
	c := &cluster{}
	for range 2 * clusterPrimaries {
		s := startRedisWith(t, "", "--cluster-enabled", "yes", "--cluster-port", "BUSPORT",
			"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10),
			"--cluster-require-full-coverage", "no", "--cluster-replica-no-failover", "yes",
			"--repl-diskless-sync-delay", "0")
		c.nodes = append(c.nodes, s)
		a := admin(t, s.addr)
		c.admins = append(c.admins, a)
		id, err := a.ClusterMyID(context.Background()).Result()
		require.NoError(t, err)
		c.ids = append(c.ids, id)
	}
	ctx := context.Background()
	for i := range clusterPrimaries {
		lo, hi := i*16384/clusterPrimaries, (i+1)*16384/clusterPrimaries-1
		require.NoError(t, c.admins[i].ClusterAddSlotsRange(ctx, lo, hi).Err())
	}
	// Every node meets every other, rather than one and the rest by
	// gossip, which takes seconds.
	for i, a := range c.admins {
		for _, s := range c.nodes[i+1:] {
			require.NoError(t, a.Do(ctx, "cluster", "meet", "127.0.0.1", s.port, s.bus).Err())
		}
	}
	waitUntil(t, "every node to know every other", func() bool {
		for _, a := range c.admins {
			nodes, err := a.ClusterNodes(ctx).Result()
			if err != nil || strings.Count(nodes, " connected") != len(c.nodes) || strings.Contains(nodes, "handshake") {
				return false
			}
		}
		return true
	})
	for i := range clusterPrimaries {
		require.NoError(t, c.admins[i+clusterPrimaries].ClusterReplicate(ctx, c.ids[i]).Err())
	}
	waitUntil(t, "the cluster to serve, each replica in sync", func() bool {
		for i, a := range c.admins {
			info, err := a.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
			if i >= clusterPrimaries {
				repl, err := a.Info(ctx, "replication").Result()
				if err != nil || !strings.Contains(repl, "master_link_status:up") {
					return false
				}
			}
		}
		return true
	})
	return c
}

// addrs returns the addresses of the cluster's nodes, to seed a client.
func (c *cluster) addrs() []string {
	var addrs []string
	for _, s := range c.nodes {
		addrs = append(addrs, s.addr)
	}
	return addrs
}

// client returns a ClusterClient of c with go-redis's defaults but for
// the options set by tweak, closed at the end of the test.
func (c *cluster) client(t testing.TB, tweak func(*redis.ClusterOptions)) *redis.ClusterClient {
	o := &redis.ClusterOptions{Addrs: c.addrs()}
	if tweak != nil {
		tweak(o)
	}
	cc := redis.NewClusterClient(o)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// primaryOf returns the index of the primary that serves key now.
func (c *cluster) primaryOf(t testing.TB, key string) int {
	t.Helper()
	slot, err := c.admins[0].ClusterKeySlot(context.Background(), key).Result()
	require.NoError(t, err)
	return int(slot) * clusterPrimaries / 16384
}

// prefixOn returns a prefix under which host's budget key lives on the
// primary i, and the holds channel on the primary ch (-1: anywhere).
func (c *cluster) prefixOn(t testing.TB, host string, i, ch int) string {
	t.Helper()
	for n := range 10_000 {
		p := fmt.Sprintf("p%d:", n)
		if c.primaryOf(t, p+"budget:"+host) == i && (ch < 0 || c.primaryOf(t, p+"holds") == ch) {
			return p
		}
	}
	t.Fatalf("no prefix puts %s on primary %d", host, i)
	return ""
}

// promote promotes the replica of the primary i at once (CLUSTER
// FAILOVER TAKEOVER: no wait for the other nodes to judge the primary
// failed), and returns when it serves as primary, the moment the fleet's
// recovery is timed from.
func (c *cluster) promote(t testing.TB, i int) time.Time {
	t.Helper()
	ctx := context.Background()
	replica := c.admins[i+clusterPrimaries]
	require.NoError(t, replica.Do(ctx, "cluster", "failover", "takeover").Err())
	waitUntil(t, "the replica to serve as primary", func() bool {
		role, err := replica.Do(ctx, "role").Slice()
		return err == nil && len(role) > 0 && role[0] == "master"
	})
	return time.Now()
}

// startRing starts n servers, the shards of a Ring.
func startRing(t testing.TB, n int) []*redisServer {
	var shards []*redisServer
	for range n {
		shards = append(shards, startRedis(t))
	}
	return shards
}

// ringClient returns a Ring of shards with go-redis's defaults but for
// the options set by tweak, closed at the end of the test.
func ringClient(t testing.TB, shards []*redisServer, tweak func(*redis.RingOptions)) *redis.Ring {
	addrs := map[string]string{}
	for i, s := range shards {
		addrs[fmt.Sprint("shard", i)] = s.addr
	}
	o := &redis.RingOptions{Addrs: addrs}
	if tweak != nil {
		tweak(o)
	}
	r := redis.NewRing(o)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// shardOf returns the index of the shard of shards that r sends key to.
func shardOf(t testing.TB, r *redis.Ring, shards []*redisServer, key string) int {
	t.Helper()
	c, err := r.GetShardClientForKey(key)
	require.NoError(t, err)
	for i, s := range shards {
		if c.Options().Addr == s.addr {
			return i
		}
	}
	t.Fatalf("got %s on no shard", key)
	return -1
}

// ringPrefixOn returns a prefix under which r sends host's budget key
// to shards[i], and the holds channel to shards[ch] (-1: anywhere).
func ringPrefixOn(t testing.TB, r *redis.Ring, shards []*redisServer, host string, i, ch int) string {
	t.Helper()
	for n := range 10_000 {
		p := fmt.Sprintf("p%d:", n)
		if shardOf(t, r, shards, p+"budget:"+host) == i && (ch < 0 || shardOf(t, r, shards, p+"holds") == ch) {
			return p
		}
	}
	t.Fatalf("no prefix puts %s on shard %d", host, i)
	return ""
}

// hostOn returns a host name that on accepts.
func hostOn(t testing.TB, on func(string) bool) string {
	t.Helper()
	for i := range 10_000 {
		h := fmt.Sprintf("api%d.example.com", i)
		if on(h) {
			return h
		}
	}
	t.Fatal("no host name fits")
	return ""
}

// sentinelSetup is a primary, its replica, and a Sentinel that watches
// them under the name sentinelMaster.
type sentinelSetup struct {
	primary, replica, sentinel *redisServer
}

// sentinelMaster is the name the Sentinel knows the primary by.
const sentinelMaster = "fleet"

// startSentinel starts a primary, a replica of it, and a Sentinel that
// fails the primary over to the replica once it has not answered for
// downAfter.
func startSentinel(t testing.TB, downAfter time.Duration) *sentinelSetup {
	t.Helper()
	ctx := context.Background()
	s := &sentinelSetup{primary: startRedisWith(t, "", "--repl-diskless-sync-delay", "0")}
	s.replica = startRedisWith(t, "", "--replicaof", "127.0.0.1", strconv.Itoa(s.primary.port))
	replica := admin(t, s.replica.addr)
	waitUntil(t, "the replica in sync", func() bool {
		repl, err := replica.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(repl, "master_link_status:up")
	})
	conf := fmt.Sprintf(`sentinel monitor %[1]s 127.0.0.1 %[2]d 1
sentinel down-after-milliseconds %[1]s %[3]d
sentinel failover-timeout %[1]s 10000
`, sentinelMaster, s.primary.port, downAfter.Milliseconds())
	s.sentinel = startRedisWith(t, conf, "--sentinel")
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.sentinel.addr})
	t.Cleanup(func() { _ = sc.Close() })
	waitUntil(t, "the Sentinel to know the replica", func() bool {
		r, err := sc.Replicas(ctx, sentinelMaster).Result()
		return err == nil && len(r) == 1
	})
	return s
}

// client returns a FailoverClient of s with go-redis's defaults but for
// the options set by tweak, closed at the end of the test.
func (s *sentinelSetup) client(t testing.TB, tweak func(*redis.FailoverOptions)) *redis.Client {
	o := &redis.FailoverOptions{MasterName: sentinelMaster, SentinelAddrs: []string{s.sentinel.addr}}
	if tweak != nil {
		tweak(o)
	}
	c := redis.NewFailoverClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// failover kills the primary, as a crash does, and returns once the
// Sentinel names the replica as the primary: the moment the fleet's
// recovery is timed from.
func (s *sentinelSetup) failover(t testing.TB) time.Time {
	t.Helper()
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.sentinel.addr})
	defer sc.Close()
	s.primary.Kill()
	deadline := time.Now().Add(30 * time.Second)
	for {
		addr, err := sc.GetMasterAddrByName(context.Background(), sentinelMaster).Result()
		if err == nil && len(addr) == 2 && addr[1] == strconv.Itoa(s.replica.port) {
			return time.Now()
		}
		require.True(t, time.Now().Before(deadline), "the Sentinel did not fail over within 30 s")
		time.Sleep(poll)
	}
}

// clientMember returns a Fleet over client, closed at the end of the
// test before client is (client's own cleanup, registered earlier, runs
// later).
func clientMember(t testing.TB, client redis.UniversalClient, opts redisfleet.Options) *redisfleet.Fleet {
	f := redisfleet.New(client, opts)
	t.Cleanup(func() { require.NoError(t, f.Close()) })
	return f
}

// waitUntil waits until cond holds, failing the test past a minute: the
// bound on setting a topology up, which takes seconds.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(poll)
	}
}
