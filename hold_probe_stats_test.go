package retryhttp_test

import (
	"errors"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// While the request that went first after a capped hold waits for its
// answer, the others of its rule are held (they wait, or fail with
// ErrHeld): Stats shows the host held meanwhile, as it shows every hold
// that keeps requests back.
func TestStatsShowAHoldWhileItsProbeIsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		answers := 0
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
			mu.Lock()
			defer mu.Unlock()
			answers++
			if answers == 1 {
				return rt.Step{Status: 503, Header: http.Header{"Retry-After": {"31536000"}}}
			}
			return rt.Step{Delay: 30 * time.Second} // the probe's answer is slow
		}}
		tr := &retryhttp.Transport{Base: srv}
		_, err := getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/first", 0)
		require.NoError(t, err)
		time.Sleep(61 * time.Second) // the hold, capped at 60 s, has ended
		go getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/probe", 0)
		time.Sleep(time.Second) // the probe is out
		_, err = getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/other", time.Second)
		require.True(t, errors.Is(err, retryhttp.ErrHeld), "held while the probe is out: %v", err)
		hs := tr.Stats().Hosts["api.test"]
		if assert.Len(t, hs.Holds, 1, "Stats shows the hold that just refused a request (%d refused)", hs.HoldRefusals) {
			h := hs.Holds[0]
			assert.Equal(t, 503, h.Status)
			assert.Equal(t, time.Now().Add(59*time.Second), h.Until,
				"listed until the latest the others wait: maxServerDelay after the probe went, a second ago")
		}
		time.Sleep(time.Minute) // the probe's answer, a 200, has come
		assert.Empty(t, tr.Stats().Hosts["api.test"].Holds, "the probe's answer settled the hold")
	})
}
