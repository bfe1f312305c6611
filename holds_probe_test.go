package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// aYear is a Retry-After no policy waits for: the hold it sets is capped
// at maxServerDelay (60 s under policy.Default), and ends with a probe.
var aYear = http.Header{"Retry-After": {"31536000"}}

// cancelsKey carries, in a request's context, the function that cancels
// it: probeBase calls it as the attempt reaches the base, before anything
// is sent.
type cancelsKey struct{}

// probeBase answers a GET of /first with a 503 that holds the host for a
// year, the rest as srv says, but for paths whose attempts never reach
// srv: /unreached and /resent are refused before anything is sent (the
// latter once; its resend needs GetBody), and /cancelled is cancelled by
// its caller as it reaches the base.
func probeBase(srv *rt.Server) roundTripFunc {
	var once sync.Once
	return func(req *http.Request) (*http.Response, error) {
		switch req.URL.Path {
		case "/unreached":
			return nil, errRefused
		case "/resent":
			refused := false
			once.Do(func() { refused = true })
			if refused {
				return nil, errRefused
			}
		case "/cancelled":
			req.Context().Value(cancelsKey{}).(context.CancelFunc)()
			return nil, context.Cause(req.Context())
		}
		return srv.RoundTrip(req)
	}
}

// A capped hold's probe that is not sent gives its turn back at once:
// the next request of the rule goes first in its place, rather than
// waiting a minute for an answer that cannot come. Its Prepare fails; its
// transparent resend cannot get its body; its caller cancels it before it
// is sent; it never reaches the server.
func TestAProbeNotSentGivesItsTurnBack(t *testing.T) {
	tests := []struct {
		name string
		// probe sends the request that goes first after the hold, with
		// ctx (a deadline two hours away), and returns its error.
		probe func(t *testing.T, tr *retryhttp.Transport, ctx context.Context) error
	}{
		{"its Prepare fails", func(t *testing.T, tr *retryhttp.Transport, ctx context.Context) error {
			ctx = retryhttp.WithPrepare(ctx, func(int, *http.Request) error { return errors.New("no token") })
			_, err := getWithin(t, tr, ctx, "/unprepared", 0)
			return err
		}},
		{"its resend cannot get its body", func(t *testing.T, tr *retryhttp.Transport, ctx context.Context) error {
			req, err := http.NewRequestWithContext(retryhttp.WithoutRetries(ctx), "PUT", "https://api.test/resent", strings.NewReader("x"))
			require.NoError(t, err)
			req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("body gone") }
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}},
		{"its caller cancels it before it is sent", func(t *testing.T, tr *retryhttp.Transport, ctx context.Context) error {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			_, err := getWithin(t, tr, context.WithValue(ctx, cancelsKey{}, context.CancelFunc(cancel)), "/cancelled", 0)
			return err
		}},
		{"it never reaches the server", func(t *testing.T, tr *retryhttp.Transport, ctx context.Context) error {
			_, err := getWithin(t, tr, retryhttp.WithoutRetries(ctx), "/unreached", 0)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
					if req.URL.Path == "/first" {
						return rt.Step{Status: 503, Header: aYear}
					}
					return rt.Step{}
				}}
				tr := &retryhttp.Transport{Base: probeBase(srv)}
				start := time.Now()
				_, err := getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/first", 0)
				require.NoError(t, err)

				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Hour)
				defer cancel()
				require.Error(t, tt.probe(t, tr, ctx), "the probe fails, nothing of it answered")
				ended := time.Since(start)
				within(t, ended, time.Minute, time.Second, "the probe went when the capped hold ended, and failed at once")

				status, err := getWithin(t, tr, ctx, "/next", 0)
				require.NoError(t, err)
				assert.Equal(t, 200, status)
				assert.Equal(t, ended, time.Since(start), "the next request goes first at once, waiting for nothing")
			})
		})
	}
}

// While a capped hold's probe is out, a request that could not wait for
// its answer fails at once with ErrHeld, nothing sent, as under the hold
// itself: the others wait for the answer at most until the probe's own
// request would give up on it (its deadline), at most maxServerDelay. A
// request that can wait goes when the answer comes, or, when the probe's
// request gives up, goes first in its place.
func TestAProbesWaitersKeepTheirDeadlines(t *testing.T) {
	tests := []struct {
		name string
		// probeWithin is the probe request's deadline from the start (0:
		// none); its answer would come 30 s after it is sent.
		probeWithin time.Duration
		// waiterWithin is the deadline, from 62 s, of a request that can
		// wait; it goes at goes(probed), the probe having gone at probed.
		waiterWithin time.Duration
		goes         func(probed time.Duration) time.Duration
	}{
		{"a slow probe is waited for", 0, time.Hour,
			func(probed time.Duration) time.Duration { return probed + 30*time.Second }},
		{"a probe that gives up gives its turn", 75 * time.Second, 20 * time.Second,
			func(time.Duration) time.Duration { return 75 * time.Second }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				sentAt := map[string]time.Duration{}
				var start time.Time
				srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
					mu.Lock()
					defer mu.Unlock()
					sentAt[req.URL.Path] = time.Since(start)
					switch req.URL.Path {
					case "/first":
						return rt.Step{Status: 503, Header: aYear}
					case "/probe":
						return rt.Step{Delay: 30 * time.Second}
					}
					return rt.Step{}
				}}
				tr := &retryhttp.Transport{Base: srv}
				start = time.Now()
				_, err := getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/first", 0)
				require.NoError(t, err)
				var wg sync.WaitGroup
				wg.Go(func() {
					_, _ = getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/probe", tt.probeWithin)
				})
				time.Sleep(62 * time.Second) // virtual time: the probe is out, its answer not yet in
				mu.Lock()
				probed, out := sentAt["/probe"]
				mu.Unlock()
				require.True(t, out, "the probe is out")
				within(t, probed, time.Minute, time.Second)

				asked := time.Now()
				_, err = getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/hasty", time.Second)
				require.ErrorIs(t, err, retryhttp.ErrHeld, "a request that cannot wait for the probe's answer")
				var held *retryhttp.HoldError
				require.ErrorAs(t, err, &held)
				assert.Equal(t, 503, held.Status)
				assert.Greater(t, held.Remaining, time.Second, "the probe's answer may come as late as its request allows")
				assert.LessOrEqual(t, held.Remaining, time.Minute)
				var e *retryhttp.Error
				require.ErrorAs(t, err, &e)
				assert.Zero(t, e.Attempts, "nothing sent")
				assert.Equal(t, asked, time.Now(), "refused at once")

				status, err := getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/patient", tt.waiterWithin)
				require.NoError(t, err, "a request that can wait for the probe's answer waits")
				assert.Equal(t, 200, status)
				wg.Wait()
				mu.Lock()
				defer mu.Unlock()
				assert.NotContains(t, sentAt, "/hasty")
				assert.Equal(t, tt.goes(probed), sentAt["/patient"], "it goes when the probe's answer comes, or its request gives up")
			})
		})
	}
}
