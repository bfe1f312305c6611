package retryhttp_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// getWithin sends a GET of path through tr with a deadline d from now
// (none when d is 0), and returns its status or its error.
func getWithin(t *testing.T, tr *retryhttp.Transport, ctx context.Context, path string, d time.Duration) (int, error) {
	t.Helper()
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, "GET", "https://api.test"+path, nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	readAll(t, resp)
	return resp.StatusCode, nil
}

// A server cannot hold a host for longer than the policy waits for it: a
// Retry-After of a year, or an HTTP date a year ahead, holds it for
// maxServerDelay at most. When such a capped hold ends, one request goes
// first and the others wait for its answer, which here holds the host
// again; after the next cap, the answer is a success and they all go.
// ResetBackoff ends a hold at once.
func TestAHoldLastsAtMostMaxServerDelay(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header func() http.Header
	}{
		{"delay-seconds", func() http.Header { return http.Header{"Retry-After": {"31536000"}} }},
		{"an HTTP date", func() http.Header {
			return http.Header{"Retry-After": {time.Now().Add(365 * 24 * time.Hour).UTC().Format(http.TimeFormat)}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				answers := 0
				srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
					mu.Lock()
					defer mu.Unlock()
					answers++
					if answers <= 2 { // the first answer, and the first probe's
						return rt.Step{Status: 503, Header: tc.header(), Delay: time.Second}
					}
					return rt.Step{Body: "ok"}
				}}
				tr := &retryhttp.Transport{Base: srv} // policy.Default: maxServerDelay 60 s
				status, err := getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/first", 0)
				require.NoError(t, err)
				require.Equal(t, 503, status)

				var wg sync.WaitGroup
				statuses := make(chan int, 5)
				for range 5 {
					wg.Go(func() {
						status, err := getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/later", 2*time.Hour)
						assert.NoError(t, err, "a request that can wait out the capped hold waits")
						statuses <- status
					})
				}
				wg.Wait()
				close(statuses)
				got := map[int]int{}
				for s := range statuses {
					got[s]++
				}
				assert.Equal(t, map[int]int{503: 1, 200: 4}, got, "the first probe meets the hold again; the rest are answered")
				at := arrivals(srv)
				require.Len(t, at, 1+5, "the first request, then each of the five once")
				// The answer came after a second: the hold, capped at 60 s,
				// ends at 61 s, and its waiters go within a second of it.
				within(t, at[1]-at[0], 61*time.Second, time.Second, "the first probe goes when the cap ends")
				within(t, at[2]-at[1], 61*time.Second, time.Second,
					"the others wait for the probe's answer, which holds the host again, then one goes first again")
				for _, a := range at[3:] {
					assert.GreaterOrEqual(t, a, at[2], "the rest go after the second probe's answer")
				}

				// A fresh hold of a year, ended by the owner's word.
				srv.Choose = func(int, *http.Request) rt.Step { return rt.Step{Status: 503, Header: tc.header()} }
				_, err = getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/again", 0)
				require.NoError(t, err)
				srv.Choose = func(int, *http.Request) rt.Step { return rt.Step{} }
				tr.ResetBackoff("API.test")
				before := time.Now()
				status, err = getWithin(t, tr, t.Context(), "/after-reset", time.Second)
				require.NoError(t, err)
				assert.Equal(t, 200, status)
				assert.Equal(t, before, time.Now(), "nothing held after ResetBackoff")
			})
		})
	}
}

// A request whose deadline falls after the hold's end, but inside the
// spread of release points after it, waits and goes out before its
// deadline: the deadline is judged against the hold's end.
func TestARequestThatCanWaitOutAHoldGoesInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		first := true
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
			mu.Lock()
			defer mu.Unlock()
			if first {
				first = false
				return rt.Step{Status: 429, Header: http.Header{"Retry-After": {"10"}}}
			}
			return rt.Step{}
		}}
		tr := &retryhttp.Transport{Base: srv}
		start := time.Now()
		_, err := getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/limit", 0)
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				status, err := getWithin(t, tr, t.Context(), "/wait", time.Until(start.Add(10*time.Second+50*time.Millisecond)))
				if assert.NoError(t, err) {
					assert.Equal(t, 200, status)
				}
			})
		}
		wg.Wait()
		at := arrivals(srv)
		require.Len(t, at, 21)
		for _, a := range at[1:] {
			assert.GreaterOrEqual(t, a, 10*time.Second)
			assert.Less(t, a, 10*time.Second+50*time.Millisecond)
		}
	})
}

// While a hold lasts, nothing of its key is sent: not even the
// transparent resend of an attempt that never reached the server, under
// a retry rule and a hedging rule alike.
func TestAResendWaitsOutAHold(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  *policy.Config
	}{
		{"retry", policy.Default()},
		{"hedge", &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: time.Hour, NonFatalStatusCodes: []int{503}}}}, Hold: &policy.Hold{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
					if req.URL.Path == "/limit" {
						return rt.Step{Status: 429, Header: http.Header{"Retry-After": {"30"}}}
					}
					return rt.Step{}
				}}
				release := make(chan struct{})
				var refused sync.Once
				base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
					if req.URL.Path == "/resent" {
						done := false
						refused.Do(func() { <-release; done = true })
						if done { // its first try: refused, after the hold was set
							return nil, errRefused
						}
					}
					return srv.RoundTrip(req)
				})
				tr := &retryhttp.Transport{Base: base, Policy: tc.cfg}
				var wg sync.WaitGroup
				wg.Go(func() {
					status, err := getWithin(t, tr, t.Context(), "/resent", 0)
					if assert.NoError(t, err) {
						assert.Equal(t, 200, status)
					}
				})
				synctest.Wait() // its first try is in flight
				_, err := getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/limit", 0)
				require.NoError(t, err)
				close(release)
				wg.Wait()
				at := arrivals(srv)
				require.Len(t, at, 2)
				assert.GreaterOrEqual(t, at[1]-at[0], 30*time.Second, "the resend waited for the hold's end")
			})
		})
	}
}
