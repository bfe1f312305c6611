package redisfleet

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine outlives the tests: a Fleet's
// flusher and listener must end with Close, and the real stores the
// tests start must be stopped. go-redis's own redialer of a pool whose
// server died is let go: it sleeps a second between its tries, and sees
// its pool closed only when it wakes.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
