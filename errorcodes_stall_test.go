package retryhttp_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// A retryable answer whose body stalls is let go within the drain's bound
// and retried; reading its error code must not hold the request for as
// long as the server takes to send the body. Without an error table the
// 503 below is retried after 100 ms; with one, the same.
func TestErrorCodeReadOfAStalledBodyIsBounded(t *testing.T) {
	for _, withCodes := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			stalled := rt.Step{Status: 503, Body: `{"error": {"code": "Busy"}}`, Trickle: rt.Rate{Bytes: 1, Every: time.Hour}}
			srv := script(stalled, rt.Step{Body: "ok"})
			cfg := retryConfig(2, 503)
			if withCodes {
				cfg.Rules[0].ErrorCodes = &policy.ErrorCodes{JSON: "error.code", Retryable: []string{"Busy"}}
			}
			tr := &retryhttp.Transport{Base: srv, Policy: cfg}
			start := time.Now()
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), http.MethodGet, ""))
			require.NoError(t, err)
			assert.Equal(t, "ok", readAll(t, resp))
			assert.Less(t, time.Since(start), 5*time.Second, "with an error table: %v", withCodes)
		})
	}
}

// An answer whose error code does not come within the wait is judged by
// its status, and handed back at once when that makes it final; its body
// is whole for the caller, and for a classifier that peeks at it, however
// slowly the rest of it comes.
func TestAnErrorCodeGivenUpOnLosesNoByte(t *testing.T) {
	const body = `{"error": {"code": "Busy", "message": "come back later"}}`
	synctest.Test(t, func(t *testing.T) {
		// The code would retry the 400; by its status alone it is final.
		srv := script(rt.Step{Status: 400, Body: body, Trickle: rt.Rate{Bytes: 2, Every: time.Second}}, rt.Step{Body: "ok"})
		cfg := retryConfig(2, 503)
		cfg.Rules[0].ErrorCodes = &policy.ErrorCodes{JSON: "error.code", Retryable: []string{"Busy"}}
		var peeked atomic.Value
		tr := &retryhttp.Transport{Base: srv, Policy: cfg,
			Classify: func(_ int, resp *http.Response, _ error) retryhttp.Verdict {
				if resp != nil {
					b, err := retryhttp.PeekBody(resp, 1<<10)
					assert.NoError(t, err)
					peeked.Store(string(b))
				}
				return retryhttp.UsePolicy
			}}
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), http.MethodGet, ""))
		require.NoError(t, err)
		assert.Equal(t, 400, resp.StatusCode)
		assert.Equal(t, body, peeked.Load(), "the classifier's peek")
		assert.Equal(t, body, readAll(t, resp))
		assert.Less(t, time.Since(start), 40*time.Second, "the body's own time, about 30 s, and no more")
		assert.Equal(t, 1, srv.Count(), "the 400 judged by its status: final")
	})
}
