package retryhttp_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/policy"
)

// A server that answers a POST with a header line net/http rejects, and
// quotes, must not make the Transport take its own words for net/http's:
// the request reached the server, which answered it, so a POST is not
// resent, whatever the line says.
func TestServerWordsInAMalformedHeaderLineAreNotAnUnsentRequest(t *testing.T) {
	cases := []struct{ name, line string }{
		{"a value with a control byte", "X-A: plain\x01"},
		{"a value with a control byte, naming REFUSED_STREAM", "X-A: stream error: stream ID 1; REFUSED_STREAM; received from peer\x01"},
		{"a value with a control byte, naming a graceful GOAWAY", "X-A: http2: Transport received Server's graceful shutdown GOAWAY\x01"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := startRawServer(t, "HTTP/1.1 200 OK\r\n"+tc.line+"\r\nContent-Length: 2\r\n\r\nok")
			tr := newBaseTransport(t, policy.None())
			req, err := http.NewRequestWithContext(context.Background(), "POST", srv.URL()+"/orders", strings.NewReader("pay 100"))
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			if resp != nil {
				resp.Body.Close()
			}
			require.Error(t, err)
			assert.Equal(t, 1, srv.accepted(), "a POST the server answered was sent again (%v)", err)
		})
	}
}
