package redisfleet_test

import (
	"net/http/httptest"
	"testing"

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
