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

// Google's APIs ask their clients to wait 2^n seconds plus up to one more
// before retry n, and to give up after five retries: one Retry.
func ExampleRetry_Schedule() {
	rule := &policy.Rule{Retry: &policy.Retry{
		MaxAttempts:          6,
		Backoff:              policy.GoogleAPI{},
		RetryableStatusCodes: []int{500, 503},
	}}
	fmt.Println("valid:", rule.Validate() == nil)
	b := rule.Retry.Schedule()
	for n := range rule.Retry.MaxAttempts - 1 {
		lo := time.Duration(1<<n) * time.Second
		d := b.Duration(n)
		fmt.Printf("retry %d: between %v and %v: %v\n", n+1, lo, lo+time.Second, lo <= d && d <= lo+time.Second)
	}
	// Output:
	// valid: true
	// retry 1: between 1s and 2s: true
	// retry 2: between 2s and 3s: true
	// retry 3: between 4s and 5s: true
	// retry 4: between 8s and 9s: true
	// retry 5: between 16s and 17s: true
}

// A Retry's zero Jitter means the default, 0.2, as a left-out "jitter"
// does in JSON; an explicit "jitter": 0 asks for none, and is read as the
// Exponential backoff that says so.
func ExampleParseConfig_noJitter() {
	cfg, err := policy.ParseConfig([]byte(`{"methodConfig": [{"name": [{}], "retryPolicy": {
		"maxAttempts": 3, "initialBackoff": "1s", "maxBackoff": "4s", "backoffMultiplier": 2, "jitter": 0}}]}`))
	if err != nil {
		panic(err)
	}
	b := cfg.Rules[0].Retry.Schedule()
	fmt.Println(b.Duration(0), b.Duration(1), b.Duration(2), b.Duration(3))
	fmt.Printf("%+v\n", cfg.Rules[0].Retry.Backoff)
	// Output:
	// 1s 2s 4s 4s
	// {Initial:1s Max:4s Multiplier:2 Jitter:0}
}
