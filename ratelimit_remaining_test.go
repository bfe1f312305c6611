package retryhttp_test

import (
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// A serverDelayHeaders entry with a Remaining header sets the pace
// wherever it stands among the policy's delay headers: one without a
// Remaining header listed before it (AWS's x-amz-retry-after, say) is a
// plain delay, and does not hide it.
func TestDelayHeaderWithRemainingPacesWhereverListed(t *testing.T) {
	amz := policy.DelayHeader{Name: "X-Amz-Retry-After", Format: policy.DelayMilliseconds}
	reset := policy.DelayHeader{Name: "X-RateLimit-Reset", Format: policy.DelayUnixSeconds, Remaining: "X-RateLimit-Remaining"}
	for _, tc := range []struct {
		name    string
		headers []policy.DelayHeader
	}{
		{"alone", []policy.DelayHeader{reset}},
		{"first", []policy.DelayHeader{reset, amz}},
		{"after a plain delay header", []policy.DelayHeader{amz, reset}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
					return rt.Step{Header: http.Header{
						"X-Ratelimit-Remaining": {"10"},
						"X-Ratelimit-Reset":     {strconv.FormatInt(time.Now().Add(5*time.Second).Unix(), 10)},
					}}
				}}
				cfg := policy.Default()
				cfg.DelayHeaders = tc.headers
				tr := &retryhttp.Transport{Base: srv, Policy: cfg}
				for _, err := range burst(t, tr, "/x", 8, 0) {
					require.NoError(t, err)
				}
				assert.InDelta(t, 10.0/5, tr.Stats().Hosts["api.test"].PaceRate, 0.2, "10 left for 5 s: 2/s")
			})
		})
	}
}
