package retryhttp_test

import (
	"testing"

	"go.uber.org/goleak"
)

func goleakIgnore() goleak.Option { return goleak.IgnoreCurrent() }

func assertNoLeak(t *testing.T, before goleak.Option) {
	t.Helper()
	if err := goleak.Find(before); err != nil {
		t.Errorf("goroutines outlive the request: %v", err)
	}
}
