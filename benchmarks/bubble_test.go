package benchmarks

import (
	"testing"
	"testing/synctest"
)

// inBubble runs f in a testing/synctest bubble of its own, under a test
// or a benchmark, and returns once every goroutine f started has ended.
//
// synctest.Test needs a *testing.T, which a benchmark has not; under one,
// the bubble is opened by a test run through testing.RunTests. Its
// matcher takes any name, so that -run (as -run XXX beside -bench) does
// not leave it out; -count and -cpu make RunTests run its list again,
// which the test ignores after its first run.
func inBubble(tb testing.TB, f func()) {
	tb.Helper()
	if t, ok := tb.(*testing.T); ok {
		synctest.Test(t, func(*testing.T) { f() })
		return
	}
	ran := false
	anyName := func(string, string) (bool, error) { return true, nil }
	ok := testing.RunTests(anyName, []testing.InternalTest{{Name: "bubble", F: func(t *testing.T) {
		if ran {
			return
		}
		ran = true
		synctest.Test(t, func(*testing.T) { f() })
	}}})
	if !ok || !ran {
		tb.Fatal("the synctest bubble failed or did not run")
	}
}
