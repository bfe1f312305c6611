package retryhttp_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countConns runs 16 goroutines of 60 sequential GETs each through rt,
// with http.Client.Timeout set, and returns how many connections the
// server accepted.
func countConns(t *testing.T, rt http.RoundTripper) int64 {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	client := &http.Client{Transport: rt, Timeout: time.Minute}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 60 {
				resp, err := client.Get(srv.URL)
				if !assert.NoError(t, err) {
					return
				}
				var v map[string]bool
				assert.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	return conns.Load()
}

func pooled() *http.Transport {
	return &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute}
}

// TestKeepAliveSurvivesWrapping checks that connections are reused through
// the Transport as through the bare transport, with Client.Timeout set:
// the attempt's context must outlive the response headers, or every
// request would cost a new connection.
func TestKeepAliveSurvivesWrapping(t *testing.T) {
	bareBase := pooled()
	defer bareBase.CloseIdleConnections()
	bare := countConns(t, bareBase)

	base := pooled()
	defer base.CloseIdleConnections()
	wrapped := countConns(t, &retryhttp.Transport{Base: base})
	t.Logf("connections for 960 GETs: bare %d, wrapped %d", bare, wrapped)
	require.LessOrEqual(t, bare, int64(32))
	assert.LessOrEqual(t, wrapped, int64(32), "got %d connections, want about 16 as bare (%d)", wrapped, bare)
}
