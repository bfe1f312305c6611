package redisfleet

import (
	"math"
	"time"
)

// maxStoreBackoff caps the wait between two round trips while the store
// does not answer: short enough that a member finds the store soon after
// it returns (within a second of a failover's promotion, with the slot
// map's reload and the subscription's), long enough that a fleet of
// members does not hammer a store that is down (two round trips a second
// per member, each bounded by Options.Timeout).
const maxStoreBackoff = 500 * time.Millisecond

// schedule is the flusher's timing, kept apart from its I/O so that
// tests drive it with the times they choose. The zero schedule is not
// ready: interval must be set. Only the flusher goroutine uses it.
type schedule struct {
	interval time.Duration // least time between two round trips
	last     time.Time     // start of the last round trip that counts; zero before the first
	prev     time.Time     // last, before the round trip that started last
	fails    int           // round trips failed in a row
	backoff  time.Duration // least time after the last round trip while the store fails
	due      time.Time     // start of the next round trip; zero: nothing to send
}

// work records work that arrived at now. Urgent work (deltas, holds)
// goes as soon as the interval since the last round trip allows; other
// work (the fetches of hosts met) waits the interval as well, so that a
// member meeting hosts without end fetches them together. While the store fails, the
// backoff replaces the interval when it is longer. An earlier due time
// already set is kept.
func (s *schedule) work(now time.Time, urgent bool) {
	at := now
	if !urgent {
		at = now.Add(s.interval)
	}
	if !s.last.IsZero() {
		if earliest := s.last.Add(max(s.interval, s.backoff)); at.Before(earliest) {
			at = earliest
		}
	}
	if s.due.IsZero() || at.Before(s.due) {
		s.due = at
	}
}

// start records a round trip starting at now: nothing is due until work
// arrives again.
func (s *schedule) start(now time.Time) {
	s.prev, s.last = s.last, now
	s.due = time.Time{}
}

// carried is what a round trip carried, which says whether it counts
// against the interval once the store has answered it.
type carried uint8

const (
	// carriedUrgent: deltas or holds. It counts.
	carriedUrgent carried = iota
	// carriedFetches: fetches of the holds of hosts met, alone beside a
	// warm-up (without one they go aside: carriedNothing). It does not
	// count: urgent work after it goes as soon as the round trip before
	// it allows. A member's first failure on a host
	// often comes just after the fetch of that host's holds; kept
	// waiting out the interval, it would reach the store after the
	// member's own retry had asked the fleet. Fetches still wait the
	// interval after one another, so a member makes at most two round
	// trips per interval, one of fetches and one of urgent work.
	carriedFetches
	// carriedWarmUp: the first answered round trip, which loaded the
	// scripts. Nothing before it counts either: a member's first
	// failure, often just after its start, goes at once.
	carriedWarmUp
	// carriedNothing: nothing on the flusher's own round trip; fetches,
	// if any, went on one of their own (see Fleet.fetchAside), whose end
	// aside reports. It does not count, and says nothing of the store.
	carriedNothing
)

// end records how the round trip that started last, carrying what, went.
// After a failure what it carried is due again after the backoff, which
// grows; rnd, in [0, 1), jitters it so that members do not return in
// step. An answer resets the backoff.
func (s *schedule) end(ok bool, what carried, rnd float64) {
	if what == carriedNothing {
		s.last = s.prev
		return
	}
	if ok {
		s.fails, s.backoff = 0, 0
		switch what {
		case carriedFetches:
			s.last = s.prev
		case carriedWarmUp:
			s.last = time.Time{}
		}
		return
	}
	s.fails++
	s.backoff = backoff(s.fails, s.interval, rnd)
	s.work(s.last, true)
}

// aside records the end, at now, of a round trip of fetches sent aside
// (see carriedNothing). An answer leaves the backoff as it is: it says
// nothing of the servers the flusher's own work goes to (a Ring's other
// shard, a Cluster's other primary); the fetches of the hosts met
// meanwhile are due after the interval. A failure grows the backoff, and
// the fetches are tried again once it has passed.
func (s *schedule) aside(ok bool, now time.Time, rnd float64) {
	if ok {
		s.work(now, false)
		return
	}
	s.fails++
	s.backoff = backoff(s.fails, s.interval, rnd)
	s.work(now.Add(s.backoff), true)
}

// backoff returns the wait after the n-th failure in a row (n >= 1):
// base doubled n-1 times, capped at maxStoreBackoff (or base if longer),
// times a factor in [0.8, 1.2) drawn from rnd in [0, 1), and at most
// the longest Duration.
func backoff(n int, base time.Duration, rnd float64) time.Duration {
	d := base
	for i := 1; i < n && d < maxStoreBackoff; i++ {
		d *= 2
	}
	d = min(d, max(maxStoreBackoff, base))
	// In floating point, then capped: a base near the longest Duration
	// times a factor above 1 does not fit, and Go's conversion of such
	// a float is implementation-dependent (on amd64, the most negative
	// Duration: no wait at all).
	j := float64(d) * (0.8 + 0.4*rnd)
	if j >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(j)
}
