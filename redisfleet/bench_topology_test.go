package redisfleet_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// topologySizes are the numbers of members BenchmarkFleetTopologies
// measures.
var topologySizes = []int{10, 100, 1000}

// BenchmarkFleetTopologies measures the outage of BenchmarkFleet (a
// server that answers every request 503; attempts/req is the server
// requests per request, N members x M requests, N x M = 10,000) with the
// members' Fleets over a Redis Cluster of three primaries, each with a
// replica, and over a Ring of two shards, each member with its own
// ClusterClient or Ring: once for each primary and each shard, with the
// host's budget key on it (the Prefix chosen so; the hold key and the
// channel fall where their names put them), since each server is warmed
// up, and reached, on its own.
//
//	go test -run XXX -bench FleetTopologies -benchtime 1x .
func BenchmarkFleetTopologies(b *testing.B) {
	srv := &retryhttptest.Server{Script: []retryhttptest.Step{{Status: 503}}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	u, err := url.Parse(ts.URL)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("cluster", func(b *testing.B) {
		c := startCluster(b, time.Second)
		for i := range clusterPrimaries {
			prefix := c.prefixOn(b, u.Host, i, -1)
			b.Run(fmt.Sprintf("primary=%d", i), func(b *testing.B) {
				benchTopology(b, srv, ts.URL, prefix, func() redis.UniversalClient {
					return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.addrs()})
				}, func() { flushAll(b, c.admins[:clusterPrimaries]) })
			})
		}
	})
	b.Run("ring", func(b *testing.B) {
		shards := startRing(b, 2)
		probe := ringClient(b, shards, nil)
		addrs := map[string]string{}
		for i, s := range shards {
			addrs[fmt.Sprint("shard", i)] = s.addr
		}
		var admins []*redis.Client
		for _, s := range shards {
			admins = append(admins, admin(b, s.addr))
		}
		for i := range shards {
			prefix := ringPrefixOn(b, probe, shards, u.Host, i, -1)
			b.Run(fmt.Sprintf("shard=%d", i), func(b *testing.B) {
				benchTopology(b, srv, ts.URL, prefix, func() redis.UniversalClient {
					return redis.NewRing(&redis.RingOptions{Addrs: addrs})
				}, func() { flushAll(b, admins) })
			})
		}
	})
}

// benchTopology runs the outage for each of topologySizes, with the
// members' stores made by store, under prefix, each run from a store
// emptied by reset.
func benchTopology(b *testing.B, srv *retryhttptest.Server, target, prefix string, store func() redis.UniversalClient, reset func()) {
	for _, n := range topologySizes {
		m := fleetRequests / n
		b.Run(fmt.Sprintf("N=%d/M=%d", n, m), func(b *testing.B) {
			var o outcome
			var hits int
			for b.Loop() {
				reset()
				members := newMembers(fleet, n, store, nil, redisfleet.Options{Prefix: prefix})
				before := srv.Count()
				o = runFleet(members, m, target, nil)
				hits = srv.Count() - before
				closeMembers(members)
				if o.failed > 0 {
					b.Fatalf("got %d requests without a response, want 0", o.failed)
				}
			}
			b.ReportMetric(float64(hits)/float64(o.requests), "attempts/req")
			b.ReportMetric(float64(hits-int(o.requests))/float64(n), "extra/member")
			b.ReportMetric(float64(o.longest)/float64(time.Millisecond), "max-ms")
		})
	}
}

// flushAll empties the servers of admins, so that no run starts with the
// last one's buckets.
func flushAll(b *testing.B, admins []*redis.Client) {
	for _, a := range admins {
		if err := a.FlushAll(context.Background()).Err(); err != nil {
			b.Fatal(err)
		}
	}
}
