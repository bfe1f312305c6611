package retryhttp_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
)

// A server that answers 503 part way through a streamed upload, and goes
// on reading it, gets the upload's retry, or the caller gets the 503: the
// answer is never lost. Over HTTP/1.1 net/http's writer for the first
// attempt goes on reading the caller's body after the 503 arrives; if it
// pushed the body past its buffer while the retry waited, the retry had
// no body to send, and the caller got "request body cannot be replayed"
// for a request that was answered.
func TestEarlyAnswerToAStreamedUploadIsNeverLost(t *testing.T) {
	const size = 2 << 20 // twice the default buffer of 1 MiB
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n := requests.Add(1)
		if n%2 == 1 {
			// The first attempt: refused after 500-900 KiB, and the
			// rest read as it comes, as a proxy might.
			http.NewResponseController(w).EnableFullDuplex()
			io.CopyN(io.Discard, req.Body, 500<<10+(n%5)*100<<10)
			w.Header().Set("Content-Length", "4")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "busy")
			http.NewResponseController(w).Flush()
			io.Copy(io.Discard, req.Body)
			return
		}
		got, _ := io.Copy(io.Discard, req.Body)
		if got != size {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		io.WriteString(w, "stored")
	}))
	defer srv.Close()
	body := bytes.Repeat([]byte("x"), size)
	for i := range 10 {
		tr := &retryhttp.Transport{Base: srv.Client().Transport}
		// A body with no GetBody and no length: replayed from the
		// buffer, which it outgrows half way.
		req, err := http.NewRequestWithContext(t.Context(), "PUT", srv.URL, io.NopCloser(bytes.NewReader(body)))
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err, "upload %d: the answer was lost", i)
		got := readAll(t, resp)
		switch resp.StatusCode {
		case http.StatusOK:
			assert.Equal(t, "stored", got, "upload %d", i)
		case http.StatusServiceUnavailable:
			assert.Equal(t, "busy", got, "upload %d: the kept answer comes back whole", i)
		default:
			t.Errorf("upload %d: got status %d, want 200 or the 503", i, resp.StatusCode)
		}
		tr.CloseIdleConnections()
	}
}
