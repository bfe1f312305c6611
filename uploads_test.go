package retryhttp_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// The two ends of the request-body tests' uploads: the caller's body, made
// in each way a caller hands one over, and the server that receives it.

var errReadAfterClose = errors.New("caller's body read after Close")

// callerBody is a caller's request body that counts its Close calls and
// refuses a Read that starts after Close: once RoundTrip has closed the
// caller's body, nothing may read it.
type callerBody struct {
	r      io.Reader
	c      io.Closer // the underlying body's Close, if any
	closes atomic.Int32
}

func (b *callerBody) Read(p []byte) (int, error) {
	if b.closes.Load() > 0 {
		return 0, errReadAfterClose
	}
	return b.r.Read(p)
}

func (b *callerBody) Close() error {
	if b.closes.Add(1) == 1 && b.c != nil {
		return b.c.Close()
	}
	return nil
}

// bodyKind is one way a caller hands a body over.
type bodyKind struct {
	name    string
	getBody bool // http.NewRequest sets GetBody: replayed without a buffer
	known   bool // ContentLength is declared
	pipe    bool // fed through an io.Pipe by another goroutine
}

var bodyKinds = []bodyKind{
	{name: "GetBody", getBody: true, known: true},
	{name: "reader known length", known: true},
	{name: "reader unknown length"},
	{name: "pipe known length", known: true, pipe: true},
	{name: "pipe unknown length", pipe: true},
}

// request returns a POST of data to url with the body made as k says.
func (k bodyKind) request(t *testing.T, url string, data []byte) (*http.Request, *callerBody) {
	t.Helper()
	if k.getBody {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(data))
		require.NoError(t, err)
		require.NotNil(t, req.GetBody)
		cb := &callerBody{r: req.Body, c: req.Body}
		req.Body = cb
		return req, cb
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, nil)
	require.NoError(t, err)
	cb := &callerBody{r: bytes.NewReader(data)}
	if k.pipe {
		pr, pw := io.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			// Odd-sized writes, so that reads end away from chunk edges.
			for rest := data; len(rest) > 0; {
				n := min(len(rest), 1000)
				if _, err := pw.Write(rest[:n]); err != nil {
					return
				}
				rest = rest[n:]
			}
			pw.Close()
		}()
		t.Cleanup(func() { pr.Close(); <-done })
		cb = &callerBody{r: pr, c: pr}
	}
	req.Body, req.ContentLength = cb, -1
	if k.known {
		req.ContentLength = int64(len(data))
	}
	return req, cb
}

// uploadServer is a kit Server on loopback behind a front that cuts the
// first attempts part way through their request body: it reads some of it
// and resets the connection. The kit's faults act on requests read whole;
// this one fails an upload in the middle.
type uploadServer struct {
	rt.Server
	url  string
	hits atomic.Int32 // attempts, cut or not
}

// newUploadServer serves steps to every attempt, the last one repeating.
func newUploadServer(t *testing.T, steps ...rt.Step) *uploadServer {
	return cuttingServer(t, 0, 0, steps...)
}

// cuttingServer cuts the first cuts attempts after cutAt bytes of their
// body, and serves steps to the attempts after them.
func cuttingServer(t *testing.T, cuts int, cutAt int64, steps ...rt.Step) *uploadServer {
	s := &uploadServer{Server: rt.Server{Script: steps}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if int(s.hits.Add(1)) > cuts {
			s.ServeHTTP(w, r)
			return
		}
		io.CopyN(io.Discard, r.Body, cutAt)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		conn.(*net.TCPConn).SetLinger(0) // a reset, not a clean close
		conn.Close()
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// checkUploads asserts that the server got want whole copies of data, from
// attempts first, first+1, ..., each declared as k says.
func checkUploads(t *testing.T, s *uploadServer, k bodyKind, data []byte, first, want int) {
	t.Helper()
	got := s.Attempts()
	require.Len(t, got, want, "bodies received whole")
	sum := sha256.Sum256(data)
	for i, a := range got {
		assert.NoError(t, a.BodyErr, "upload %d", i)
		assert.Equal(t, int64(len(data)), a.BodySize, "upload %d: bytes", i)
		assert.Equal(t, sum, a.BodySHA256, "upload %d: sha256", i)
		wantAttempts := ""
		if n := first + i; n > 0 {
			wantAttempts = fmt.Sprint(n)
		}
		assert.Equal(t, wantAttempts, a.Header.Get(retryhttp.AttemptsHeader), "upload %d: X-Retry-Attempts", i)
		if len(data) > 0 {
			declared := int64(-1)
			if k.known {
				declared = int64(len(data))
			}
			assert.Equal(t, declared, a.ContentLength, "upload %d: Content-Length", i)
		}
	}
}
