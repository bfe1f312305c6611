package retryhttp_test

import (
	"encoding/json"
	"expvar"
	"testing"

	"github.com/retryhttp/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPublishExpvar(t *testing.T) {
	tr, _ := newScripted(t, retryConfig(3, 503), step{status: 200})
	resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
	require.NoError(t, err)
	readAll(t, resp)

	require.NoError(t, tr.PublishExpvar("retryhttp_test_stats"))
	var got retryhttp.Stats
	require.NoError(t, json.Unmarshal([]byte(expvar.Get("retryhttp_test_stats").String()), &got))
	assert.Equal(t, uint64(1), got.Total.Requests)

	err = (&retryhttp.Transport{}).PublishExpvar("retryhttp_test_stats")
	assert.ErrorContains(t, err, "already published")
}
