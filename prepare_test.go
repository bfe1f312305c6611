package retryhttp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
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

// prepareLog records the calls of Prepare functions: which, for which
// attempt, and when.
type prepareLog struct {
	mu    sync.Mutex
	calls []string
	at    []time.Time
}

// prepare returns a Prepare, named name, that records its calls and signs
// the attempt with its number and the time, as an SDK that re-signs each
// attempt would.
func (l *prepareLog) prepare(name string) func(int, *http.Request) error {
	return func(attempt int, req *http.Request) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.calls = append(l.calls, fmt.Sprintf("%s %d", name, attempt))
		l.at = append(l.at, time.Now())
		req.Header.Set("Amz-Sdk-Request", fmt.Sprintf("attempt=%d; max=3", attempt))
		req.Header.Set("X-Amz-Date", time.Now().UTC().Format("20060102T150405Z"))
		req.Header.Add("X-Prepared-By", name)
		return nil
	}
}

func (l *prepareLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// Each attempt is prepared just before it is sent, after its wait: the
// Transport's Prepare, then the request's, with the attempt's number; what
// they set is the attempt's alone, and the caller's request is untouched.
func TestPrepareEachAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Status: 503}, rt.Step{Status: 503}, rt.Step{Body: "ok"})
		var log prepareLog
		tr := &retryhttp.Transport{Base: srv, Policy: retryConfig(3, 503), Prepare: log.prepare("transport")}
		req := newRequest(t, retryhttp.WithPrepare(t.Context(), log.prepare("call")), "PUT", "payload")
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, "ok", readAll(t, resp))

		assert.Equal(t, []string{"transport 1", "call 1", "transport 2", "call 2", "transport 3", "call 3"}, log.lines())
		srv.WantHeader(t, "Amz-Sdk-Request", "attempt=1; max=3", "attempt=2; max=3", "attempt=3; max=3")
		srv.WantHeader(t, retryhttp.AttemptsHeader, "", "1", "2")
		for i, a := range srv.Attempts() {
			assert.Equal(t, []string{"transport", "call"}, a.Header.Values("X-Prepared-By"), "attempt %d has its own header", i+1)
			assert.Equal(t, log.at[2*i].UTC().Format("20060102T150405Z"), a.Header.Get("X-Amz-Date"))
			assert.Equal(t, start.Add(a.At), log.at[2*i], "attempt %d is prepared as it is sent, after its wait", i+1)
			assert.Equal(t, "payload", string(a.Body))
		}
		assert.Empty(t, req.Header, "the caller's request is untouched")
	})
}

// A Prepare may change the attempt's URL and Host, for that attempt alone.
func TestPrepareChangesTheURL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Status: 503}, rt.Step{Body: "ok"})
		tr := &retryhttp.Transport{Base: srv, Policy: retryConfig(2, 503), Prepare: func(attempt int, req *http.Request) error {
			q := req.URL.Query()
			q.Set("X-Amz-Signature", fmt.Sprint(attempt))
			req.URL.RawQuery = q.Encode()
			return nil
		}}
		req := newRequest(t, t.Context(), "GET", "")
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
		at := srv.Attempts()
		require.Len(t, at, 2)
		assert.Equal(t, "X-Amz-Signature=1", at[0].RawQuery)
		assert.Equal(t, "X-Amz-Signature=2", at[1].RawQuery)
		assert.Empty(t, req.URL.RawQuery, "the caller's URL is untouched")
	})
}

// The transparent resend of an attempt that never reached the server is
// prepared again, under the attempt's number.
func TestPrepareTheResend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Body: "ok"})
		var log prepareLog
		tr, base := newCalls(retryConfig(3, 503), refuse, srv.RoundTrip)
		tr.Prepare = log.prepare("transport")
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "POST", "payload"))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, 2, base.count())
		assert.Equal(t, []string{"transport 1", "transport 1"}, log.lines())
		srv.WantHeader(t, "Amz-Sdk-Request", "attempt=1; max=3")
	})
}

// An error from a Prepare ends the request with it: nothing of the
// attempt is sent, the Error counts the attempts sent before, the answer
// kept for the caller is closed, and so is the caller's body.
func TestPrepareFails(t *testing.T) {
	errExpired := errors.New("credentials expired")
	for _, tc := range []struct {
		name    string
		failOn  int
		perCall bool
	}{
		{"first attempt", 1, false},
		{"retry", 2, false},
		{"retry, per call", 2, true},
		{"third attempt", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := script(rt.Step{Status: 503, Body: "busy"})
				tr, base := newCalls(retryConfig(3, 503), srv.RoundTrip)
				var calls []int
				prep := func(attempt int, _ *http.Request) error {
					calls = append(calls, attempt)
					if attempt == tc.failOn {
						return errExpired
					}
					return nil
				}
				ctx := t.Context()
				if tc.perCall {
					ctx = retryhttp.WithPrepare(ctx, prep)
				} else {
					tr.Prepare = prep
				}
				req := newRequest(t, ctx, "PUT", "")
				body := &trackedBody{Reader: strings.NewReader("payload")}
				req.Body = body
				resp, err := tr.RoundTrip(req)
				require.Nil(t, resp)
				require.ErrorIs(t, err, errExpired)
				require.ErrorIs(t, err, retryhttp.ErrNoResponse)
				var rerr *retryhttp.Error
				require.ErrorAs(t, err, &rerr)
				assert.Equal(t, tc.failOn-1, rerr.Attempts, "the attempts sent before")
				assert.Contains(t, err.Error(), fmt.Sprintf("preparing attempt %d: credentials expired", tc.failOn))
				assert.Len(t, srv.Attempts(), tc.failOn-1, "nothing of the attempt is sent")
				assert.Equal(t, tc.failOn-1, base.count())
				assert.Equal(t, int64(tc.failOn-1), base.closed.Load(), "every answer is closed")
				assert.Equal(t, int64(1), body.closes.Load(), "the caller's body is closed once")
				assert.Equal(t, tc.failOn, len(calls))
				assert.Equal(t, uint64(1), tr.Stats().Total.Requests)
				assert.Equal(t, uint64(max(0, tc.failOn-2)), tr.Stats().Total.ExtraAttempts, "an attempt not sent is not counted")
			})
		})
	}
}

// Under hedging, an error from the Prepare of a hedge ends the request:
// the hedge in flight is cancelled, and nothing more is sent.
func TestPrepareFailsAHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Delay: time.Minute, Body: "slow"})
		cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 10 * time.Millisecond}}}}
		errNoToken := errors.New("no token")
		tr, base := newCalls(cfg, srv.RoundTrip)
		tr.Prepare = func(attempt int, _ *http.Request) error {
			if attempt == 2 {
				return errNoToken
			}
			return nil
		}
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.Nil(t, resp)
		require.ErrorIs(t, err, errNoToken)
		var rerr *retryhttp.Error
		require.ErrorAs(t, err, &rerr)
		assert.Equal(t, 1, rerr.Attempts)
		assert.Equal(t, 10*time.Millisecond, time.Since(start), "ended when the hedge was due, not when attempt 1 answered")
		synctest.Wait()
		assert.Equal(t, []bool{true}, cancelled(srv), "the attempt in flight is cancelled")
		assert.Equal(t, 1, base.count())
	})
}

// Without a Prepare, a request's first attempt is the caller's own; with
// one, each attempt is a copy that the Prepare may change.
func TestPrepareGetsACopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []*http.Request
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			seen = append(seen, req)
			return script(rt.Step{}).RoundTrip(req)
		})
		req := newRequest(t, t.Context(), "GET", "")
		for _, prep := range []func(int, *http.Request) error{nil, func(int, *http.Request) error { return nil }} {
			tr := &retryhttp.Transport{Base: base, Prepare: prep}
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			readAll(t, resp)
		}
		require.Len(t, seen, 2)
		assert.Same(t, req, seen[0], "no Prepare: the caller's own request")
		assert.NotSame(t, req, seen[1], "a Prepare: a copy")
	})
}

// A hedge whose Prepare fails as the caller leaves (a Prepare that reads
// the caller's context, say) was never sent: whichever the loop meets
// first, the caller gone or the failure, the hooks hear of no outcome of
// it, and the statistics count no hedge of it cut off.
func TestPrepareFailsAHedgeAsTheCallerLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Delay: time.Minute, Body: "slow"})
		var log hookLog
		tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(3, 10*time.Millisecond), Hooks: log.hooks("")}
		// The loop picks either at random: enough requests meet both.
		const requests = 64
		for range requests {
			ctx, cancel := context.WithCancel(t.Context())
			tr.Prepare = func(attempt int, _ *http.Request) error {
				if attempt == 2 {
					cancel()
					return errors.New("no token")
				}
				return nil
			}
			resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
			require.Nil(t, resp)
			require.ErrorIs(t, err, context.Canceled)
		}
		var unsent []string
		cut := 0 // attempts 1 cut off: the others ended on the caller's leaving before the loop cut them
		for _, l := range log.lines("done") {
			switch {
			case strings.HasPrefix(l, "done 2 "):
				unsent = append(unsent, l)
			case strings.HasPrefix(l, "done 1 cancelled "):
				cut++
			}
		}
		assert.Empty(t, unsent, "outcomes of a hedge never sent")
		st := tr.Stats().Total
		assert.Equal(t, uint64(cut), st.HedgesCancelled, "attempts 1 cut off, and no hedge")
		assert.LessOrEqual(t, st.HedgesCancelled, uint64(requests))
	})
}
