package redisfleet_test

import (
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRealRoundTripFiguresCountAnswersOnly runs a member against a real
// store stopped (SIGSTOP) from its start, then running, then gone: the
// round trips the store does not answer are FlushErrors and nothing
// else (no refusal, no round trip time, no subscription); the answered
// ones are Flushes with their times; and the last round trip's time is
// the last answered one's.
func TestRealRoundTripFiguresCountAnswersOnly(t *testing.T) {
	s := startRedis(t)
	s.Pause()
	f := newMember(t, s.addr, redisfleet.Options{Timeout: 200 * time.Millisecond})
	f.Report(host, failure)
	waitFor(t, "round trips failed on the stopped store", func() bool { return f.Stats().FlushErrors >= 2 })
	st := f.Stats()
	assert.Zero(t, st.Flushes, "got round trips answered by a stopped store")
	assert.Zero(t, st.StoreRefusals, "got a store that does not answer counted as refusing")
	assert.Zero(t, st.RoundTrip, "got a round trip time before the first answer")
	assert.Zero(t, st.MaxRoundTrip)
	assert.Zero(t, st.AvgRoundTrip)
	assert.Zero(t, st.Subscriptions, "got a subscription the store never confirmed")

	s.Resume()
	waitFor(t, "an answered round trip", func() bool { return f.Stats().Flushes > 0 })
	subscribed(t, f)
	st = f.Stats()
	assert.Positive(t, st.RoundTrip)
	assert.GreaterOrEqual(t, st.MaxRoundTrip, st.RoundTrip)
	assert.GreaterOrEqual(t, st.MaxRoundTrip, st.AvgRoundTrip)
	assert.Positive(t, st.AvgRoundTrip)
	assert.Zero(t, st.StoreRefusals)

	s.Stop()
	last := f.Stats()
	f.Report(host, failure)
	waitFor(t, "a round trip failed on the store gone", func() bool { return f.Stats().FlushErrors > last.FlushErrors })
	st = f.Stats()
	assert.Equal(t, last.Flushes, st.Flushes, "got a round trip answered by a store gone")
	assert.Equal(t, last.RoundTrip, st.RoundTrip, "got the last round trip time changed by a failed one")
	assert.Equal(t, last.MaxRoundTrip, st.MaxRoundTrip)
	assert.Zero(t, st.StoreRefusals, "got a store gone counted as refusing")
	assert.Zero(t, st.Dropped)
}

// TestRealHoldsLearnedCountsOnlyNews has two members of a healthy store
// set holds: each counts the holds that are new to it or end later than
// the one it knew, not its own coming back on the channel nor a shorter
// one, and subscribes once.
func TestRealHoldsLearnedCountsOnlyNews(t *testing.T) {
	s := startRedis(t)
	a := newMember(t, s.addr, redisfleet.Options{})
	b := newMember(t, s.addr, redisfleet.Options{})
	subscribed(t, a)
	subscribed(t, b)
	a.Look(host, "r")
	b.Look(host, "r")
	now := time.Now().Truncate(time.Millisecond)
	long, short, later := now.Add(time.Hour), now.Add(time.Minute), now.Add(2*time.Hour)

	a.Report(host, heldUntil("r", long))
	waitFor(t, "a's hold to reach b", func() bool { return b.Look(host, "r").HoldUntil.Equal(long) })
	b.Report(host, heldUntil("r", short)) // shorter: news to no one
	b.Report(host, heldUntil("r2", short))
	// a's listener reads the channel in order: its own hold, b's
	// shorter one, then b's hold on r2.
	waitFor(t, "b's hold on r2 to reach a", func() bool { return a.Look(host, "r2").HoldUntil.Equal(short) })
	assert.Equal(t, long, a.Look(host, "r").HoldUntil)
	assert.Equal(t, uint64(1), a.Stats().HoldsLearned, "a learned r2 only")
	assert.Equal(t, uint64(1), b.Stats().HoldsLearned, "b learned a's long hold only")

	a.Report(host, heldUntil("r", later))
	waitFor(t, "a's later hold to reach b", func() bool { return b.Look(host, "r").HoldUntil.Equal(later) })
	assert.Equal(t, uint64(2), b.Stats().HoldsLearned)
	assert.Equal(t, uint64(1), a.Stats().HoldsLearned)
	for name, f := range map[string]*redisfleet.Fleet{"a": a, "b": b} {
		st := f.Stats()
		assert.Equal(t, uint64(1), st.Subscriptions, "%s: got subscriptions again on a healthy store", name)
		assert.Zero(t, st.FlushErrors, name)
		assert.Equal(t, 1, st.Hosts, name)
	}
}

// TestRealHoldReachesEveryMemberThatSent has three members send to a
// host, members whose own flushes wait an hour, and a fourth meet a
// hold there just after the round trip of a failure, so that its hold
// waits FlushInterval: the hold reaches the three through the channel, not
// through their flushes, each learning it once. The design asks for
// 200 ms; the bound here is ten times that, for a busy machine.
func TestRealHoldReachesEveryMemberThatSent(t *testing.T) {
	s := startRedis(t)
	a := newMember(t, s.addr, redisfleet.Options{})
	subscribed(t, a)
	var others []*redisfleet.Fleet
	for range 3 {
		f := newMember(t, s.addr, redisfleet.Options{FlushInterval: time.Hour})
		subscribed(t, f)
		f.Report(host, success)
		others = append(others, f)
	}
	waitFor(t, "the warm-ups", func() bool {
		for _, f := range append(others, a) {
			if f.Stats().Flushes == 0 {
				return false
			}
		}
		return true
	})

	end := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	n := a.Stats().Flushes
	a.Report(host, failure)
	waitFor(t, "a's failure answered", func() bool { return a.Stats().Flushes > n })
	start := time.Now()
	a.Report(host, heldUntil("r", end))
	waitFor(t, "the hold to reach every member", func() bool {
		for _, f := range others {
			if !f.Look(host, "r").HoldUntil.Equal(end) {
				return false
			}
		}
		return true
	})
	took := time.Since(start)
	t.Logf("the hold reached the three members %v after it was met", took)
	assert.Less(t, took, 2*time.Second, "got the hold in force for every member %v after it was met", took)
	for i, f := range others {
		assert.Equal(t, uint64(1), f.Stats().HoldsLearned, "member %d", i)
	}
}

// TestRealFlushesKeepTheirInterval has a member meet a failure at every
// moment: its round trips to a real store still go at most one per
// FlushInterval (the failures between travel together), whatever the
// machine's speed, since a slow one only spaces them more.
func TestRealFlushesKeepTheirInterval(t *testing.T) {
	const trips = 12
	s := startRedis(t)
	a := admin(t, s.addr)
	f := newMember(t, s.addr, redisfleet.Options{})
	subscribed(t, f)
	f.Report(host, failure)
	waitFor(t, "the first failure", func() bool { return budgetLevel(t, a, redisfleet.DefaultPrefix, host) == 99_000 })
	roundTrips := func() uint64 { st := f.Stats(); return st.Flushes + st.FlushErrors }

	n, start := roundTrips(), time.Now()
	reported := 0
	waitFor(t, "the round trips", func() bool {
		f.Report(host, success)
		f.Report(host, failure)
		reported++
		return roundTrips() >= n+trips
	})
	took := time.Since(start)
	t.Logf("%d round trips in %v carrying %d failures", trips, took, reported)
	// The last round trip began at least trips-1 intervals after the
	// first; the first may have been on its way already when counting
	// began: two intervals of margin.
	require.GreaterOrEqual(t, took, (trips-3)*redisfleet.DefaultFlushInterval,
		"got %d round trips in %v, more than one per %v", trips, took, redisfleet.DefaultFlushInterval)
	assert.Zero(t, f.Stats().FlushErrors)
}
