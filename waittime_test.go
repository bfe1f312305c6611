package retryhttp_test

import (
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// A wait counts as long as it lasted, not as long as it could have: a
// wait for a probe's answer that the answer ends, a wait in line that a
// slot ends. The hooks hear of each wait as announced, the longest it may
// last.
func TestWaitTimesAreTheTimeWaited(t *testing.T) {
	tests := []struct {
		name string
		cfg  func() *policy.Config
		// first is the answer to /first, sent alone at the start, and
		// step the answer to each of the requests sent together after it.
		first, step rt.Step
		n           int
		// counted are the waits and the wait time of the kind waited
		// for, waits the waits.
		counted func(retryhttp.Counters) (uint64, time.Duration)
		waits   uint64
	}{
		{"a probe's answer ends a wait for it", policy.Default,
			rt.Step{Status: 503, Header: aYear}, rt.Step{Delay: time.Second}, 2,
			func(c retryhttp.Counters) (uint64, time.Duration) { return c.HoldWaits, c.HoldWaitTime },
			3}, // both wait for the capped hold, one for the other's answer
		{"a slot ends a wait in line", func() *policy.Config {
			cfg := policy.Default()
			cfg.Admission = &policy.Admission{MaxConcurrency: 2, MaxWait: time.Second}
			return cfg
		}, rt.Step{}, rt.Step{Delay: 10 * time.Millisecond}, 3,
			func(c retryhttp.Counters) (uint64, time.Duration) { return c.AdmissionWaits, c.AdmissionWaitTime },
			1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
					if req.URL.Path == "/first" {
						return tt.first
					}
					return tt.step
				}}
				var mu sync.Mutex
				var delays []time.Duration
				var announced time.Duration
				tr := &retryhttp.Transport{Base: srv, Policy: tt.cfg(), Hooks: &retrytrace.Hooks{
					Wait: func(w retrytrace.WaitInfo) {
						mu.Lock()
						announced += w.Delay
						mu.Unlock()
					},
					Done: func(d retrytrace.DoneInfo) {
						if d.Request.URL.Path != "/first" {
							mu.Lock()
							delays = append(delays, d.RetryDelay)
							mu.Unlock()
						}
					},
				}}
				_, err := getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/first", 0)
				require.NoError(t, err)
				var wg sync.WaitGroup
				for range tt.n {
					wg.Go(func() {
						_, err := getWithin(t, tr, t.Context(), "/x", 2*time.Hour)
						assert.NoError(t, err)
					})
				}
				wg.Wait()
				// Every request started with the first's answer, at 0, and
				// went as soon as its waits ended: it waited until it arrived.
				var waited time.Duration
				for _, at := range arrivals(srv)[1:] {
					waited += at
				}
				waits, counted := tt.counted(tr.Stats().Total)
				assert.Equal(t, tt.waits, waits)
				assert.Equal(t, waited, counted, "the time waited")
				mu.Lock()
				defer mu.Unlock()
				var delayed time.Duration
				for _, d := range delays {
					delayed += d
				}
				assert.Equal(t, waited, delayed, "the requests' retry delays")
				assert.Greater(t, announced, waited+time.Second/2, "the waits announced, each as long as it could last")
			})
		})
	}
}
