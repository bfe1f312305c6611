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

// Hedges hold a slot under the concurrency limit as first attempts do: a
// hedged request under a limit of 1 sends its first attempt, and its
// hedges wait in line for the slot, which comes back only when the
// request is answered, so the host is sent one attempt, not three. (With
// two requests, one's answer may free its slot for the other's waiting
// hedge in the instant before the other's own answer is taken.)
func TestAdmissionCountsHedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step { return rt.Step{Delay: time.Second} }}
		cfg := policy.Default()
		cfg.Rules = []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 10 * time.Millisecond}}}
		cfg.Admission = &policy.Admission{MaxConcurrency: 1, MaxWait: 10 * time.Second}
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		synctest.Wait()
		assert.Equal(t, 1, srv.Count(), "the hedges found no slot")
		hs := tr.Stats().Hosts["api.test"]
		assert.Positive(t, hs.AdmissionWaits, "the hedges waited in line")
		assert.Zero(t, hs.InFlight, "every slot came back")
	})
}

// A limit lowered by SetPolicy below the attempts in flight holds new
// attempts back until the in-flight count is under the new limit, then
// lets them go at most that many at once.
func TestAdmissionLoweredBelowTheAttemptsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step { return rt.Step{Delay: 500 * time.Millisecond} }}
		tr := admitting(srv, 10, 10*time.Second)
		var wg sync.WaitGroup
		wg.Go(func() { burst(t, tr, "/x", 10, 0) })
		synctest.Wait()
		require.Equal(t, 10, tr.Stats().Hosts["api.test"].InFlight)

		cfg := policy.Default()
		cfg.Admission = &policy.Admission{MaxConcurrency: 3, MaxWait: 10 * time.Second}
		require.NoError(t, tr.SetPolicy(cfg))
		for _, err := range burst(t, tr, "/x", 6, 0) {
			require.NoError(t, err)
		}
		wg.Wait()
		at := arrivals(srv)[10:]
		require.Len(t, at, 6)
		assert.Equal(t, []time.Duration{
			500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond,
			time.Second, time.Second, time.Second,
		}, at, "none while ten are in flight, then three at a time")
		assert.Zero(t, tr.Stats().Hosts["api.test"].InFlight)
	})
}
