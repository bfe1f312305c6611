package redisfleet_test

import (
	"net/http"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/redisfleet"
)

// Each process of a service is one member of the fleet: its own client,
// its own Fleet, the same Prefix.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	fleet := redisfleet.New(rdb, redisfleet.Options{Prefix: "myservice:retryhttp:"})
	defer fleet.Close() // before rdb.Close: the Fleet never closes the client

	client := &http.Client{Transport: &retryhttp.Transport{Fleet: fleet}}
	_ = client // client.Get(...) as usual
}

// Any go-redis client serves: a cluster, or a ring of shards. With
// ContextTimeoutEnabled, Options.Timeout bounds every read of the
// Fleet's, and so Close, even on a server that accepts and never
// answers.
func Example_shared() {
	cluster := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 []string{"node1:6379", "node2:6379", "node3:6379"},
		ContextTimeoutEnabled: true,
	})
	defer cluster.Close()
	fleet := redisfleet.New(cluster, redisfleet.Options{})
	defer fleet.Close()

	ring := redis.NewRing(&redis.RingOptions{
		Addrs:                 map[string]string{"a": "shard1:6379", "b": "shard2:6379"},
		ContextTimeoutEnabled: true,
	})
	defer ring.Close()
	sharded := redisfleet.New(ring, redisfleet.Options{})
	defer sharded.Close()
}
