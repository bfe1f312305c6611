//go:build !race

package retryhttp_test

// raceEnabled says the tests run under the race detector.
const raceEnabled = false
