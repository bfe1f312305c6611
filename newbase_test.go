package retryhttp_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/dial"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// A caller who wraps dial.NewBase's base, to sign requests say, keeps the
// dial backoff: against a closed loopback port, a call fails with the
// refusal that opened the window, within the policy's own waits, and its
// later attempts are refused by the window; the Dialer's ResetBackoff
// cuts the window short once the server is back.
func TestAWrappedNewBaseKeepsTheDialBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		addr := closedPort(t)
		base, dialer := dial.NewBase()
		defer base.CloseIdleConnections()
		signed := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			req = req.Clone(req.Context())
			req.Header.Set("Authorization", "signed")
			return base.RoundTrip(req)
		})
		tr := &retryhttp.Transport{Base: signed, Policy: retryConfig(3, 503)} // waits 100 ms, then 200 ms
		get := func(ctx context.Context) (*http.Response, error) {
			req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/", nil)
			require.NoError(t, err)
			return tr.RoundTrip(req)
		}

		start := time.Now()
		_, err := get(t.Context())
		require.ErrorIs(t, err, dial.ErrBackoff, "the later attempts meet the window")
		require.ErrorIs(t, err, syscall.ECONNREFUSED, "the refusal that opened it is kept")
		var rerr *retryhttp.Error
		require.ErrorAs(t, err, &rerr)
		assert.Equal(t, 3, rerr.Attempts)
		assert.LessOrEqual(t, time.Since(start), 300*time.Millisecond, "no longer than the policy's own waits")

		ln, err := net.Listen("tcp", addr) // the server is back
		if err != nil {
			t.Skipf("port %s taken again meanwhile: %v", addr, err)
		}
		var auth string
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			auth = r.Header.Get("Authorization")
		}))
		srv.Listener.Close()
		srv.Listener = ln
		srv.Start()
		defer srv.Close()

		// One attempt each from here: with a server on loopback in the
		// bubble, virtual time cannot pass, so no wait may be started.
		once := retryhttp.WithoutRetries(t.Context())
		_, err = get(once)
		require.ErrorIs(t, err, dial.ErrBackoff, "still inside the window: no dial reached the server")
		dialer.ResetBackoff(addr)
		resp, err := get(once)
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "signed", auth, "the wrapper's header reached the server")
	})
}

// dial.NewBase builds a new base and Dialer on each call, set up as the
// zero Transport's: its dials, plain and TLS, go through the Dialer, and
// one Dialer's windows are not another's.
func TestNewBaseBuildsANewPairEachCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		addr := closedPort(t)
		b1, d1 := dial.NewBase()
		b2, d2 := dial.NewBase()
		require.NotSame(t, b1, b2)
		require.NotSame(t, d1, d2)
		for _, b := range []*http.Transport{b1, b2} {
			assert.NotNil(t, b.DialContext)
			assert.NotNil(t, b.DialTLSContext)
			assert.True(t, b.ForceAttemptHTTP2, "a custom TLS dial needs it for HTTP/2")
			assert.GreaterOrEqual(t, b.MaxIdleConnsPerHost, 16)
		}

		_, err := b1.DialContext(t.Context(), "tcp", addr)
		require.ErrorIs(t, err, syscall.ECONNREFUSED)
		_, err = b1.DialContext(t.Context(), "tcp", addr)
		require.ErrorIs(t, err, dial.ErrBackoff, "the first base's Dialer backs off")
		_, err = b2.DialContext(t.Context(), "tcp", addr)
		require.ErrorIs(t, err, syscall.ECONNREFUSED, "the second base's Dialer dials")
		assert.False(t, errors.Is(err, dial.ErrBackoff))
	})
}
