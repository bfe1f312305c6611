package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
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
		tr, s := newScripted(retryConfig(3, 503), rt.Step{Status: 503}, rt.Step{})
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
		s.WantHeader(t, retryhttp.AttemptsHeader, "", "1")
	})
}

func TestCallerBodyIsAlwaysClosed(t *testing.T) {
	cases := map[string]func(t *testing.T, req *http.Request) *retryhttp.Transport{
		"success": func(t *testing.T, _ *http.Request) *retryhttp.Transport {
			tr, _ := newScripted(retryConfig(3, 503), rt.Step{})
			return tr
		},
		"error": func(t *testing.T, _ *http.Request) *retryhttp.Transport {
			tr, _ := newCalls(retryConfig(3, 503), fail(errors.New("boom")))
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

// A discarded response whose body never ends (a server trickling bytes
// for a minute, within the length a drain reads) delays the caller by the
// drain bound only: the attempt is cut off and the retry goes ahead.
func TestEndlessDiscardedBodyIsCutOff(t *testing.T) {
	srv := script(
		rt.Step{Status: 503, Body: strings.Repeat("x", 60<<10), Trickle: rt.Rate{Every: time.Millisecond}},
		rt.Step{Body: "ok"})
	ts := srv.Start(t)
	cfg := retryConfig(2, 503)
	withWaits(cfg, time.Millisecond, time.Second)
	tr := &retryhttp.Transport{Base: freshBase(t), Policy: cfg}
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, err := http.NewRequestWithContext(t.Context(), "GET", ts.URL, nil)
		if !assert.NoError(t, err) {
			return
		}
		resp, err := tr.RoundTrip(req)
		if assert.NoError(t, err) {
			assert.Equal(t, "ok", readAll(t, resp))
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // reached only on failure
		t.Fatal("the caller waited for an endless discarded body")
	}
	// The bound is reached only on failure.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, srv.Wait(ctx), "the first attempt was never cut off")
	assert.Equal(t, []bool{true, false}, cancelled(srv), "the server saw the first attempt end")
}
