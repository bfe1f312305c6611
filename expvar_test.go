package retryhttp_test

import (
	"encoding/json"
	"expvar"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/retryhttp/retryhttp"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var expvarRuns atomic.Int64

func TestPublishExpvar(t *testing.T) {
	tr, _ := newScripted(retryConfig(3, 503), rt.Step{})
	resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
	require.NoError(t, err)
	readAll(t, resp)

	// expvar names are global for the process: one per run, so that
	// -count=N works.
	name := fmt.Sprintf("retryhttp_test_stats_%d", expvarRuns.Add(1))
	require.NoError(t, tr.PublishExpvar(name))
	var got retryhttp.Stats
	require.NoError(t, json.Unmarshal([]byte(expvar.Get(name).String()), &got))
	assert.Equal(t, uint64(1), got.Total.Requests)

	err = (&retryhttp.Transport{}).PublishExpvar(name)
	assert.ErrorContains(t, err, "already published")
}
