package redisfleet_test

import (
	"fmt"
	"testing"

	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRealForgettingAHostInFlightDropsNothing has a member forget hosts
// whose failures are in flight, the store's answer held back: once it
// comes, those failures are in the store, not lost. Every failure ends
// either in the store or counted in Dropped, never both.
func TestRealForgettingAHostInFlightDropsNothing(t *testing.T) {
	s := startRedis(t)
	p := startProxy(t, s.addr, 0)
	const kept = 8
	f := newMember(t, p.Addr(), redisfleet.Options{MaxHosts: kept})
	waitFor(t, "the warm-up", func() bool { return f.Stats().Flushes > 0 })
	a := admin(t, s.addr)
	name := func(i int) string { return fmt.Sprintf("h%d.example.com", i) }
	applied := func() (n int) {
		for i := range 2 * kept {
			if l := budgetLevel(t, a, redisfleet.DefaultPrefix, name(i)); l != -1 {
				require.Equal(t, int64(99_000), l, "got %s's failure counted twice", name(i))
				n++
			}
		}
		return n
	}

	p.Freeze() // the store applies the round trip; its answer waits
	for i := range kept {
		f.Report(name(i), failure)
	}
	waitFor(t, "a failure in flight applied", func() bool { return applied() > 0 })
	for i := kept; i < 2*kept; i++ { // busy hosts too: they push out the first ones
		f.Report(name(i), failure)
	}
	p.Thaw()
	waitFor(t, "every failure in the store or dropped", func() bool { return applied()+int(f.Stats().Dropped) >= 2*kept })
	waitFor(t, "the last failures in the store", func() bool { return applied() >= kept+1 })
	assert.Equal(t, 2*kept, applied()+int(f.Stats().Dropped), "got %d failures in the store and %d dropped, of %d",
		applied(), f.Stats().Dropped, 2*kept)
	assert.Zero(t, f.Stats().FlushErrors)
}

// TestRealForgettingAHostWhileTheStoreIsDownDropsItOnce has a member
// forget hosts whose failures the store, down, did not take, in flight
// or pending: each is counted in Dropped once, however many round trips
// fail after.
func TestRealForgettingAHostWhileTheStoreIsDownDropsItOnce(t *testing.T) {
	s := startRedis(t)
	const kept = 8
	f := newMember(t, s.addr, redisfleet.Options{MaxHosts: kept})
	waitFor(t, "the warm-up", func() bool { return f.Stats().Flushes > 0 })
	s.Stop()
	name := func(i int) string { return fmt.Sprintf("h%d.example.com", i) }
	for i := range kept {
		f.Report(name(i), failure)
	}
	waitFor(t, "a failed round trip", func() bool { return f.Stats().FlushErrors > 0 })
	for i := kept; i < 2*kept; i++ { // busy hosts too: they push out the first ones
		f.Report(name(i), failure)
	}
	errs := f.Stats().FlushErrors
	waitFor(t, "more failed round trips", func() bool { return f.Stats().FlushErrors >= errs+3 })
	assert.Equal(t, uint64(kept), f.Stats().Dropped, "got %d of the %d failures forgotten dropped", f.Stats().Dropped, kept)
}
