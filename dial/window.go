package dial

import (
	"errors"
	"time"

	"github.com/retryhttp/retryhttp/policy"
)

// ErrBackoff is matched by every [*BackoffError]: a dial refused
// without touching the network because its address is inside its backoff
// window.
var ErrBackoff = errors.New("retryhttp: address in dial backoff")

// BackoffError is the error of a dial refused because its address is
// inside its backoff window. errors.Is(err, [ErrBackoff]) is true for it.
type BackoffError struct {
	// Addr is the address that was dialed, as given to the Dialer.
	Addr string
	// Remaining is how long the window still lasts: a dial to Addr
	// started this much later or more goes to the network again.
	Remaining time.Duration
	// Err is the failure of the dial that set the window, so that the
	// reason a host is unreachable is not lost behind its backoff.
	Err error
}

// Error names the failure that set the window first, as the reason the
// address cannot be reached, followed by "(retryhttp: address in dial
// backoff)"; with no such failure, it names the address. It leaves out the
// time left, which Remaining gives, so that refusals of one window read
// alike, call after call.
func (e *BackoffError) Error() string {
	if e.Err == nil {
		return ErrBackoff.Error() + ": " + e.Addr
	}
	return e.Err.Error() + " (" + ErrBackoff.Error() + ")"
}

// Unwrap returns [ErrBackoff] and Err, so that errors.Is finds both
// the backoff and its cause, such as [syscall.ECONNREFUSED].
func (e *BackoffError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrBackoff}
	}
	return []error{ErrBackoff, e.Err}
}

// Algorithm chooses when a [Dialer]'s backoff window after a failed
// connection attempt starts: at the start of the attempt (GRPC, the
// zero value) or at its end (Stubby). Values other than the
// constants below are read as GRPC.
//
// With either one, the first attempt to an address goes at once, and the
// window after the address's n-th consecutive failed round (n from 0) lasts
// b = Backoff.Duration(n). Attempts that start with the same n are one
// round: however many of them fail, they move n on once, and the window
// lasts until the latest of the times their algorithm gives. A connection
// accepted, or [Dialer.ResetBackoff], ends the window and brings n back to 0; a
// failure of an attempt that started before either is ignored. An attempt
// ended by the caller's context counts neither way.
type Algorithm uint8

const (
	// GRPC is gRPC's connection backoff: after a failed attempt
	// started at s, no attempt starts before s+b, so that attempts start
	// at least b apart however long each takes to fail. A nil Backoff
	// means [policy.ConnectionBackoff]: 1 s growing by 1.6 per failure up
	// to 120 s, each ±20% so that clients that failed together spread
	// out. An attempt gets max(b, MinConnectTimeout) to connect: a long
	// backoff also bounds an attempt that hangs, and an attempt that took
	// longer than b to fail is followed at once.
	GRPC Algorithm = iota

	// Stubby is the legacy algorithm of gRPC's connection-backoff
	// design, the one Stubby used: after a failed attempt that ended at e,
	// no attempt starts before e+b, so the wait between attempts does not
	// depend on how long they take to fail. A nil Backoff means 1 s
	// doubling up to 120 s, with no jitter, the parameters gRPC's C core
	// used with it: against an address that refuses at once, attempts
	// start at 0, 1, 3, 7, 15, 31, 63 and 127 s, then every 120 s. (Stubby
	// itself grew by 1.2: policy.Exponential{Initial: time.Second, Max:
	// 120 * time.Second, Multiplier: 1.2}.) An attempt gets exactly
	// MinConnectTimeout to connect, whatever b is; one that hangs until
	// then fails at that time, and the next starts b after it.
	//
	// As nothing is jittered by default, clients that lost a server
	// together retry it together; a Backoff with jitter spreads them.
	Stubby
)

// windowEnd returns when the window opened by the failure of attempt a,
// which ended at end, closes.
func (g Algorithm) windowEnd(a dialAttempt, end time.Time) time.Time {
	if g == Stubby {
		return end.Add(a.backoff)
	}
	return a.start.Add(a.backoff)
}

// connectTimeout is the time an attempt with backoff b gets to connect,
// given the least time an attempt gets: gRPC's Max(current_deadline,
// now + MIN_CONNECT_TIMEOUT) as a duration, or the legacy algorithm's
// MIN_CONNECT_TIMEOUT alone.
func (g Algorithm) connectTimeout(b, least time.Duration) time.Duration {
	if g == Stubby {
		return least
	}
	return max(b, least)
}

// defaultBackoff is the backoff a Dialer with a nil Backoff uses.
func (g Algorithm) defaultBackoff() policy.Backoff {
	if g == Stubby {
		return policy.Exponential{Initial: time.Second, Max: 120 * time.Second, Multiplier: 2}
	}
	return policy.ConnectionBackoff()
}
