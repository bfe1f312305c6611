package retryhttp_test

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// A RateLimit item "r=1;t=60" on every answer allows at most one request
// in each 60 s: the host is sent no more than the fields allow, a few
// at most over two minutes, not the pace's floor of one every two
// seconds.
func TestRateLimitFieldsAreNotExceededByThePaceFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
			return rt.Step{Header: http.Header{"Ratelimit": {`"default";r=1;t=60`}}}
		}}
		tr := &retryhttp.Transport{Base: srv}
		offer(t, tr, 10, 120*time.Second, 0, time.Second)
		t.Logf("pace %v/s, %d sent", tr.Stats().Hosts["api.test"].PaceRate, srv.Count())
		assert.LessOrEqual(t, srv.Count(), 6, "r=1 per 60 s for 120 s, give or take the first")
	})
}
