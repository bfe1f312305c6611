package retryhttp_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// A connection the server drops in the middle of the response's header
// section is broken like one dropped anywhere else, whether the cut falls
// between two lines (an unexpected EOF) or inside one (net/textproto's
// "malformed MIME header: missing colon"): a GET is retried after the
// backoff and gets the retry's answer, a POST is not sent again, as it may
// have reached the server.
func TestHeaderSectionCutIsALostConnection(t *testing.T) {
	t.Parallel()
	const ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	cuts := []struct{ name, reply string }{
		{"between two lines", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"},
		{"inside a line", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Le"},
	}
	for _, cut := range cuts {
		t.Run(cut.name+", GET", func(t *testing.T) {
			t.Parallel()
			srv := startRawServer(t, cut.reply, ok)
			var log hookLog
			tr := &retryhttp.Transport{Base: plainTransport(t), Hooks: log.hooks(""),
				Policy: withWaits(retryConfig(3, 503), time.Millisecond, time.Millisecond)}
			req, err := http.NewRequestWithContext(t.Context(), "GET", srv.URL()+"/v1/items", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			assert.Equal(t, "ok", readAll(t, resp))
			assert.Equal(t, []string{"done 1 network", "done 2 success"}, doneLines(&log))
			waits := log.waits()
			require.Len(t, waits, 1)
			assert.Equal(t, retrytrace.WaitBackoff, waits[0].Reason, "got a wait for %s, want one for backoff", waits[0].Reason)
		})
		t.Run(cut.name+", POST", func(t *testing.T) {
			t.Parallel()
			srv := startRawServer(t, cut.reply, ok)
			var log hookLog
			tr := &retryhttp.Transport{Base: plainTransport(t), Hooks: log.hooks(""),
				Policy: withWaits(retryConfig(3, 503), time.Millisecond, time.Millisecond)}
			req, err := http.NewRequestWithContext(t.Context(), "POST", srv.URL()+"/v1/items", strings.NewReader("x"))
			require.NoError(t, err)
			_, err = tr.RoundTrip(req)
			require.Error(t, err)
			assert.Equal(t, []string{"done 1 network"}, doneLines(&log))
			assert.Equal(t, 1, srv.accepted())
		})
	}
}

// plainTransport returns an HTTP/1.1 client that keeps no connection past
// the test.
func plainTransport(t testing.TB) *http.Transport {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}
