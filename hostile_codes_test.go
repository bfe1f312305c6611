package retryhttp_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp/policy"
)

// A retryable answer whose body stalls after its first bytes holds the
// request no longer than a drain, error table or not: the Transport
// retries it, and the retry's answer comes back. With an error table the
// Transport reads the body for its code, and that read must be bounded
// by something of the Transport's too, not only by a caller's deadline,
// which this caller does not set. The hang bound is reached only on
// failure.
func TestStalledErrorBodyDoesNotHoldTheRetry(t *testing.T) {
	cases := []struct {
		name  string
		codes *policy.ErrorCodes
	}{
		{"no error table", nil},
		{"an error table reading JSON", &policy.ErrorCodes{JSON: "code", Retryable: []string{"again"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := startConnServer(t, playEach(
				playStall("HTTP/1.1 503 Busy\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"code\":"),
				playAnswer(okReply)))
			cfg := retryConfig(3, 503)
			cfg.Rules[0].Retry.PerAttemptTimeout = time.Second
			cfg.Rules[0].ErrorCodes = tc.codes
			tr := newBaseTransport(t, withWaits(cfg, time.Millisecond, time.Millisecond))
			hangBound(t, 10*time.Second, func() {
				resp, err := tr.RoundTrip(getRequest(t, context.Background(), srv.URL()))
				if assert.NoError(t, err) {
					assert.Equal(t, http.StatusOK, resp.StatusCode)
					assert.Equal(t, "ok", readBody(t, resp))
				}
			})
		})
	}
}
