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
)

// admitting returns a Transport over srv with admission, its limit at
// most max, an attempt past it waiting up to wait.
func admitting(srv http.RoundTripper, max int, wait time.Duration) *retryhttp.Transport {
	cfg := policy.Default()
	cfg.Admission = &policy.Admission{MaxConcurrency: max, MaxWait: wait}
	return &retryhttp.Transport{Base: srv, Policy: cfg}
}

// Attempts past the limit wait in line for a slot, and go when one comes
// back; one that cannot get one within maxWait fails at once when its
// wait is over, nothing sent, with ErrShed.
func TestAdmissionLimitsConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step { return rt.Step{Delay: 500 * time.Millisecond} }}
		tr := admitting(srv, 2, time.Second)
		start := time.Now()
		errs := burst(t, tr, "/x", 3, 0)
		for _, err := range errs {
			require.NoError(t, err)
		}
		at := arrivals(srv)
		assert.Equal(t, []time.Duration{0, 0, 500 * time.Millisecond}, at, "the third waits for a slot")
		assert.Equal(t, time.Second, time.Since(start))
		total := tr.Stats().Total
		assert.Equal(t, uint64(1), total.AdmissionWaits)
		assert.Equal(t, 500*time.Millisecond, total.AdmissionWaitTime, "the time it waited, until a slot came back")

		shedding := admitting(srv, 1, 100*time.Millisecond)
		errs = burst(t, shedding, "/x", 2, 0)
		var shed int
		for _, err := range errs {
			if err != nil {
				shed++
				require.ErrorIs(t, err, retryhttp.ErrShed)
				var e *retryhttp.Error
				require.ErrorAs(t, err, &e)
				assert.Zero(t, e.Attempts, "nothing sent")
				assert.Contains(t, err.Error(), "concurrency limit")
			}
		}
		assert.Equal(t, 1, shed)
		hs := shedding.Stats().Hosts["api.test"]
		assert.Equal(t, uint64(1), hs.Shed)
		assert.Equal(t, 1, hs.ConcurrencyLimit)
		assert.Zero(t, hs.InFlight, "every slot came back")
	})
}

// A host that answers fast with 429s loses work, and its limit comes
// down: a throttle gives no latency sample; ResetBackoff lifts the limit
// back to its start.
func TestAdmissionThrottlesAreLostWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
			return rt.Step{Status: 429, Delay: time.Millisecond}
		}}
		tr := admitting(srv, 50, time.Second)
		cfg := policy.Default()
		cfg.Admission = &policy.Admission{MaxConcurrency: 50, MaxWait: time.Second}
		cfg.Pace = &policy.Pace{Off: true} // the limit alone
		cfg.Hold = &policy.Hold{Off: true}
		require.NoError(t, tr.SetPolicy(cfg))
		var wg sync.WaitGroup
		for range 40 {
			wg.Go(func() {
				for range 10 {
					burst(t, tr, "/x", 1, 0)
					time.Sleep(150 * time.Millisecond)
				}
			})
		}
		wg.Wait()
		hs := tr.Stats().Hosts["api.test"]
		assert.Less(t, hs.ConcurrencyLimit, 50, "lost work cuts the limit; fast 429s never raise it")
		tr.ResetBackoff("api.test")
		assert.Equal(t, 50, tr.Stats().Hosts["api.test"].ConcurrencyLimit)
	})
}
