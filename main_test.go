package retryhttp_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine outlives the tests: an attempt,
// a hedge, a drain or a body reader left running is a leak of the request
// it belonged to.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
