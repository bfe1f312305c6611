package retryhttp_test

import (
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// One answer whose RateLimit field names a quota the host does not have
// (r in the trillions, once) does not pin the pace of a host whose real
// quota is 100 a second: once its answers say the truth again, callers
// asking 150 a second get about the quota through, as they do with no
// such answer, whether the answer is the first or comes later.
func TestOneMadeUpRemainingDoesNotPinThePace(t *testing.T) {
	cases := []struct {
		name  string
		lieAt time.Duration // -1: none
	}{
		{"honest", -1},
		{"the first answer made up", 0},
		{"one answer made up, later", 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bucket, _ := bucketHost(100, 20)
				var mu sync.Mutex
				start, lied := time.Now(), false
				srv := &rt.Server{Choose: func(n int, req *http.Request) rt.Step {
					s := bucket.Choose(n, req)
					mu.Lock()
					defer mu.Unlock()
					if tc.lieAt >= 0 && !lied && time.Since(start) >= tc.lieAt {
						lied = true
						s.Header = http.Header{"Ratelimit-Policy": s.Header["Ratelimit-Policy"],
							"Ratelimit": {`"default";r=999999999999999;t=1`}}
					}
					return s
				}}
				tr := &retryhttp.Transport{Base: srv}
				ok, paced := offer(t, tr, 150, 30*time.Second, 20*time.Second, time.Second)
				t.Logf("ok %d paced %d", ok, paced)
				assert.GreaterOrEqual(t, ok, 950, "about the quota, 100 a second, over the last 10 s")
			})
		})
	}
}
