package redisfleet_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// BenchmarkFleet measures what sharing a budget does for a fleet of N
// members sending M requests each (N x M = 10,000 in all, the offered
// load the same at every N), each member a Transport with its own Fleet
// over its own go-redis client, as a process would have, against a real
// redis-server on loopback:
//
//   - outage: a server that answers every request 503; attempts/req is
//     the server requests per request, extra/member what each member
//     added above its own requests. policy.Default's backoffs.
//   - flaky: a server that answers 10% of attempts 503 at random; ok%
//     is the requests answered 200 (about 0.1% draw three 503s whatever
//     the budgets do); refused/req is the retries the budgets, the
//     members' own and the fleet's, refused, per request. quickPolicy's
//     backoffs, a tenth of the defaults, with a flush interval a tenth
//     as long, so that a run takes seconds.
//   - storedown: the outage with the store stopped until half the
//     requests have ended; max-ms is the slowest request, which would
//     show one that waited for the store (compare the outage's).
//   - allocs: one member's successful requests, allocations and bytes
//     per request with and without a Fleet installed.
//
// Each is run with the members alone (no Fleet: the baseline) and with
// the Fleet set as Transport.Fleet (fleet).
//
//	go test -run XXX -bench 'Fleet$' -benchtime 1x .
func BenchmarkFleet(b *testing.B) {
	s := startRedis(b)
	b.Run("outage", func(b *testing.B) {
		for _, w := range []wiring{alone, fleet} {
			b.Run(w.String(), func(b *testing.B) { benchOutage(b, s, w, false) })
		}
	})
	b.Run("flaky", func(b *testing.B) {
		for _, w := range []wiring{alone, fleet} {
			b.Run(w.String(), func(b *testing.B) { benchFlaky(b, s, w) })
		}
	})
	b.Run("storedown", func(b *testing.B) {
		for _, w := range []wiring{fleet} {
			b.Run(w.String(), func(b *testing.B) { benchOutage(b, s, w, true) })
		}
	})
	b.Run("allocs", func(b *testing.B) {
		for _, w := range []wiring{alone, fleet} {
			b.Run(w.String(), func(b *testing.B) { benchAllocs(b, s, w) })
		}
	})
}

// fleetRequests is the number of requests a whole fleet sends in a run.
const fleetRequests = 10_000

// fleetSizes are the numbers of members measured.
var fleetSizes = []int{1, 10, 100, 1000}

// benchOutage runs the fleets against a server that answers 503, with
// the store stopped for the first half of each run when storeDown.
func benchOutage(b *testing.B, s *redisServer, w wiring, storeDown bool) {
	srv := &retryhttptest.Server{Script: []retryhttptest.Step{{Status: 503}}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	for _, n := range fleetSizes {
		m := fleetRequests / n
		b.Run(fmt.Sprintf("N=%d/M=%d", n, m), func(b *testing.B) {
			var o outcome
			var hits int
			for b.Loop() {
				flushStore(b, s)
				members := newMembers(w, n, storeAt(s.addr), nil, redisfleet.Options{})
				var onHalf func()
				if storeDown {
					s.Stop()
					onHalf = func() {
						if err := s.Start(); err != nil {
							b.Error(err)
						}
					}
				}
				before := srv.Count()
				o = runFleet(members, m, ts.URL, onHalf)
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

// benchFlaky runs the fleets against a server that answers 10% of
// attempts 503.
func benchFlaky(b *testing.B, s *redisServer, w wiring) {
	srv := &retryhttptest.Server{Choose: func(int, *http.Request) retryhttptest.Step {
		if rand.IntN(10) == 0 {
			return retryhttptest.Step{Status: 503}
		}
		return retryhttptest.Step{}
	}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	for _, n := range fleetSizes {
		m := fleetRequests / n
		b.Run(fmt.Sprintf("N=%d/M=%d", n, m), func(b *testing.B) {
			var o outcome
			var hits int
			var refused uint64
			for b.Loop() {
				flushStore(b, s)
				members := newMembers(w, n, storeAt(s.addr), quickPolicy(), quickFleet)
				before := srv.Count()
				o = runFleet(members, m, ts.URL, nil)
				hits = srv.Count() - before
				refused = 0
				for _, mb := range members {
					for _, c := range mb.tr.Stats().Hosts {
						refused += c.BudgetRefusals + c.FleetRefusals
					}
				}
				closeMembers(members)
			}
			b.ReportMetric(100*float64(o.ok)/float64(o.requests), "ok%")
			b.ReportMetric(float64(hits)/float64(o.requests), "attempts/req")
			b.ReportMetric(float64(refused)/float64(o.requests), "refused/req")
		})
	}
}

// allocRequests is the number of requests whose allocations one run
// of benchAllocs counts, after as many to warm up.
const allocRequests = 1000

// benchAllocs measures one member's successful requests: allocations
// and bytes per request, counted over the whole process (a Fleet's
// background work included) once the connections are warm.
func benchAllocs(b *testing.B, s *redisServer, w wiring) {
	ts := httptest.NewServer(&retryhttptest.Server{Script: []retryhttptest.Step{{}}})
	defer ts.Close()
	flushStore(b, s)
	mb := newMembers(w, 1, storeAt(s.addr), nil, redisfleet.Options{})[0]
	defer mb.close()
	req, err := http.NewRequest(http.MethodGet, ts.URL, nil)
	if err != nil {
		b.Fatal(err)
	}
	run := func() {
		for range allocRequests {
			resp, err := mb.tr.RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			_ = resp.Body.Close()
		}
	}
	run()
	var before, after runtime.MemStats
	for b.Loop() {
		runtime.ReadMemStats(&before)
		run()
		runtime.ReadMemStats(&after)
	}
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/allocRequests, "allocs/req")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/allocRequests, "B/req")
}

// newMembers returns n members, each with its own client of the store,
// made by store, and warmed up as a process that has run for a while
// is: its first round trip to the store made and its subscription in
// place, and the garbage of its start collected. (A thousand members in
// one process carry a thousand clients' connection buffers, a gigabyte
// or two; a collection of that heap started by their start-up would
// otherwise run into the outage, taking a share of the two cores that no
// member of a real fleet, one client to a process, pays.)
func newMembers(w wiring, n int, store func() redis.UniversalClient, pol *policy.Config, opts redisfleet.Options) []*member {
	members := make([]*member, n)
	for i := range members {
		members[i] = newFleetMember(w, store, pol, opts)
	}
	deadline := time.Now().Add(time.Minute)
	for _, mb := range members {
		for mb.fleet != nil && time.Now().Before(deadline) {
			if st := mb.fleet.Stats(); st.Flushes > 0 && st.Subscriptions > 0 {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	runtime.GC()
	return members
}

// closeMembers closes members.
func closeMembers(members []*member) {
	for _, mb := range members {
		mb.close()
	}
}

// flushStore empties the store between runs, so that no run starts with
// the last one's buckets.
func flushStore(b *testing.B, s *redisServer) {
	c := redis.NewClient(&redis.Options{Addr: s.addr})
	defer c.Close()
	if err := c.FlushAll(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
}
