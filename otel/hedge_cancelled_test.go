package otel_test

import (
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
)

// A hedge cut off because another won ends its span with Error and
// error.type "cancelled" (otel/README.md, Spans), even when its base
// hands back a response as it is cancelled, as a real one may when the
// headers arrive at that instant.
func TestCancelledHedgeWithAResponseIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		var mu sync.Mutex
		calls := 0
		mt := httpmock.NewMockTransport()
		mt.RegisterNoResponder(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			calls++
			first := calls == 1
			mu.Unlock()
			if first {
				<-req.Context().Done() // its answer comes as it is cut off
				return httpmock.NewStringResponse(200, "late"), nil
			}
			return httpmock.NewStringResponse(200, ""), nil
		})
		cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: 50 * time.Millisecond}}}}
		tr := &retryhttp.Transport{Base: mt, Policy: cfg, Hooks: r.hooks}
		r.get(t, tr, "https://api.test/v1/items")

		spans := r.attempts()
		require.Len(t, spans, 2)
		first := spans[1] // the winner ends first
		set := attribute.NewSet(first.Attributes...)
		out, _ := set.Value("retryhttp.outcome")
		require.Equal(t, "cancelled", out.AsString())
		et, ok := set.Value("error.type")
		assert.True(t, ok, "a cancelled hedge has no error.type")
		assert.Equal(t, "cancelled", et.AsString())
		assert.Equal(t, codes.Error, first.Status.Code, "a cancelled hedge's span is not an Error")
	})
}
