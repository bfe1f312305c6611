package policy_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/retryhttp/retryhttp/policy"
)

// A Backoff holds no state: the caller owns the attempt counter, resets it
// on success, and may cut a wait short, here with a reset channel (an
// out-of-band "the server is back") and a done channel (shutting down).
func Example_statelessReconnect() {
	// 1 ms, then 1 s: the reset below cuts the long wait, never a timer.
	backoff := policy.Exponential{Initial: time.Millisecond, Max: time.Hour, Multiplier: 1000}
	reset := make(chan struct{}, 1)
	done := make(chan struct{})

	failures := 0
	connect := func() error { // fails three times, then works
		failures++
		if failures <= 3 {
			return errors.New("connection refused")
		}
		return nil
	}

	n := 0 // the caller's counter: retries since the last success
	for attempt := 1; ; attempt++ {
		err := connect()
		if err == nil {
			fmt.Printf("attempt %d: connected, counter reset from %d\n", attempt, n)
			n = 0
			break
		}
		wait := backoff.Duration(n)
		fmt.Printf("attempt %d: %v, waiting up to %v\n", attempt, err, wait)
		n++
		if attempt == 2 {
			reset <- struct{}{} // news that the server is back
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-reset:
			timer.Stop()
			n = 0 // an out-of-band reset cuts the wait and the backoff short
		case <-done:
			timer.Stop()
			return
		}
	}
	// Output:
	// attempt 1: connection refused, waiting up to 1ms
	// attempt 2: connection refused, waiting up to 1s
	// attempt 3: connection refused, waiting up to 1ms
	// attempt 4: connected, counter reset from 1
}
