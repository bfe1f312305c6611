package dial

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/policy"
)

// scripted is an outcome for a fakeNet whose dials hang until their
// timeout on the calls (0-based) listed in hangs, and are refused at once
// otherwise. Dials must not overlap.
func scripted(hangs ...int) func(context.Context) error {
	n := 0
	return func(ctx context.Context) error {
		i := n
		n++
		for _, h := range hangs {
			if h == i {
				return hang(ctx)
			}
		}
		return errDialRefused
	}
}

// redial dials addr over tcp as a reconnect loop does, again at once after
// a failure and after the remaining window when refused, until n dials
// have reached the network, and returns the times they started, counted
// from its own start.
func redial(t *testing.T, d *Dialer, f *fakeNet, addr string, n int) []time.Duration {
	t.Helper()
	start, before := time.Now(), f.count()
	for f.count() < before+n {
		err := try(t.Context(), d, "tcp", addr)
		require.Error(t, err, "no dial may succeed here")
		var be *BackoffError
		if errors.As(err, &be) {
			require.Positive(t, be.Remaining)
			time.Sleep(be.Remaining)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var at []time.Duration
	for _, c := range f.calls[before:] {
		at = append(at, c.Sub(start))
	}
	return at
}

// seconds turns whole seconds into durations, for tables of schedules.
func seconds(s ...int) []time.Duration {
	d := make([]time.Duration, len(s))
	for i, v := range s {
		d[i] = time.Duration(v) * time.Second
	}
	return d
}

func TestDialStubbySchedule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		algorithm Algorithm
		backoff   policy.Backoff
		min       time.Duration
		hangs     []int // attempts (0-based) that hang until their timeout
		want      []time.Duration
	}{
		// Waits 1, 2, 4, ..., 64, then 120 s, each from the end of a
		// failure, which here is its start.
		{"refused at once", Stubby, nil, 0, nil,
			seconds(0, 1, 3, 7, 15, 31, 63, 127, 247, 367)},
		// Attempt 2 starts at 3 s and is cut at 23 s: the next waits
		// 4 s from then. Attempt 7 starts at 147 s with a backoff of
		// 120 s and still gets only the 20 s MinConnectTimeout.
		{"hangs until MinConnectTimeout", Stubby, nil, 0, []int{2, 7},
			seconds(0, 1, 3, 27, 35, 51, 83, 147, 287, 407)},
		{"MinConnectTimeout set", Stubby, nil, 5 * time.Second, []int{2, 7},
			seconds(0, 1, 3, 12, 20, 36, 68, 132, 257, 377)},
		// Backoff drives the waits: 2 s, then 5 s, each from the end.
		{"Backoff set", Stubby, policy.Exponential{Initial: 2 * time.Second, Max: 5 * time.Second, Multiplier: 3},
			0, []int{1}, seconds(0, 2, 27, 32, 37)},
		// The default algorithm with the same waits, for contrast: the
		// window runs from the start, and the attempt cut at 20 s (its
		// backoff is shorter) leaves none, so the next goes at once.
		{"GRPC", GRPC, policy.Exponential{Initial: time.Second, Max: 120 * time.Second, Multiplier: 2},
			0, []int{2}, seconds(0, 1, 3, 23, 31, 47)},
		{"unknown value", Algorithm(7), policy.Exponential{Initial: time.Second, Max: 120 * time.Second, Multiplier: 2},
			0, []int{2}, seconds(0, 1, 3, 23, 31, 47)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeNet{outcome: scripted(tt.hangs...)}
				d := &Dialer{Dial: f.dial, Algorithm: tt.algorithm, Backoff: tt.backoff, MinConnectTimeout: tt.min}
				assert.Equal(t, tt.want, redial(t, d, f, "db:5432", len(tt.want)))
			})
		})
	}
}

func TestDialStubbyWindowFromEnd(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		d, f := newDialer(hang, nil)
		d.Algorithm = Stubby
		start := time.Now()
		assert.ErrorIs(t, try(t.Context(), d, "tcp", "db:5432"), context.DeadlineExceeded)
		require.Equal(t, DefaultMinConnectTimeout, time.Since(start))
		// Refused with the whole first wait left, the end of the cut
		// attempt being now.
		require.Equal(t, time.Second, window(t, d, f, "db:5432"))
		time.Sleep(time.Second - time.Nanosecond)
		assert.Equal(t, time.Nanosecond, window(t, d, f, "db:5432"))
	})
}

func TestDialStubbyResets(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		d, f := newDialer(refuse, nil)
		d.Algorithm = Stubby
		assert.Equal(t, seconds(0, 1, 3), redial(t, d, f, "db:5432", 3))
		require.Equal(t, 4*time.Second, window(t, d, f, "db:5432"))

		// A connection starts the schedule again.
		time.Sleep(4 * time.Second)
		f.set(accept)
		require.NoError(t, try(t.Context(), d, "tcp", "db:5432"))
		f.set(refuse)
		assert.Equal(t, seconds(0, 1, 3, 7), redial(t, d, f, "db:5432", 4))
		require.Equal(t, 8*time.Second, window(t, d, f, "db:5432"))

		// So does Reset, at once.
		d.ResetBackoff("db:5432")
		assert.Equal(t, seconds(0, 1, 3), redial(t, d, f, "db:5432", 3))

		// A failure that ends after a Reset is stale, however late.
		time.Sleep(window(t, d, f, "db:5432"))
		f.set(hang)
		done := make(chan error)
		go func() { done <- try(t.Context(), d, "tcp", "db:5432") }()
		synctest.Wait()
		d.ResetBackoff("db:5432")
		assert.ErrorIs(t, <-done, context.DeadlineExceeded)
		f.set(refuse)
		assert.Equal(t, seconds(0, 1), redial(t, d, f, "db:5432", 2))

		// An attempt the caller ends counts neither way.
		d.ResetBackoff("db:5432")
		f.set(hang)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		assert.ErrorIs(t, try(ctx, d, "tcp", "db:5432"), context.DeadlineExceeded)
		assert.False(t, d.backingOff("tcp", "db:5432"))
	})
}

func TestDialStubbyRound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		outcomes := make(chan error)
		d, f := newDialer(dialGate(outcomes), nil)
		d.Algorithm = Stubby
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { try(t.Context(), d, "tcp", "h:1") })
			synctest.Wait()
			time.Sleep(500 * time.Millisecond)
		}
		require.Equal(t, 2, f.count(), "dials in flight do not hold each other back")
		time.Sleep(time.Second)
		outcomes <- errDialRefused // one ends at 2 s
		synctest.Wait()
		time.Sleep(time.Second)
		outcomes <- errDialRefused // the other at 3 s
		wg.Wait()
		// One round: the window lasts until the later end + 1 s, and
		// the next wait is one step on (2 s), not two (4 s).
		require.Equal(t, time.Second, window(t, d, f, "h:1"))
		time.Sleep(time.Second)
		f.set(refuse)
		assert.Equal(t, seconds(0, 2), redial(t, d, f, "h:1", 2))
	})
}
