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
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
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

// fewestConns is the fewest connections of three runs of countConns: how
// many a small pool needs depends on scheduling, and other tests running
// meanwhile (go test runs packages side by side) add noise that a single
// run would take for the Transport's doing.
func fewestConns(t *testing.T, rt http.RoundTripper) int64 {
	t.Helper()
	n := countConns(t, rt)
	for range 2 {
		n = min(n, countConns(t, rt))
	}
	return n
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
	bare := fewestConns(t, bareBase)

	base := pooled()
	defer base.CloseIdleConnections()
	wrapped := fewestConns(t, &retryhttp.Transport{Base: base})
	t.Logf("connections for 960 GETs: bare %d, wrapped %d", bare, wrapped)
	require.LessOrEqual(t, bare, int64(32))
	assert.LessOrEqual(t, wrapped, int64(32), "got %d connections, want about 16 as bare (%d)", wrapped, bare)
}

// With its own base (go-cleanhttp's pool, which keeps GOMAXPROCS+1 idle
// connections per host) and http.Client.Timeout set, the Transport reuses
// connections as a bare transport with the same settings does. The
// client sets Request.Cancel on every request for a RoundTripper that is
// not an *http.Transport; sent on to net/http, it made the read loop wake
// a goroutine ahead of each body's reader, the small idle pool overflowed,
// and 960 GETs opened hundreds of connections.
//
// The bound is set against bare in the same run: how many connections a
// small pool needs under 16 goroutines depends on scheduling, which the
// race detector randomises, so the test is not run under it.
func TestKeepAliveWithTheDefaultBase(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector randomises the scheduling this depends on")
	}
	bareBase := cleanhttp.DefaultPooledTransport()
	defer bareBase.CloseIdleConnections()
	bare := fewestConns(t, bareBase)
	tr := &retryhttp.Transport{}
	defer tr.CloseIdleConnections()
	got := fewestConns(t, tr)
	t.Logf("connections for 960 GETs: bare %d, default base %d", bare, got)
	assert.LessOrEqual(t, got, max(48, 2*bare), "got %d connections, want about as many as bare (%d)", got, bare)
}

// A caller's Request.Cancel still ends its request, though the attempts
// go to the base without it: an attempt in flight, and a wait between
// attempts.
func TestRequestCancelIsHonoured(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []rt.Step
	}{
		{"during an attempt", []rt.Step{{Fault: rt.Hang}}},
		{"during a backoff", []rt.Step{{Status: 503}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := withWaits(retryConfig(2, 503), time.Hour, time.Hour)
				tr, srv := newScripted(cfg, tc.steps...)
				req := newRequest(t, t.Context(), "GET", "")
				cancel := make(chan struct{})
				req.Cancel = cancel //lint:ignore SA1019 the legacy way is what is tested
				time.AfterFunc(time.Second, func() { close(cancel) })
				start := time.Now()
				resp, err := tr.RoundTrip(req)
				assert.Nil(t, resp)
				require.ErrorIs(t, err, retryhttp.ErrNoResponse)
				// http.Client closes the Request.Cancel it sets when its
				// Timeout ends: the text says what net/http's does, and
				// names no field the caller may never have set.
				assert.Contains(t, err.Error(), "retryhttp: request canceled")
				assert.NotContains(t, err.Error(), "Request.Cancel")
				assert.Equal(t, time.Second, time.Since(start), "ended when Cancel was closed")
				srv.WantAttempts(t, 1)
				synctest.Wait() // the watcher is gone: the bubble would not end otherwise
			})
		})
	}
}
