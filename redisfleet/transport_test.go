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

// TestTransportsShareAFleet has ten members, each a Transport with its
// own Fleet and go-redis client, send 50 requests each to a server that
// answers every one with 503, and measures the server requests per
// request.
//
// Alone, each Transport spends about a third of its 100 tokens before
// its bucket stops it: about 1.7 server requests per request at this
// size. Sharing one bucket, the fleet stops after 50 failures in all.

func TestTransportsShareAFleet(t *testing.T) {
	const n, m = 10, 50
	s := startRedis(t)
	srv := &retryhttptest.Server{Script: []retryhttptest.Step{{Status: 503}}}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	for _, w := range []wiring{fleet} {
		t.Run(w.String(), func(t *testing.T) {
			members := make([]*member, n)
			for i := range members {
				members[i] = newFleetMember(w, storeAt(s.addr), quickPolicy(), quickFleet)
			}
			defer func() {
				for _, mb := range members {
					mb.close()
				}
			}()
			before := srv.Count()
			o := runFleet(members, m, ts.URL, nil)
			hits := srv.Count() - before
			perRequest := float64(hits) / float64(o.requests)
			t.Logf("%s: %d server requests for %d requests: %.3f a request", w, hits, o.requests, perRequest)

			assert.Zero(t, o.failed, "got %d requests without a response, want each to get its 503", o.failed)
			assert.LessOrEqual(t, hits, 3*n*m, "got more attempts than the policy allows")
			require.Positive(t, members[0].fleet.Stats().Hosts, "the Transport calls its Fleet")
			// 50 tokens' worth of retries, plus those that started before
			// the members read the bucket spent.
			limit := 1.2
			assert.LessOrEqual(t, perRequest, limit, "got %.3f server requests a request, want at most %v", perRequest, limit)
		})
	}
}

// TestAFleetHoldIsCappedByEachMembersPolicy has member a, whose policy
// waits up to ten minutes for a server, meet a 429 asking for five; the
// hold reaches member b, whose policy waits a minute at most, through a
// real redis-server. b holds its requests no longer than its own
// minute: the refusal and its Stats say so.
func TestAFleetHoldIsCappedByEachMembersPolicy(t *testing.T) {
	s := startRedis(t)
	srv := &retryhttptest.Server{Script: []retryhttptest.Step{{Status: 200}, {Status: 429, Header: http.Header{"Retry-After": {"300"}}}, {Status: 200}}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	patient := policy.Default()
	patient.MaxServerDelay = 10 * time.Minute
	a := newFleetMember(fleet, storeAt(s.addr), patient, redisfleet.Options{})
	b := newFleetMember(fleet, storeAt(s.addr), policy.Default(), redisfleet.Options{})
	defer a.close()
	defer b.close()
	subscribed(t, b.fleet)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	// b has met the host: holds on it reach b.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	require.NoError(t, err)
	resp, err := b.tr.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	require.NoError(t, err)
	resp, err = a.tr.RoundTrip(req)
	require.NoError(t, err, "a's request hands back its 429: it cannot wait 300 s")
	resp.Body.Close()
	require.Equal(t, 429, resp.StatusCode)
	host := strings.TrimPrefix(ts.URL, "http://")
	waitFor(t, "a's hold to reach b", func() bool { return b.fleet.Stats().HoldsLearned > 0 })

	// b's next request meets the hold, and cannot wait a minute.
	met := time.Now()
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	require.NoError(t, err)
	_, err = b.tr.RoundTrip(req)
	var held *retryhttp.HoldError
	require.ErrorAs(t, err, &held, "b's request meets a's hold")
	assert.LessOrEqual(t, held.Remaining, time.Minute, "b is held no longer than its own maxServerDelay")
	assert.Greater(t, held.Remaining, 50*time.Second)
	holds := b.tr.Stats().Hosts[host].Holds
	require.Len(t, holds, 1)
	hold := holds[0]
	require.True(t, hold.Fleet, "b lists the fleet's hold")
	assert.False(t, hold.Until.After(time.Now().Add(time.Minute)), "b's hold ends %v after it met it", hold.Until.Sub(met))
	assert.Equal(t, 2, srv.Count(), "b sent nothing more")
}
