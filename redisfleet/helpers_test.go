package redisfleet_test

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/require"
)

// throttle is policy.Default's: 100 tokens, 0.25 a success. Its bucket
// is spent at 50 tokens or less.
var throttle = &policy.Throttle{MaxTokens: 100, TokenRatio: 0.25}

// Reports of one attempt, as the Transport makes them.
var (
	failure = retryhttp.FleetReport{Rule: "methodConfig[0]", Budget: retryhttp.FleetFailure, Throttle: throttle}
	success = retryhttp.FleetReport{Rule: "methodConfig[0]", Budget: retryhttp.FleetSuccess, Throttle: throttle}
)

// heldUntil returns a report of a 429 that holds rule on its host until end.
func heldUntil(rule string, end time.Time) retryhttp.FleetReport {
	return retryhttp.FleetReport{Rule: rule, Budget: retryhttp.FleetFailure, Throttle: throttle, HoldUntil: end, HoldStatus: 429}
}

// eventually is the bound on waits for the background work: generous,
// since the tests share two cores with others; what they wait for
// happens within a few FlushIntervals on an idle machine.
const eventually = 10 * time.Second

// poll is how often a wait checks.
const poll = 5 * time.Millisecond

// newMember returns a Fleet over its own client of addr, both closed at
// the end of the test.
func newMember(t testing.TB, addr string, opts redisfleet.Options) *redisfleet.Fleet {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	f := redisfleet.New(c, opts)
	t.Cleanup(func() {
		require.NoError(t, f.Close())
		_ = c.Close()
	})
	return f
}

// miniStore starts a miniredis closed at the end of the test.
func miniStore(t *testing.T) *miniredis.Miniredis {
	t.Helper()
	return miniredis.RunT(t)
}

// waitFor waits until cond holds, failing the test past eventually with
// what it waited for and what each of seen says it saw.
func waitFor(t testing.TB, what string, cond func() bool, seen ...func() string) {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for !cond() {
		if time.Now().After(deadline) {
			for _, s := range seen {
				what += "; " + s()
			}
			t.Fatalf("waited %v for %s", eventually, what)
		}
		time.Sleep(poll)
	}
}
