package redisfleet_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storeLevel returns the bucket of host in the store at addr, in
// milli-tokens: -1 for no key (a full bucket).
func storeLevel(t *testing.T, addr, host string) int64 {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	v, err := c.HGet(context.Background(), redisfleet.DefaultPrefix+"budget:"+host, "level").Int64()
	if err == redis.Nil {
		return -1
	}
	if err != nil {
		return -2 // the store not there: no level
	}
	return v
}

// shareBudgetAndHold checks, through members a and b of one fleet, that
// a's failures spend b's budget and a's hold reaches b, and returns how
// long the hold took to reach b.
func shareBudgetAndHold(t *testing.T, a, b *redisfleet.Fleet, storeAddr string) time.Duration {
	t.Helper()
	subscribed(t, a)
	subscribed(t, b)
	b.Look(host, "r") // b meets the host
	for range 49 {
		a.Report(host, failure)
	}
	waitFor(t, "a's 49 failures in the store", func() bool { return storeLevel(t, storeAddr, host) == 51_000 })
	assert.False(t, b.Look(host, "r").Spent, "got b spent before it read the store")
	b.Report(host, failure)
	waitFor(t, "b to read the bucket spent", func() bool { return b.Look(host, "r").Spent })
	assert.Equal(t, int64(50_000), storeLevel(t, storeAddr, host))

	end := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	start := time.Now()
	a.Report(host, heldUntil("r", end))
	waitFor(t, "a's hold to reach b", func() bool { return b.Look(host, "r").HoldUntil.Equal(end) })
	return time.Since(start)
}

func TestRealMembersShareBudgetAndHold(t *testing.T) {
	s := startRedis(t)
	a := newMember(t, s.addr, redisfleet.Options{})
	b := newMember(t, s.addr, redisfleet.Options{})
	took := shareBudgetAndHold(t, a, b, s.addr)
	t.Logf("a's hold reached b %v after a met it (the design asks for 200 ms)", took)
}

// TestRealSlowStore puts 50 ms on every reply of the store: the members
// still share their budget and holds, and while the store does not
// answer at all, the request path does not wait for it.
func TestRealSlowStore(t *testing.T) {
	s := startRedis(t)
	p := startProxy(t, s.addr, 50*time.Millisecond)
	a := newMember(t, p.Addr(), redisfleet.Options{})
	b := newMember(t, p.Addr(), redisfleet.Options{})
	took := shareBudgetAndHold(t, a, b, s.addr)
	t.Logf("through a store 50 ms slow, a's hold reached b %v after a met it", took)
	st := a.Stats()
	assert.GreaterOrEqual(t, st.MaxRoundTrip, 50*time.Millisecond, "got round trips of at most %v through a proxy that waits 50 ms", st.MaxRoundTrip)

	p.Freeze()
	defer p.Thaw()
	requestPathAnswers(t, a, 10_000)
}

// requestPathAnswers makes n Report and Look calls on f, failing the
// test if they do not all return (on a store that cannot answer, a call
// that waited for it would never return).
func requestPathAnswers(t *testing.T, f *redisfleet.Fleet, n int) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			if i%10 == 0 {
				f.Report(host, failure)
			} else {
				f.Report(host, success)
			}
			f.Look(host, "r")
		}
	}()
	select {
	case <-done:
	case <-time.After(eventually):
		t.Fatalf("got %d Report and Look calls unfinished after %v: the request path waits for the store", n, eventually)
	}
}

// TestRealStoreStoppedMidRun stops the store while members send, and
// starts it again: the calls never stop answering, the flushers keep
// trying, and afterwards the members find the store again by themselves:
// scripts loaded anew, subscriptions made anew, holds shared again.
func TestRealStoreStoppedMidRun(t *testing.T) {
	s := startRedis(t)
	a := newMember(t, s.addr, redisfleet.Options{})
	b := newMember(t, s.addr, redisfleet.Options{})
	subscribed(t, a)
	subscribed(t, b)
	b.Look(host, "r")

	var calls atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, f := range []*redisfleet.Fleet{a, b} {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				f.Report(host, failure)
				f.Look(host, "r")
				calls.Add(1)
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	waitFor(t, "the failures in the store", func() bool { return storeLevel(t, s.addr, host) >= 0 })

	s.Stop()
	before, errsA, errsB := calls.Load(), a.Stats().FlushErrors, b.Stats().FlushErrors
	waitFor(t, "failed round trips of both members", func() bool {
		return a.Stats().FlushErrors > errsA && b.Stats().FlushErrors > errsB
	})
	waitFor(t, "calls while the store is down", func() bool { return calls.Load() > before+1000 })

	require.NoError(t, s.Start())
	// The new store has no scripts and no data: the members' next deltas
	// load the scripts again, and their listeners subscribe again.
	waitFor(t, "the failures in the new store", func() bool { return storeLevel(t, s.addr, host) >= 0 })
	waitFor(t, "both members subscribed again", func() bool {
		return a.Stats().Subscriptions >= 2 && b.Stats().Subscriptions >= 2
	})
	end := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	a.Report(host, heldUntil("r", end))
	waitFor(t, "a's hold to reach b after the restart", func() bool { return b.Look(host, "r").HoldUntil.Equal(end) })
	t.Logf("subscriptions: a %d, b %d; calls during the run: %d", a.Stats().Subscriptions, b.Stats().Subscriptions, calls.Load())
}

// TestFirstFlushReusesTheWarmConnection guards against a go-redis
// pitfall: a connection warmed by a plain command was not reused by the
// first pipelined flush, so each member dialed the store anew on its
// first failure, during the outage it reports. The warm-up goes through
// the flushes' own pipeline, so the first flush finds its connection.
func TestFirstFlushReusesTheWarmConnection(t *testing.T) {
	s := startRedis(t)
	p := startProxy(t, s.addr, 0)
	a := newMember(t, p.Addr(), redisfleet.Options{})
	subscribed(t, a)
	waitFor(t, "the warm-up", func() bool { return a.Stats().Flushes >= 1 })
	require.Equal(t, 3, p.Accepted(), "got %d connections after the warm-up, want the flusher's two and the listener's", p.Accepted())
	for i := range 3 {
		before := a.Stats().Flushes
		a.Report(host, failure)
		waitFor(t, "the failure's round trip", func() bool { return a.Stats().Flushes > before })
		assert.Equal(t, 3, p.Accepted(), "flush %d: got %d connections, want no new one", i+1, p.Accepted())
	}
}
