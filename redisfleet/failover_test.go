package redisfleet_test

import (
	"sync"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failoverRecovery is how soon after a failover's promotion the fleet
// works again, as the README promises: the members read the shared
// bucket and a hold reaches every member.
const failoverRecovery = 2 * time.Second

// failoverMembers is the size of the fleets the failover tests run.
const failoverMembers = 10

// failoverOptions are the members' options in the failover tests: a
// reading goes stale soon, so that Look says what the store answered
// since the promotion, not before the primary died.
var failoverOptions = redisfleet.Options{StaleAfter: 200 * time.Millisecond}

// traffic has every member report a failure on host every few
// milliseconds, as members do during an outage of the host, until the
// returned function is called.
func traffic(members []*redisfleet.Fleet) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, f := range members {
		wg.Go(func() {
			t := time.NewTicker(2 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					f.Report(host, failure)
				}
			}
		})
	}
	return func() { close(done); wg.Wait() }
}

// sharing waits until the fleet works: every member has read the shared
// bucket spent since its readings went stale, and a hold one member
// meets has reached every other. It fails the test past deadline.
func sharing(t *testing.T, members []*redisfleet.Fleet, deadline time.Time) {
	t.Helper()
	for i, f := range members {
		for !f.Look(host, "r").Spent {
			require.True(t, time.Now().Before(deadline), "member %d did not read the fleet's bucket in time", i)
			time.Sleep(poll)
		}
	}
	end := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	members[0].Report(host, heldUntil("r", end))
	for i, f := range members {
		for !f.Look(host, "r").HoldUntil.Equal(end) {
			require.True(t, time.Now().Before(deadline), "member %d did not get the hold in time", i)
			time.Sleep(poll)
		}
	}
}

// outage waits until every member has failed round trips since before,
// its readings gone stale: the members have met the dead primary.
func outage(t *testing.T, members []*redisfleet.Fleet, before []uint64) {
	t.Helper()
	for i, f := range members {
		waitFor(t, "failed round trips", func() bool { return f.Stats().FlushErrors > before[i] })
		waitFor(t, "stale readings", func() bool { return !f.Look(host, "r").Spent })
	}
}

// flushErrors returns each member's failed round trips so far.
func flushErrors(members []*redisfleet.Fleet) []uint64 {
	var n []uint64
	for _, f := range members {
		n = append(n, f.Stats().FlushErrors)
	}
	return n
}

// TestRealClusterFailover kills the primary that holds the host's keys
// and the holds channel, lets the members fail against it, and promotes
// its replica: within failoverRecovery of the promotion, the members
// share their bucket and holds again, with go-redis's slot map reloaded
// and the subscriptions made anew on the new primary.
func TestRealClusterFailover(t *testing.T) {
	c := startCluster(t, time.Second)
	const victim = 1
	opts := failoverOptions
	opts.Prefix = c.prefixOn(t, host, victim, victim)
	var members []*redisfleet.Fleet
	for range failoverMembers {
		members = append(members, clientMember(t, c.client(t, nil), opts))
	}
	for _, f := range members {
		subscribed(t, f)
		f.Look(host, "r")
	}
	stop := traffic(members)
	defer stop()
	sharing(t, members, time.Now().Add(eventually))

	before := flushErrors(members)
	c.nodes[victim].Kill()
	outage(t, members, before)
	promoted := c.promote(t, victim)
	sharing(t, members, promoted.Add(failoverRecovery))
	t.Logf("the fleet shared its bucket and holds again %v after the promotion", time.Since(promoted))
}

// TestRealSentinelFailover kills the primary a Sentinel watches, which
// fails it over to the replica: within failoverRecovery of the switch,
// the members, each with go-redis's FailoverClient, share their bucket
// and holds again.
func TestRealSentinelFailover(t *testing.T) {
	s := startSentinel(t, 300*time.Millisecond)
	var members []*redisfleet.Fleet
	for range failoverMembers {
		members = append(members, clientMember(t, s.client(t, nil), failoverOptions))
	}
	for _, f := range members {
		subscribed(t, f)
		f.Look(host, "r")
	}
	stop := traffic(members)
	defer stop()
	sharing(t, members, time.Now().Add(eventually))

	switched := s.failover(t)
	sharing(t, members, switched.Add(failoverRecovery))
	t.Logf("the fleet shared its bucket and holds again %v after the switch", time.Since(switched))
	for _, f := range members {
		assert.Positive(t, f.Stats().Subscriptions, "got a member never subscribed")
	}
}
