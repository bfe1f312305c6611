package redisfleet

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneUnusableKeyDoesNotSlowTheOthers has the store refuse, for good,
// the commands of one host (its budget key holds a string, WRONGTYPE)
// while it answers every other host's. The others' work is taken round
// after round, so their holds go as the interval allows, within 200 ms,
// not behind the backoff of a store that fails; the bad host's batches
// are dropped, and counted so, not sent again and again.
func TestOneUnusableKeyDoesNotSlowTheOthers(t *testing.T) {
	m := miniredis.RunT(t)
	require.NoError(t, m.Set(DefaultPrefix+budgetKeyPart+"bad", "not a hash"))
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	f := newFleet(c, Options{})
	fail := retryhttp.FleetReport{Rule: "r", Budget: retryhttp.FleetFailure, Throttle: throttle}

	s := schedule{interval: f.opts.FlushInterval}
	var b batch
	now := time.Now()
	for range 6 {
		f.Report("bad", fail)
		f.Report("good", fail)
		s.work(now, true)
		now = s.due
		s.start(now)
		ok, what := f.flush(&b)
		s.end(ok, what, 0.5)
	}
	assert.Equal(t, "94000", m.HGet(DefaultPrefix+budgetKeyPart+"good", "level"), "the good host's failures taken")

	f.Report("good", retryhttp.FleetReport{Rule: "r", HoldUntil: time.Now().Add(time.Minute), HoldStatus: 429})
	s.work(now, true)
	assert.LessOrEqual(t, s.due.Sub(now), 200*time.Millisecond,
		"got the good host's hold due %v after the last round trip, behind one key the store refuses", s.due.Sub(now))
	st := f.Stats()
	assert.Positive(t, st.StoreRefusals)
	assert.Equal(t, uint64(6), st.Dropped, "each of the bad host's six batches, rejected, dropped once")
}
