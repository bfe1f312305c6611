package redisfleet_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The chaos tests run many members over real stores at once, each
// calling Report, Look and Stats from goroutines of its own, while the
// store is frozen and thawed, loses its scripts, or restarts, and
// members close at random moments. What they check holds whatever the
// order of events: each bound on time is one on a hang, never on speed.

// chaosThrottle is the largest bucket, 1000 tokens: the failures the
// tests count never empty it, so that its level in the store tells each.
var chaosThrottle = &policy.Throttle{MaxTokens: 1000, TokenRatio: 0.25}

// chaosCapacity is chaosThrottle's capacity in milli-tokens.
const chaosCapacity = 1_000_000

const (
	countedHost = "counted.example.com" // failures on it from the counters alone, each counted
	heldHost    = "held.example.com"    // the first counter holds its rule "held"; everyone looks it up
	chaosHosts  = 200                   // the churners' hosts, many more than their MaxHosts
	perCounter  = 50                    // failures on countedHost per counting goroutine, at most
	closeMargin = 2 * time.Second       // beyond Timeout, for a Close on two busy cores
)

// chaosOptions are the members' options: a Timeout short against the
// faults, so that round trips on a frozen store end within the run.
var chaosOptions = redisfleet.Options{FlushInterval: 20 * time.Millisecond, Timeout: 300 * time.Millisecond,
	StaleAfter: 500 * time.Millisecond}

// chaosMember is one member of a chaos run and the client it alone uses.
type chaosMember struct {
	f      *redisfleet.Fleet
	client redis.UniversalClient
	opts   redisfleet.Options
	counts bool // reports failures on countedHost; never closed during the run

	closed   atomic.Bool
	atClose  redisfleet.Stats // Stats() once closed
	met      atomic.Bool      // looked up heldHost
	reported atomic.Int64     // failures reported on countedHost
	epochs   []atomic.Int64   // of reported, those reported after the i-th restart had ended
}

// chaosRun is one run: its members, the fault that strikes the store, and
// the count of the store's restarts.
type chaosRun struct {
	t        *testing.T
	members  []*chaosMember
	restarts atomic.Int64
	longest  atomic.Int64 // the longest Close, in nanoseconds
	heldEnd  time.Time
}

// newChaosRun makes counters+churners members, each over its own client
// from dial; the counters never close during the run, the churners keep
// state for a few hosts and may close.
func newChaosRun(t *testing.T, counters, churners, maxRestarts int, dial func(i int) redis.UniversalClient) *chaosRun {
	r := &chaosRun{t: t, heldEnd: time.Now().Add(time.Hour).Truncate(time.Millisecond)}
	for i := range counters + churners {
		m := &chaosMember{client: dial(i), opts: chaosOptions, counts: i < counters,
			epochs: make([]atomic.Int64, maxRestarts+1)}
		m.opts.MaxHosts = 8
		if m.counts {
			m.opts.MaxHosts = 64 // its hosts all fit: none forgotten, no failure dropped
		}
		m.f = redisfleet.New(m.client, m.opts)
		r.members = append(r.members, m)
	}
	return r
}

// work calls Report, Look and Stats on m about once a millisecond until
// stop, from seed's sequence of moves; after m's Close it checks that they
// do nothing.
func (r *chaosRun) work(m *chaosMember, seed uint64, stop <-chan struct{}) {
	rnd := rand.New(rand.NewPCG(seed, seed>>1))
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	counted := 0
	var last redisfleet.Stats
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		closed := m.closed.Load()
		name := fmt.Sprintf("h%d.example.com", rnd.IntN(chaosHosts))
		if m.counts {
			name = fmt.Sprintf("h%d.example.com", rnd.IntN(m.opts.MaxHosts/2))
		}
		switch n := rnd.IntN(100); {
		case m.counts && n < 2 && counted < perCounter:
			e := r.restarts.Load() // before the report: it is sent to the store as it is after restart e
			m.f.Report(countedHost, retryhttp.FleetReport{Rule: "r", Budget: retryhttp.FleetFailure, Throttle: chaosThrottle})
			counted++
			m.reported.Add(1)
			m.epochs[e].Add(1)
		case m == r.members[0] && n < 12: // one member holds, the others learn it
			m.f.Report(heldHost, retryhttp.FleetReport{Rule: "held", HoldUntil: r.heldEnd, HoldStatus: 429})
		case n < 20:
			m.met.Store(true)
			v := m.f.Look(heldHost, "held")
			assert.False(r.t, closed && v != (retryhttp.FleetView{}), "got %+v from a closed member", v)
		case n < 40:
			m.f.Report(name, retryhttp.FleetReport{Rule: "r", Budget: retryhttp.FleetFailure, Throttle: chaosThrottle})
		case n < 70:
			m.f.Report(name, retryhttp.FleetReport{Rule: "r", Budget: retryhttp.FleetSuccess, Throttle: chaosThrottle})
		case n < 80:
			// Holds ending in the past, soon, later, or far past a
			// century, on a few rules.
			end := time.Now().Add(time.Duration(rnd.IntN(4000)-1000) * time.Millisecond)
			if rnd.IntN(10) == 0 {
				end = time.Now().Add(200 * 365 * 24 * time.Hour)
			}
			m.f.Report(name, retryhttp.FleetReport{Rule: fmt.Sprint("r", rnd.IntN(3)), Budget: retryhttp.FleetFailure,
				Throttle: chaosThrottle, HoldUntil: end, HoldStatus: 429 + rnd.IntN(2)*74})
		case n < 95:
			v := m.f.Look(name, fmt.Sprint("r", rnd.IntN(3)))
			assert.False(r.t, closed && v != (retryhttp.FleetView{}), "got %+v from a closed member", v)
		default:
			// Each field is read on its own, so mostly each field's own
			// course is checked here: the counts and the longest round
			// trip never go back. The longest is written before the
			// last, and read after it: never shorter than it.
			s := m.f.Stats()
			assert.LessOrEqual(r.t, s.Hosts, m.opts.MaxHosts, "got more hosts than MaxHosts")
			assert.LessOrEqual(r.t, s.RoundTrip, s.MaxRoundTrip, "got a last round trip longer than the longest")
			assert.True(r.t, s.Flushes >= last.Flushes && s.FlushErrors >= last.FlushErrors &&
				s.StoreRefusals >= last.StoreRefusals && s.MaxRoundTrip >= last.MaxRoundTrip &&
				s.Dropped >= last.Dropped && s.HoldsLearned >= last.HoldsLearned &&
				s.Subscriptions >= last.Subscriptions, "got %+v after %+v", s, last)
			last = s
			if closed {
				assert.Equal(r.t, m.atClose, s, "got the figures changed after Close")
			}
		}
	}
}

// close closes m, twice at once as a careless caller may, and checks
// that it returned within Timeout and the margin.
func (r *chaosRun) close(m *chaosMember) {
	start := time.Now()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { assert.NoError(r.t, m.f.Close()) })
	}
	wg.Wait()
	took := time.Since(start)
	assert.Less(r.t, took, m.opts.Timeout+closeMargin, "got Close taking %v, Timeout %v", took, m.opts.Timeout)
	r.longest.Store(max(r.longest.Load(), int64(took))) // a figure for the log; a race between two closes costs nothing
	m.atClose = m.f.Stats()
	m.closed.Store(true)
}

// run runs the members' work for d, while fault strikes the store again
// and again and the churners close at random moments; it returns once
// every goroutine it started has ended, and the store is up.
func (r *chaosRun) run(d time.Duration, seed uint64, fault func(rnd *rand.Rand)) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, m := range r.members {
		for g := range 2 {
			wg.Go(func() { r.work(m, seed+uint64(2*i+g), stop) })
		}
		if !m.counts && i%2 == 0 { // half the churners close during the run
			at := time.Duration(rand.Int64N(int64(d)))
			wg.Go(func() {
				t := time.NewTimer(at)
				defer t.Stop()
				select {
				case <-t.C:
					r.close(m)
				case <-stop:
				}
			})
		}
	}
	faults := make(chan struct{})
	go func() {
		defer close(faults)
		rnd := rand.New(rand.NewPCG(seed, 0))
		for {
			t := time.NewTimer(time.Duration(20+rnd.IntN(150)) * time.Millisecond)
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C:
			}
			fault(rnd)
		}
	}()
	end := time.NewTimer(d)
	<-end.C
	close(stop)
	<-faults
	wg.Wait()
}

// pause waits d: the length of a fault.
func pause(d time.Duration) { <-time.After(d) }

// storeFaults returns a fault that strikes one of servers at random: a
// freeze of 20 to 700 ms (SIGSTOP, SIGCONT: past Timeout, so that
// answers are lost and batches sent again), a refusal of every script
// for 20 to 300 ms (maxmemory 1: OOM), its scripts flushed through its
// admin client, or, while r has restarted fewer than
// restarts, a stop and a start again with no data kept.
func storeFaults(t *testing.T, r *chaosRun, servers []*redisServer, admins []*redis.Client, restarts int) func(*rand.Rand) {
	return func(rnd *rand.Rand) {
		i := rnd.IntN(len(servers))
		switch n := rnd.IntN(10); {
		case n < 3:
			servers[i].Pause()
			pause(time.Duration(20+rnd.IntN(680)) * time.Millisecond)
			servers[i].Resume()
		case n < 5:
			// Out of memory: the store refuses the scripts, which apply
			// nothing, and the work waits.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			assert.NoError(t, admins[i].ConfigSet(ctx, "maxmemory", "1").Err())
			pause(time.Duration(20+rnd.IntN(280)) * time.Millisecond)
			assert.NoError(t, admins[i].ConfigSet(ctx, "maxmemory", "0").Err())
		case n < 7 || r.restarts.Load() >= int64(restarts):
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			assert.NoError(t, admins[i].ScriptFlush(ctx).Err())
		default:
			servers[i].Stop()
			pause(time.Duration(20+rnd.IntN(100)) * time.Millisecond)
			require.NoError(t, servers[i].Start())
			r.restarts.Add(1)
		}
	}
}

// finish closes the members still open and their clients, each Close
// within Timeout and the margin, and checks their figures.
func (r *chaosRun) finish() {
	for _, m := range r.members {
		if !m.closed.Load() {
			r.close(m)
		}
		_ = m.client.Close()
		// Nothing moves now: the figures agree with one another.
		s := m.f.Stats()
		assert.True(r.t, s.RoundTrip <= s.MaxRoundTrip && s.AvgRoundTrip <= s.MaxRoundTrip, "got %+v", s)
		assert.LessOrEqual(r.t, s.StoreRefusals, s.FlushErrors, "got more round trips refused than failed")
	}
}

// settled reports the failures on countedHost the counters reported,
// after waiting until each counter made two more answered round trips,
// so that every batch of theirs the store did not answer was sent
// again.
func (r *chaosRun) settled() (all int64, sinceRestart int64) {
	last := r.restarts.Load()
	for round := range 2 {
		for _, m := range r.members {
			if !m.counts {
				continue
			}
			n := m.f.Stats().Flushes
			m.f.Report(fmt.Sprint("tick", round, ".example.com"), retryhttp.FleetReport{Rule: "r",
				Budget: retryhttp.FleetFailure, Throttle: chaosThrottle})
			waitFor(r.t, "a counter's round trip", func() bool { return m.f.Stats().Flushes > n })
		}
	}
	for _, m := range r.members {
		if m.counts {
			all += m.reported.Load()
			sinceRestart += m.epochs[last].Load()
			assert.Zero(r.t, m.f.Stats().Dropped, "got a counter's reports dropped")
		}
	}
	return all, sinceRestart
}

// heldEverywhere waits until every open member that looked up heldHost
// sees the counters' hold on it.
func (r *chaosRun) heldEverywhere() {
	for i, m := range r.members {
		if m.closed.Load() || !m.met.Load() {
			continue
		}
		waitFor(r.t, fmt.Sprint("the hold to reach member ", i), func() bool {
			return m.f.Look(heldHost, "held").HoldUntil.Equal(r.heldEnd)
		})
	}
}

// levelOf returns countedHost's bucket in the store a talks to, in
// milli-tokens: the capacity when there is none (full).
func levelOf(t *testing.T, a redis.Cmdable) int64 {
	if l := budgetLevel(t, a, redisfleet.DefaultPrefix, countedHost); l >= 0 {
		return l
	}
	return chaosCapacity
}

// TestRealFleetUnderChaos runs 32 members over real stores, one server
// or a Ring of two, frozen and thawed and flushed of their scripts at
// random moments, or restarted too, while half the churners close: no
// race, no panic, no goroutine left, every Close within Timeout, holds
// reaching every member that met their host, and every failure of the
// counters counted once in the store. A restart loses what came before
// it, so there the store's level is bounded by the failures reported
// since the last restart and by all of them; on a Ring, whose keys move
// to the other shard while one is down, by all of them on each shard.
func TestRealFleetUnderChaos(t *testing.T) {
	for _, tc := range []struct {
		name             string
		shards, restarts int
	}{
		{"one server, frozen and flushed", 1, 0},
		{"one server, restarted too", 1, 3},
		{"ring of two, restarted too", 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers := startRing(t, tc.shards)
			leaks := goleak.IgnoreCurrent()
			var admins []*redis.Client
			addrs := map[string]string{}
			for i, s := range servers {
				admins = append(admins, redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1}))
				addrs[fmt.Sprint("shard", i)] = s.addr
			}
			r := newChaosRun(t, 8, 24, tc.restarts, func(i int) redis.UniversalClient {
				if tc.shards > 1 {
					return redis.NewRing(&redis.RingOptions{Addrs: addrs, ContextTimeoutEnabled: i%2 == 0,
						MaxRetries: i%3 - 1, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
				}
				return redis.NewClient(&redis.Options{Addr: servers[0].addr, ContextTimeoutEnabled: i%2 == 0,
					MaxRetries: i%3 - 1, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
			})
			r.run(2*time.Second, rand.Uint64(), storeFaults(t, r, servers, admins, tc.restarts))

			all, since := r.settled()
			switch {
			case tc.shards > 1:
				for i, a := range admins {
					assert.GreaterOrEqual(t, levelOf(t, a), int64(chaosCapacity-all*1000),
						"got more counted on shard %d than the %d failures", i, all)
				}
			case tc.restarts == 0:
				assert.Equal(t, int64(chaosCapacity-all*1000), levelOf(t, admins[0]), "got the bucket after %d failures", all)
				r.heldEverywhere()
			default:
				level := levelOf(t, admins[0])
				assert.GreaterOrEqual(t, level, int64(chaosCapacity-all*1000), "got more counted than the %d failures", all)
				assert.LessOrEqual(t, level, int64(chaosCapacity-since*1000),
					"got fewer counted than the %d failures since the last restart", since)
			}
			r.finish()
			t.Logf("%d restarts; %d failures, %d since the last; longest Close %v", r.restarts.Load(), all, since,
				time.Duration(r.longest.Load()))
			for i, a := range admins {
				_ = a.Close()
				servers[i].Stop()
			}
			goleak.VerifyNone(t, leaks, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
		})
	}
}
