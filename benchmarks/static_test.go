package benchmarks

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The static client keeps its schedule whatever the host says: three
// attempts 100 ms apart on a 503, each cut at 300 ms on a host too slow,
// and one on a 200.
func TestStaticKeepsItsSchedule(t *testing.T) {
	for _, tc := range []struct {
		name     string
		host     func() Host
		deadline time.Duration
		status   int
		err      error
		arrivals []time.Duration
	}{
		{"answered 200", func() Host { return NewOutageHost(0, 0) }, time.Second,
			200, nil, []time.Duration{0}},
		{"503 every time", func() Host { return NewOutageHost(0, time.Hour) }, time.Second,
			503, nil, []time.Duration{0, 110 * time.Millisecond, 220 * time.Millisecond}},
		{"too slow", func() Host { return NewWorkerHost(8, time.Minute, Loss{}) }, 10 * time.Second,
			0, context.DeadlineExceeded, []time.Duration{0, 400 * time.Millisecond, 800 * time.Millisecond}},
		{"deadline first", func() Host { return NewWorkerHost(8, time.Minute, Loss{}) }, 500 * time.Millisecond,
			0, context.DeadlineExceeded, []time.Duration{0, 400 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := tc.host()
				status, _, err := ask(static{h}, 1, tc.deadline)
				assert.Equal(t, tc.status, status)
				if tc.err != nil {
					assert.ErrorIs(t, err, tc.err)
				} else {
					require.NoError(t, err)
				}
				var arrivals []time.Duration
				for _, a := range h.Attempts() {
					assert.Equal(t, int64(1), a.Request, "every attempt carries its request")
					arrivals = append(arrivals, a.Arrived)
				}
				assert.Equal(t, tc.arrivals, arrivals)
			})
		})
	}
}

// A 429 is retried at once past its Retry-After: the static client
// reads none.
func TestStaticIgnoresRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := NewBucketHost(1, 1, SignalRetryAfter)
		_, _, err := ask(h, 0, time.Second) // spends the only token
		require.NoError(t, err)
		status, _, err := ask(static{h}, 1, 10*time.Second)
		require.NoError(t, err)
		assert.Equal(t, 429, status, "the last answer, handed back")
		seen := h.Attempts()
		require.Len(t, seen, 4)
		assert.Equal(t, 10*time.Millisecond+2*(HostLatency+StaticBackoff), seen[3].Arrived, "no wait but its own")
	})
}
