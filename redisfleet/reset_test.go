package redisfleet_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRealResetBackoffEndsAFleetHold has member a meet a 429 whose hold
// reaches member b through a real store. ResetBackoff on b ends the
// fleet's hold for b alone, though the Fleet goes on showing it (the
// store's copy, to the millisecond), and not for a; a later hold, set
// by a after the reset, holds b again.
func TestRealResetBackoffEndsAFleetHold(t *testing.T) {
	s := startRedis(t)
	srv := &retryhttptest.Server{Choose: func(_ int, req *http.Request) retryhttptest.Step {
		switch req.URL.Path {
		case "/limit":
			return retryhttptest.Step{Status: 429, Header: http.Header{"Retry-After": {"30"}}}
		case "/limit-again":
			return retryhttptest.Step{Status: 429, Header: http.Header{"Retry-After": {"40"}}}
		}
		return retryhttptest.Step{}
	}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	a := newFleetMember(fleet, storeAt(s.addr), nil, redisfleet.Options{})
	b := newFleetMember(fleet, storeAt(s.addr), nil, redisfleet.Options{})
	defer a.close()
	defer b.close()
	subscribed(t, a.fleet)
	subscribed(t, b.fleet)
	hostname := strings.TrimPrefix(ts.URL, "http://")
	rule := policy.Default().Rules[0].Key()
	get := func(m *member, ctx context.Context, path string) (int, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+path, nil)
		require.NoError(t, err)
		resp, err := m.tr.RoundTrip(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	status, err := get(b, t.Context(), "/x") // b sends to the host
	require.NoError(t, err)
	require.Equal(t, 200, status)

	status, err = get(a, retryhttp.WithoutRetries(t.Context()), "/limit")
	require.NoError(t, err)
	require.Equal(t, 429, status)
	waitFor(t, "a's hold to reach b", func() bool { return !b.fleet.Look(hostname, rule).HoldUntil.IsZero() })
	_, err = get(b, t.Context(), "/x")
	require.ErrorIs(t, err, retryhttp.ErrHeld, "the fleet's hold holds b")

	b.tr.ResetBackoff(hostname)
	sent := srv.Count()
	status, err = get(b, t.Context(), "/x")
	require.NoError(t, err, "the fleet's hold is over for the Transport reset")
	assert.Equal(t, 200, status)
	assert.Equal(t, sent+1, srv.Count())
	assert.False(t, b.fleet.Look(hostname, rule).HoldUntil.IsZero(), "the Fleet still shows the hold")
	_, err = get(a, t.Context(), "/x")
	assert.ErrorIs(t, err, retryhttp.ErrHeld, "b's reset is its own")

	learned := b.fleet.Stats().HoldsLearned
	a.tr.ResetBackoff(hostname) // a's own hold would keep the next 429 from being sent
	status, err = get(a, retryhttp.WithoutRetries(t.Context()), "/limit-again")
	require.NoError(t, err)
	require.Equal(t, 429, status)
	waitFor(t, "a's later hold to reach b", func() bool { return b.fleet.Stats().HoldsLearned > learned })
	_, err = get(b, t.Context(), "/x")
	assert.ErrorIs(t, err, retryhttp.ErrHeld, "a hold set after the reset counts")
}
