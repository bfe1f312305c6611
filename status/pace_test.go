package status_test

import (
	"context"
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

// The page shows, per host, the pace's rate, the concurrency limit and
// the attempts in flight under it, and the requests each refused, with
// the figures Stats has: paced.test throttled at a request a second and
// refusing what its pace cannot send in time, admit.test with its one
// slot taken and shedding the next request.
func TestShowsPaceAndAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			switch {
			case req.URL.Path == "/limit":
				return rt.Step{Status: 429}
			case req.URL.Host == "admit.test":
				return rt.Step{Delay: time.Minute}
			}
			return rt.Step{}
		}}
		cfg := policy.Default()
		cfg.Admission = &policy.Admission{MaxConcurrency: 1, MaxWait: -1}
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		get := func(url string, d time.Duration) error {
			ctx, cancel := context.WithTimeout(retryhttp.WithoutRetries(t.Context()), d)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				readAll(t, resp)
			}
			return err
		}
		for range 5 { // a request a second, then a 429: paced at 0.7/s
			require.NoError(t, get("https://paced.test/x", time.Second))
			time.Sleep(time.Second)
		}
		require.NoError(t, get("https://paced.test/limit", time.Second))
		// One after another: sent together, one would take the host's
		// one concurrency slot and another be shed rather than paced.
		paced := 0
		for range 3 {
			if err := get("https://paced.test/x", time.Second); err != nil {
				require.ErrorIs(t, err, retryhttp.ErrPaced)
				paced++
			}
		}
		require.Equal(t, 2, paced, "a slot each 1.4 s: two of three refused")

		var wg sync.WaitGroup
		wg.Go(func() { _ = get("https://admit.test/x", 2*time.Minute) })
		synctest.Wait() // its one slot taken
		require.ErrorIs(t, get("https://admit.test/x", time.Second), retryhttp.ErrShed)

		st := tr.Stats()
		p := pageOf(t, tr)
		hosts := map[string]hostJSON{}
		for _, h := range p.Hosts {
			hosts[h.Host] = h
		}
		require.Contains(t, hosts, "paced.test")
		require.Contains(t, hosts, "admit.test")
		pacedHost, admitHost := hosts["paced.test"], hosts["admit.test"]
		require.Positive(t, st.Hosts["paced.test"].PaceRate)
		assert.InDelta(t, st.Hosts["paced.test"].PaceRate, pacedHost.PaceRate, 0.001, "the pace's rate")
		assert.Equal(t, uint64(2), pacedHost.PaceRefusals)
		assert.Zero(t, admitHost.PaceRate, "admit.test is not paced")
		assert.Equal(t, 1, admitHost.ConcurrencyLimit)
		assert.Equal(t, 1, admitHost.InFlight)
		assert.Equal(t, uint64(1), admitHost.Shed)
		assert.Equal(t, uint64(2), p.Total.PaceRefusals)
		assert.Equal(t, uint64(1), p.Total.Shed)

		html := htmlOf(t, tr)
		for _, want := range []string{"paced", "/s", "<b>1</b> of 1 in flight", "2 pace", "1 shed", "not paced"} {
			assert.Contains(t, html, want)
		}
		wg.Wait() // the slow request ends, a minute on
	})
}
