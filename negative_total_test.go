package retryhttp_test

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
)

// BufferLimits.Total says: "negative means no room at all, as if
// PerRequest were negative". A hedged request with a streamed body then
// sends one attempt, and counts no body committed for size, whichever of
// the two limits is negative.
func TestNegativeTotalIsAsNegativePerRequest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits retryhttp.BufferLimits
	}{
		{"PerRequest negative", retryhttp.BufferLimits{PerRequest: -1}},
		{"Total negative", retryhttp.BufferLimits{Total: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				second := make(chan struct{})
				base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
					defer req.Body.Close()
					if calls.Add(1) == 1 {
						// The first attempt's writer is slow to start: a
						// hedge that can go, goes meanwhile.
						select {
						case <-second:
						case <-time.After(time.Second):
						}
					} else {
						close(second)
					}
					if _, err := io.Copy(io.Discard, req.Body); err != nil {
						return nil, err
					}
					return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody}, nil
				})
				cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
					Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: 10 * time.Millisecond}}}}
				tr := &retryhttp.Transport{Base: base, Policy: cfg, Buffer: tc.limits}
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, "http://api.test/x",
					io.NopCloser(strings.NewReader("hello")))
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
				synctest.Wait()
				assert.Equal(t, int32(1), calls.Load(), "attempts sent: a body that cannot be buffered is sent once")
				assert.Equal(t, uint64(0), tr.Stats().Buffer.CommittedForSize)
			})
		})
	}
}
