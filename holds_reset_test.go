package retryhttp_test

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/internal/memfleet"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// ResetBackoff ends the fleet's holds on the host too, for the Transport
// it is called on: the holds the fleet knew of then, its own answer's
// included. A hold the fleet learns of later, ending later, counts again.
func TestResetBackoffEndsTheFleetsHolds(t *testing.T) {
	for _, host := range []string{"", "API.test"} {
		t.Run("ResetBackoff("+host+")", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
					switch req.URL.Path {
					case "/limit":
						return rt.Step{Status: 429, Header: http.Header{"Retry-After": {"30"}}}
					case "/limit-again":
						return rt.Step{Status: 429, Header: http.Header{"Retry-After": {"40"}}}
					}
					return rt.Step{}
				}}
				fleet := memfleet.New()
				tr := &retryhttp.Transport{Base: srv, Fleet: fleet}
				other := &retryhttp.Transport{Base: srv, Fleet: fleet}
				_, err := getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/limit", 0)
				require.NoError(t, err)
				_, err = getWithin(t, tr, t.Context(), "/x", time.Second)
				require.ErrorIs(t, err, retryhttp.ErrHeld, "held by its own hold and the fleet's")
				_, err = getWithin(t, other, t.Context(), "/x", time.Second)
				require.ErrorIs(t, err, retryhttp.ErrHeld, "the fleet holds the other member")

				tr.ResetBackoff(host)
				asked := time.Now()
				status, err := getWithin(t, tr, t.Context(), "/x", time.Second)
				require.NoError(t, err, "the fleet's hold is over for the Transport reset")
				assert.Equal(t, 200, status)
				assert.Equal(t, asked, time.Now(), "at once")
				_, err = getWithin(t, other, t.Context(), "/x", time.Second)
				assert.ErrorIs(t, err, retryhttp.ErrHeld, "another member's reset is its own")

				_, err = getWithin(t, other, retryhttp.WithoutRetries(t.Context()), "/limit-again", 0)
				require.NoError(t, err)
				_, err = getWithin(t, tr, t.Context(), "/x", time.Second)
				assert.ErrorIs(t, err, retryhttp.ErrHeld, "a hold set after the reset counts")
			})
		})
	}
}

// ResetBackoff ends the waits of the requests held back by the host's
// hold or pace, or by its concurrency limit: they go at once, without
// waiting out the hold or the slot they waited for. Their waits count as
// long as they lasted, in Stats and in each request's RetryDelay.
func TestResetBackoffWakesTheWaiters(t *testing.T) {
	hedging := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
		Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: time.Hour}}}, Hold: &policy.Hold{}}
	tests := []struct {
		name string
		cfg  *policy.Config
		// hold makes the host hold back the next requests, through tr,
		// and returns how many are sent from then on and wait.
		hold func(t *testing.T, tr *retryhttp.Transport) int
		// counted is the wait time their waits count in.
		counted func(retryhttp.Counters) time.Duration
	}{
		{"a hold", nil, holdFor30s, holdWaitTime},
		{"a hold, hedged", hedging, holdFor30s, holdWaitTime},
		{"a pace", nil, func(t *testing.T, tr *retryhttp.Transport) int {
			pacedBy429(t, tr, "/x", "/throttle") // at 0.7/s: a slot every 1.4 s
			return 3                             // one goes, two wait for a slot
		}, func(c retryhttp.Counters) time.Duration { return c.PaceWaitTime }},
		{"a concurrency limit", admission(), func(t *testing.T, tr *retryhttp.Transport) int {
			var wg sync.WaitGroup
			for range 40 {
				wg.Go(func() {
					for range 10 {
						burst(t, tr, "/throttle", 1, 0)
						time.Sleep(150 * time.Millisecond)
					}
				})
			}
			wg.Wait()
			limit := tr.Stats().Hosts["api.test"].ConcurrencyLimit
			require.Less(t, limit, 50, "lost work cut the limit")
			return limit + 1 // the limit fills, one waits in line
		}, func(c retryhttp.Counters) time.Duration { return c.AdmissionWaitTime }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var start time.Time
				var sent []time.Duration // of /w, counted from start
				srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
					switch req.URL.Path {
					case "/limit":
						return rt.Step{Status: 429, Header: http.Header{"Retry-After": {"30"}}}
					case "/throttle":
						return rt.Step{Status: 429, Delay: time.Millisecond}
					case "/w":
						mu.Lock()
						sent = append(sent, time.Since(start))
						mu.Unlock()
						return rt.Step{Delay: 5 * time.Second} // the slots stay taken
					}
					return rt.Step{}
				}}
				var delays []time.Duration // of /w
				tr := &retryhttp.Transport{Base: srv, Policy: tt.cfg, Hooks: &retrytrace.Hooks{Done: func(d retrytrace.DoneInfo) {
					if d.Request.URL.Path == "/w" {
						mu.Lock()
						delays = append(delays, d.RetryDelay)
						mu.Unlock()
					}
				}}}
				n := tt.hold(t, tr)
				counted := tt.counted(tr.Stats().Total)
				start = time.Now()
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() {
						status, err := getWithin(t, tr, t.Context(), "/w", 0)
						if assert.NoError(t, err) {
							assert.Equal(t, 200, status)
						}
					})
				}
				time.Sleep(100 * time.Millisecond) // virtual time: the requests wait
				mu.Lock()
				waiting := n - len(sent)
				mu.Unlock()
				require.Positive(t, waiting, "some requests wait")
				tr.ResetBackoff("api.test")
				wg.Wait()
				mu.Lock()
				defer mu.Unlock()
				require.Len(t, sent, n)
				for _, at := range sent[n-waiting:] {
					assert.Equal(t, 100*time.Millisecond, at, "a request that waited goes at the reset")
				}
				assert.Equal(t, time.Duration(waiting)*100*time.Millisecond, tt.counted(tr.Stats().Total)-counted,
					"each wait counts as long as it lasted")
				slices.Sort(delays)
				want := make([]time.Duration, n)
				for i := n - waiting; i < n; i++ {
					want[i] = 100 * time.Millisecond
				}
				assert.Equal(t, want, delays, "the requests' retry delays")
			})
		})
	}
}

// holdFor30s holds the host for 30 s, through tr: every request sent
// then waits.
func holdFor30s(t *testing.T, tr *retryhttp.Transport) int {
	_, err := getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/limit", 0)
	require.NoError(t, err)
	return 2
}

func holdWaitTime(c retryhttp.Counters) time.Duration { return c.HoldWaitTime }

// admission is policy.Default with a concurrency limit of 50, a wait in
// line of up to a second, and neither pace nor holds: the limit alone.
func admission() *policy.Config {
	cfg := policy.Default()
	cfg.Admission = &policy.Admission{MaxConcurrency: 50, MaxWait: time.Second}
	cfg.Pace = &policy.Pace{Off: true}
	cfg.Hold = &policy.Hold{Off: true}
	return cfg
}
