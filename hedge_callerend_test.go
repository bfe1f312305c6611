package retryhttp_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// A caller that gives up on three hedged attempts in flight cuts all
// three off: each is counted in HedgesCancelled, and none as a failed
// extra attempt, whichever of them the loop hears of before the
// caller's end (it used to count one or two as failed, as the scheduler
// had it).
func TestACallersEndCancelsEveryHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 10 * time.Millisecond}}}}
		tr := &retryhttp.Transport{Policy: cfg, Base: &rt.Server{Choose: func(int, *http.Request) rt.Step {
			return rt.Step{Fault: rt.Hang}
		}}}
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", "https://a.test/", nil)
		require.NoError(t, err)
		_, err = tr.RoundTrip(req)
		require.Error(t, err)
		st := tr.Stats().Total
		t.Logf("hedges %d cancelled %d extra failed %d", st.Hedges, st.HedgesCancelled, st.ExtraAttemptsFailed)
		assert.Equal(t, uint64(2), st.Hedges)
		assert.Equal(t, uint64(3), st.HedgesCancelled, "attempts cut off by the caller's end")
		assert.Zero(t, st.ExtraAttemptsFailed, "hedges cut off by the caller did not fail")
	})
}
