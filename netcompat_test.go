package retryhttp_test

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
)

// The tests here compare a Transport with bare net/http on loopback, for
// what the Transport does not retry: it is a drop-in, and must send and
// refuse what net/http sends and refuses, in each of the ways an attempt
// may go (the caller's own request, or a copy of it).

// compatClients returns a bare net/http client and clients of Transports
// whose attempts go each way: the caller's own request (the zero
// Transport), and a copy of it (under http.Client.Timeout, a per-attempt
// timeout, a hedging rule, a Prepare).
func compatClients(t *testing.T) map[string]*http.Client {
	t.Helper()
	hedge, err := policy.ParseConfig([]byte(`{"methodConfig": [{"name": [{}],
		"hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "1h"}}]}`))
	require.NoError(t, err)
	perAttempt, err := policy.ParseConfig([]byte(`{"methodConfig": [{"name": [{}],
		"retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1,
		"retryableStatusCodes": [503], "perAttemptTimeout": "1h"}}]}`))
	require.NoError(t, err)
	bare := http.DefaultTransport.(*http.Transport).Clone()
	zero, timed := &retryhttp.Transport{}, &retryhttp.Transport{}
	hedged, bounded := &retryhttp.Transport{Policy: hedge}, &retryhttp.Transport{Policy: perAttempt}
	prepared := &retryhttp.Transport{Prepare: func(int, *http.Request) error { return nil }}
	for _, c := range []interface{ CloseIdleConnections() }{bare, zero, timed, hedged, bounded, prepared} {
		t.Cleanup(c.CloseIdleConnections)
	}
	return map[string]*http.Client{
		"bare net/http":       {Transport: bare},
		"zero Transport":      {Transport: zero},
		"Client.Timeout":      {Transport: timed, Timeout: time.Hour},
		"per-attempt timeout": {Transport: bounded},
		"hedging":             {Transport: hedged},
		"Prepare":             {Transport: prepared},
	}
}

// TestNilBodyWithLengthRefused checks that a request with a ContentLength
// and no Body is refused, nothing sent, as net/http refuses it, whichever
// way its attempt goes: a copy of the request once went with
// ContentLength 0, an empty body the caller never meant.
func TestNilBodyWithLengthRefused(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	for name, client := range compatClients(t) {
		t.Run(name, func(t *testing.T) {
			hits.Store(0)
			req, err := http.NewRequest("PUT", srv.URL, nil)
			require.NoError(t, err)
			req.ContentLength = 5
			resp, err := client.Do(req)
			if resp != nil {
				resp.Body.Close()
			}
			require.Error(t, err)
			assert.ErrorContains(t, err, "http: Request.ContentLength=5 with nil Body")
			assert.Zero(t, hits.Load(), "nothing reaches the server")
		})
	}
}

// TestSwitchingProtocolsBodyWritable checks that the body of a 101
// Switching Protocols answer is the upgraded connection, an
// io.ReadWriteCloser, as net/http gives it, whichever way the attempt
// went; http.Client's own Timeout hides the Writer, in net/http too, so
// that client is left out.
func TestSwitchingProtocolsBodyWritable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nc, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer nc.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		line, _ := brw.ReadString('\n')
		brw.WriteString("echo " + line)
		brw.Flush()
	}))
	defer srv.Close()
	for name, client := range compatClients(t) {
		if client.Timeout != 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequest("GET", srv.URL, nil)
			require.NoError(t, err)
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "echo")
			resp, err := client.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
			rw, ok := resp.Body.(io.ReadWriteCloser)
			require.True(t, ok, "the body of a 101 is writable: %T", resp.Body)
			_, err = io.WriteString(rw, "ping\n")
			require.NoError(t, err)
			got, err := bufio.NewReader(rw).ReadString('\n')
			require.NoError(t, err)
			assert.Equal(t, "echo ping\n", got)
		})
	}
}
