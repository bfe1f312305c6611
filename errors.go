package retryhttp

import (
	"context"
	"errors"
	"fmt"
)

// ErrNoResponse is matched by every [*Error]: a request that obtained no
// response, after all the attempts its policy allowed, or none sent at
// all (a hold refused it, say).
var ErrNoResponse = errors.New("retryhttp: no response")

// Error is returned by [Transport.RoundTrip] when no response was obtained.
// It carries the number of attempts sent and wraps the last cause, so that
// errors.Is(err, context.DeadlineExceeded), errors.As(err, *net.OpError)
// and the like see through it.
type Error struct {
	// Attempts is the number of attempts sent, transparent retries not
	// counted.
	Attempts int
	// Err is the last attempt's error; the cause of the caller's
	// context when that ended the request; Prepare's error when that
	// did; or, for a request refused before anything was sent, what
	// refused it (a [*HoldError], or an error matching [ErrPaced] or
	// [ErrShed]).
	Err error
}

// Error implements error: "retryhttp: no response after 3 attempt(s): "
// and the cause, or, for a request not sent at all (a hold, the pace or
// the concurrency limit refused it, or Prepare failed on its first
// attempt, or the caller's context had ended before the first was sent),
// "retryhttp: not sent: " and the cause.
func (e *Error) Error() string {
	if e.Attempts == 0 {
		return fmt.Sprintf("retryhttp: not sent: %v", e.Err)
	}
	return fmt.Sprintf("retryhttp: no response after %d attempt(s): %v", e.Attempts, e.Err)
}

// Unwrap returns the last cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is [ErrNoResponse].
func (e *Error) Is(target error) bool { return target == ErrNoResponse }

// Timeout reports whether the last cause was a timeout, as [net.Error]
// does, so that http.Client and callers that test for timeouts keep
// working.
func (e *Error) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.Err, &t) && t.Timeout()
}

// fail builds the error for a request that got no response, err being
// the last attempt's error.
func (c *call) fail(err error) error {
	if cerr := c.body.callerErr(); cerr != nil {
		err = cerr
	} else if cause := context.Cause(c.ctx); cause != nil {
		err = cause
	}
	return &Error{Attempts: c.tried, Err: err}
}
