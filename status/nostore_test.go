package status_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/status"
)

// Every answer is marked Cache-Control: no-store: a 405, which
// RFC 9110 makes heuristically cacheable, and a 400 are answers too.
func TestEveryAnswerIsNoStore(t *testing.T) {
	t.Parallel()
	h := status.Handler(&retryhttp.Transport{})
	for _, tc := range []struct{ method, target string }{
		{http.MethodGet, "/"}, {http.MethodPost, "/"}, {http.MethodGet, "/?format=xml"},
	} {
		w := serve(h, tc.method, tc.target)
		assert.Equal(t, "no-store", w.Header().Get("Cache-Control"), "%s %s: %d", tc.method, tc.target, w.Code)
	}
}
