package redisfleet

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine outlives the tests: a Fleet's
// flusher and listener must end with Close, and the real stores the
// tests start must be stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
