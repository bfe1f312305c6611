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

// A hedged request's first attempt never reaches the server and its
// transparent resend waits out a hold another request set. When the hold
// ends the resend goes, and the next hedge, whose delay has long passed,
// must go too: the hedging delay runs for every next attempt, up to
// maxAttempts, whatever waited in between.
func TestHedgeStillGoesAfterAHeldResend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		limit := script(rt.Step{Delay: 10 * time.Millisecond, Status: 429, Header: http.Header{"Retry-After": {"1"}}})
		main := byNumber(rt.Step{Delay: time.Hour}, rt.Step{Delay: 10 * time.Millisecond})
		gate := make(chan struct{})
		var once sync.Once
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Path == "/limit" {
				return limit.RoundTrip(req)
			}
			first := false
			once.Do(func() { first = true })
			if first {
				<-gate // never reaches the server: resent transparently
				return refuse(req)
			}
			return main.RoundTrip(req)
		})
		cfg := hedgeConfig(2, 100*time.Millisecond, 503)
		cfg.Hold = &policy.Hold{}
		tr := &retryhttp.Transport{Base: base, Policy: cfg}
		start := time.Now()
		var body string
		var took time.Duration
		var wg sync.WaitGroup
		wg.Go(func() {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			if assert.NoError(t, err) {
				body = readAll(t, resp)
			}
			took = time.Since(start)
		})
		synctest.Wait()
		status, err := getWithin(t, tr, t.Context(), "/limit", 0)
		require.NoError(t, err)
		require.Equal(t, 429, status, "the host is held for a second")
		close(gate)
		wg.Wait()
		assert.Equal(t, "attempt 2", body, "the hedge after the held resend")
		assert.Less(t, took, 5*time.Second, "the request waited for its slow first attempt alone")
	})
}
