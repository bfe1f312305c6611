package retryhttp_test

import (
	"errors"
	"io"
	"log"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/retryhttp/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }

// trackedBody counts how often the caller's body is closed.
type trackedBody struct {
	io.Reader
	closes atomic.Int64
}

func (b *trackedBody) Close() error { b.closes.Add(1); return nil }

func TestRequestIsNeverModified(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, s := newScripted(t, retryConfig(3, 503), step{status: 503}, step{status: 200})
		req := newRequest(t, t.Context(), "PUT", "payload")
		req.Header.Set("A", "1")
		before := req.Header.Clone()
		ctx, body, u := req.Context(), req.Body, *req.URL
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, before, req.Header)
		assert.Equal(t, ctx, req.Context())
		assert.Equal(t, body, req.Body)
		assert.Equal(t, u, *req.URL)
		assert.Equal(t, "1", s.header(1, retryhttp.AttemptsHeader))
	})
}

func TestCallerBodyIsAlwaysClosed(t *testing.T) {
	cases := map[string]func(t *testing.T, req *http.Request) *retryhttp.Transport{
		"success": func(t *testing.T, _ *http.Request) *retryhttp.Transport {
			tr, _ := newScripted(t, retryConfig(3, 503), step{status: 200})
			return tr
		},
		"error": func(t *testing.T, _ *http.Request) *retryhttp.Transport {
			tr, _ := newScripted(t, retryConfig(3, 503), step{err: errors.New("boom")})
			return tr
		},
		"bad URL": func(t *testing.T, req *http.Request) *retryhttp.Transport {
			req.URL = nil
			return &retryhttp.Transport{}
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			body := &trackedBody{Reader: strings.NewReader("x")}
			req := &http.Request{Method: "POST", URL: &url.URL{Scheme: "https", Host: "api.test", Path: "/"},
				Header: http.Header{}, Body: body, ContentLength: 1}
			tr := setup(t, req)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				readAll(t, resp)
			} else {
				assert.Nil(t, resp, "got a response together with an error")
			}
			assert.Equal(t, int64(1), body.closes.Load())
		})
	}
}
