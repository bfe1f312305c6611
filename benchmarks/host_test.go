package benchmarks

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ask sends a GET numbered id through rt under deadline and returns the
// answer's status and header, or the error.
func ask(rt http.RoundTripper, id int64, deadline time.Duration) (int, http.Header, error) {
	ctx, cancel := context.WithTimeout(WithRequestID(context.Background(), id), deadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, TargetURL, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, nil, err
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header, nil
}

// offer sends n GETs through rt, the i-th at i*every from now, each under
// deadline, and waits for them all.
func offer(rt http.RoundTripper, n int, every, deadline time.Duration) {
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * every)))
		wg.Go(func() { ask(rt, int64(i), deadline) })
	}
	wg.Wait()
}

// answeredIn counts the attempts answered in [from, to) with status.
func answeredIn(attempts []Attempt, from, to time.Duration, status int) int {
	n := 0
	for _, a := range attempts {
		if a.Status == status && a.Answered >= from && a.Answered < to {
			n++
		}
	}
	return n
}

// A bucket of 100 per second admits its burst and then 100 per second,
// whatever the rate offered, and answers every attempt after HostLatency.
func TestBucketHostAdmitsItsRate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		burst float64
		every time.Duration
	}{
		{"twice the rate, burst 20", 20, 5 * time.Millisecond},
		{"twice the rate, burst 100", 100, 5 * time.Millisecond},
		{"ten times the rate, burst 1", 1, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := NewBucketHost(100, tc.burst, SignalBare)
				n := int(5 * time.Second / tc.every)
				offer(h, n, tc.every, time.Minute)
				seen := h.Attempts()
				require.Len(t, seen, n)
				ok := answeredIn(seen, 0, time.Minute, 200)
				// Tokens come at 100 per second over the 5 s of arrivals,
				// less the last interval, beside the full bucket.
				want := tc.burst + 100*(5*time.Second-tc.every).Seconds()
				assert.InDelta(t, want, ok, 1, "attempts answered 200")
				assert.Equal(t, n-ok, answeredIn(seen, 0, time.Minute, 429), "the others answered 429")
				for _, a := range seen {
					assert.Equal(t, HostLatency, a.Latency(), "latency of arrival %v", a.Arrived)
				}
			})
		})
	}
}

// Each signal says what the design's scenarios say: Retry-After: 1 on a
// 429, the RateLimit fields on every answer, or nothing. The bucket holds
// 2 tokens and gains 1 per second, so that the three requests, 10 ms
// apart, leave it 1 token, then next to none, then are refused.
func TestBucketHostSignals(t *testing.T) {
	policy := `"default";q=1;w=1`
	for _, tc := range []struct {
		signal Signal
		want   [3]http.Header
	}{
		{SignalRetryAfter, [3]http.Header{{}, {}, {"Retry-After": {"1"}}}},
		{SignalBare, [3]http.Header{{}, {}, {}}},
		{SignalRateLimit, [3]http.Header{
			{"Ratelimit-Policy": {policy}, "Ratelimit": {`"default";r=1;t=1`}},
			{"Ratelimit-Policy": {policy}, "Ratelimit": {`"default";r=0;t=2`}},
			{"Ratelimit-Policy": {policy}, "Ratelimit": {`"default";r=0;t=2`}},
		}},
	} {
		t.Run(tc.signal.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := NewBucketHost(1, 2, tc.signal)
				for i, want := range tc.want {
					status, header, err := ask(h, int64(i), time.Second)
					require.NoError(t, err)
					assert.Equal(t, []int{200, 200, 429}[i], status, "answer %d", i)
					assert.Equal(t, want, header, "answer %d", i)
				}
			})
		})
	}
}

// The bucket refills while nothing comes: a second later, the fields say
// the quota is back.
func TestBucketHostRefills(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := NewBucketHost(100, 100, SignalRateLimit)
		offer(h, 100, 0, time.Second)
		_, header, err := ask(h, 100, time.Second)
		require.NoError(t, err)
		assert.Equal(t, `"default";r=0;t=1`, header.Get("RateLimit"), "spent")
		time.Sleep(time.Second)
		status, header, err := ask(h, 101, time.Second)
		require.NoError(t, err)
		assert.Equal(t, 200, status)
		assert.Equal(t, `"default";r=99;t=1`, header.Get("RateLimit"), "full again, then one taken")
	})
}

// Workers serve one attempt each at a time, in the order of arrival:
// 8 workers at 10 ms serve 800 per second, and a loss of 4 of them from
// 1 s to 2 s halves that, the attempts they had started being finished.
func TestWorkerHostServesItsCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := NewWorkerHost(8, 10*time.Millisecond, Loss{Workers: 4, From: time.Second, To: 2 * time.Second})
		offer(h, 3000, 0, time.Minute)
		seen := h.Attempts()
		require.Len(t, seen, 3000)
		// Each worker answers every 10 ms from 10 ms on; the lost ones
		// finish at 1 s what they started at 990 ms, then start again
		// at 2 s.
		assert.Equal(t, 8*99, answeredIn(seen, 0, time.Second, 200), "answered in [0 s, 1 s)")
		assert.Equal(t, 4*100+4, answeredIn(seen, time.Second, 2*time.Second, 200), "answered in [1 s, 2 s)")
		assert.Equal(t, 4*100+4*99, answeredIn(seen, 2*time.Second, 3*time.Second, 200), "answered in [2 s, 3 s)")
		for i := 1; i < len(seen); i++ {
			assert.GreaterOrEqual(t, seen[i].Answered, seen[i-1].Answered, "first come, first served: attempt %d", i)
		}
	})
}

// An attempt whose caller gave up still takes its worker for its whole
// service time: the next attempt waits behind it.
func TestWorkerHostServesAbandonedAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := NewWorkerHost(1, 10*time.Millisecond, Loss{})
		var wg sync.WaitGroup
		wg.Go(func() {
			_, _, err := ask(h, 0, 5*time.Millisecond)
			assert.ErrorIs(t, err, context.DeadlineExceeded, "the caller gave up")
		})
		time.Sleep(time.Millisecond)
		start := time.Now()
		status, _, err := ask(h, 1, time.Second)
		require.NoError(t, err)
		assert.Equal(t, 200, status)
		assert.Equal(t, 19*time.Millisecond, time.Since(start), "behind the abandoned attempt's 10 ms")
		wg.Wait()
		seen := h.Attempts()
		require.Len(t, seen, 2)
		assert.Equal(t, Attempt{Request: 0, Arrived: 0, Answered: 10 * time.Millisecond, Status: 200}, seen[0])
		assert.Equal(t, Attempt{Request: 1, Arrived: time.Millisecond, Answered: 20 * time.Millisecond, Status: 200}, seen[1])
	})
}

// The tail is drawn per arrival from the seed: the same seed gives the
// same latencies, and about 2% of them are the slow ones.
func TestTailHostDrawsItsTail(t *testing.T) {
	latencies := func() []time.Duration {
		var out []time.Duration
		synctest.Test(t, func(t *testing.T) {
			h := NewTailHost(42)
			offer(h, 5000, time.Millisecond, time.Second)
			for _, a := range h.Attempts() {
				require.Equal(t, 200, a.Status)
				out = append(out, a.Latency())
			}
		})
		return out
	}
	first := latencies()
	assert.Equal(t, first, latencies(), "same seed, same draws")
	slow := 0
	for _, d := range first {
		require.Contains(t, []time.Duration{TailFast, TailSlow}, d)
		if d == TailSlow {
			slow++
		}
	}
	assert.InDelta(t, TailSlowRate*5000, slow, 30, "slow answers")
}

// The outage host answers 503 within its outage only.
func TestOutageHostFailsInItsOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := NewOutageHost(time.Second, 2*time.Second)
		offer(h, 30, 100*time.Millisecond, time.Second)
		for _, a := range h.Attempts() {
			want := 200
			if a.Arrived >= time.Second && a.Arrived < 2*time.Second {
				want = 503
			}
			assert.Equal(t, want, a.Status, "arrived at %v", a.Arrived)
			assert.Equal(t, HostLatency, a.Latency())
		}
	})
}

// An attempt without a request number is recorded as -1.
func TestHostRecordsRequestNumbers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := NewOutageHost(0, 0)
		_, _, err := ask(h, 7, time.Second)
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodGet, TargetURL, nil)
		require.NoError(t, err)
		resp, err := h.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		seen := h.Attempts()
		require.Len(t, seen, 2)
		assert.Equal(t, int64(7), seen[0].Request)
		assert.Equal(t, int64(-1), seen[1].Request)
	})
}
