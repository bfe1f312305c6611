package redisfleet_test

import (
	"net/http/httptest"
	"testing"

	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
)

// TestTransportsShareAFleet has ten members, each a Transport with its
// own Fleet and go-redis client, send 50 requests each to a server that
// answers every one with 503, and measures the server requests per
// request.
//
// Alone, each Transport spends about a third of its 100 tokens before
// its bucket stops it: about 1.7 server requests per request at this
// size. Sharing one bucket, the fleet stops after 50 failures in all.
// "shim" wires the Fleet through the Transport's hooks and holds the
// fleet's figure today; "core" sets Transport.Fleet, and holds it once
// the core calls its Fleet (until then it measures the Transports alone).
func TestTransportsShareAFleet(t *testing.T) {
	const n, m = 10, 50
	s := startRedis(t)
	srv := &retryhttptest.Server{Script: []retryhttptest.Step{{Status: 503}}}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	for _, w := range []wiring{shim, core} {
		t.Run(w.String(), func(t *testing.T) {
			members := make([]*member, n)
			for i := range members {
				members[i] = newFleetMember(w, s.addr, quickPolicy(), quickFleet)
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
			wired := members[0].fleet.Stats().Hosts > 0
			t.Logf("%s: %d server requests for %d requests: %.3f a request (the fleet was called: %v)", w, hits, o.requests, perRequest, wired)

			assert.Zero(t, o.failed, "got %d requests without a response, want each to get its 503", o.failed)
			assert.LessOrEqual(t, hits, 3*n*m, "got more attempts than the policy allows")
			if !wired {
				t.Logf("the Transport does not call its Fleet yet: the figure is the Transports' alone")
				return
			}
			// 50 tokens' worth of retries, plus those that started before
			// the members read the bucket spent.
			limit := 1.2
			assert.LessOrEqual(t, perRequest, limit, "got %.3f server requests a request, want at most %v", perRequest, limit)
		})
	}
}
