package retryhttptest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine outlives the tests: a handler
// left waiting, a connection left open, or a body reader left blocked is
// a leak of the attempt it served, in memory or on loopback.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
