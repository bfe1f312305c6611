package retryhttp_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/dial"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// failingDial refuses every connection and records when each dial came.
type failingDial struct {
	mu    sync.Mutex
	t0    time.Time
	times []time.Duration
}

func (f *failingDial) dial(context.Context, string, string) (net.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.times = append(f.times, time.Since(f.t0))
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
}

// A request that waits for ready waits out a dial refused by the
// address's backoff: it never reached the server, so it is retried by
// policy for any method, after at least the time left in the window, and
// never dialled inside it.
func TestDialBackoffIsWaitedOutForReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &failingDial{t0: time.Now()}
		d := &dial.Dialer{Dial: f.dial, Backoff: policy.Table{Steps: []time.Duration{time.Second}}}
		base := &http.Transport{DialContext: d.DialContext}
		defer base.CloseIdleConnections()
		cfg := retryConfig(3, 503)
		withWaits(cfg, 10*time.Millisecond, time.Second)
		var log hookLog
		tr := &retryhttp.Transport{Base: base, Policy: cfg, Hooks: log.hooks("")}
		req := newRequest(t, retryhttp.WithWaitForReady(t.Context()), "POST", "body")
		_, err := tr.RoundTrip(req)

		require.ErrorIs(t, err, syscall.ECONNREFUSED)
		var rerr *retryhttp.Error
		require.ErrorAs(t, err, &rerr)
		assert.Equal(t, 3, rerr.Attempts, "a POST is retried: it was never sent")
		// Attempt 1's transparent resend meets the window its failure
		// opened, so attempt 2 waits for the window rather than the
		// 10 ms backoff. Attempt 3, after a 20 ms backoff, meets the
		// window of attempt 2 and is made again when it ends, without
		// spending an attempt.
		waits := log.waits()
		require.Len(t, waits, 3)
		assert.Equal(t, []retrytrace.WaitReason{retrytrace.WaitDialBackoff, retrytrace.WaitBackoff, retrytrace.WaitDialBackoff},
			[]retrytrace.WaitReason{waits[0].Reason, waits[1].Reason, waits[2].Reason})
		assert.Equal(t, []int{2, 3, 3}, []int{waits[0].Attempt, waits[1].Attempt, waits[2].Attempt})
		assert.Equal(t, 20*time.Millisecond, waits[1].Delay)
		// One dial per attempt, none inside a window: Table jitters a
		// 1 s step into [0.5 s, 1.5 s].
		require.Len(t, f.times, 3)
		assert.Equal(t, waits[0].Delay, f.times[1])
		assert.Equal(t, f.times[1]+waits[1].Delay+waits[2].Delay, f.times[2])
		for i := 1; i < len(f.times); i++ {
			assert.GreaterOrEqual(t, f.times[i]-f.times[i-1], 500*time.Millisecond)
		}
	})
}

// A window longer than the caller's deadline is not waited for, even by a
// request that waits for ready.
func TestDialBackoffPastTheDeadlineIsNotWaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &failingDial{t0: time.Now()}
		d := &dial.Dialer{Dial: f.dial, Backoff: policy.Table{Steps: []time.Duration{time.Minute}}}
		base := &http.Transport{DialContext: d.DialContext}
		defer base.CloseIdleConnections()
		tr := &retryhttp.Transport{Base: base, Policy: retryConfig(3, 503)}
		ctx, cancel := context.WithTimeout(retryhttp.WithWaitForReady(t.Context()), 10*time.Second)
		defer cancel()
		start := time.Now()
		_, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
		require.ErrorIs(t, err, syscall.ECONNREFUSED)
		assert.Zero(t, time.Since(start), "the outcome comes back at once")
		assert.Len(t, f.times, 1)
	})
}

// A dial refused inside a backoff window fails fast, as a gRPC call does
// on a channel in transient failure: it spends an attempt but no budget
// token, the next attempt waits the policy's backoff, not the window, and
// a request to a host that is down takes no longer than the policy's own
// waits, call after call.
func TestDialBackoffFailsFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &failingDial{t0: time.Now()}
		d := &dial.Dialer{Dial: f.dial} // gRPC's backoff: 1 s growing by 1.6 to 120 s
		base := &http.Transport{DialContext: d.DialContext}
		defer base.CloseIdleConnections()
		cfg := policy.Default()
		cfg.Throttle = &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1} // retries stop at 5 tokens
		var log hookLog
		tr := &retryhttp.Transport{Base: base, Policy: cfg, Hooks: log.hooks("")}
		for call := range 10 {
			before := len(log.waits())
			start := time.Now()
			_, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			took := time.Since(start)
			require.ErrorIs(t, err, syscall.ECONNREFUSED, "call %d: the cause of the window is kept", call)
			var rerr *retryhttp.Error
			require.ErrorAs(t, err, &rerr)
			assert.Equal(t, 3, rerr.Attempts, "call %d", call)
			waits := log.waits()[before:]
			require.Len(t, waits, 2, "call %d", call)
			for _, w := range waits {
				assert.Equal(t, retrytrace.WaitBackoff, w.Reason, "call %d: got a wait for %s", call, w.Reason)
			}
			// policy.Default waits 100 ms then 200 ms, each within ±20%.
			assert.LessOrEqual(t, took, 360*time.Millisecond, "call %d took %v", call, took)
		}
		// Only the dials outside a window went to the network: the
		// first, and one each time a window ended.
		assert.Less(t, len(f.times), 10)
		// Refusals inside a window spend no token: the budget still
		// allows retries after 30 attempts, of which only the few
		// that dialled cost anything.
		st := tr.Stats()
		assert.Zero(t, st.Total.BudgetRefusals)
		assert.Equal(t, uint64(20), st.Total.ExtraAttempts)
	})
}

// Transport.ResetBackoff reaches the Dialer of the Transport's own base:
// a server that is back is dialled at once instead of after the window.
func TestResetBackoffThroughTheTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close()) // the server is down

		tr := &retryhttp.Transport{Policy: &policy.Config{}} // transparent retries only
		defer tr.CloseIdleConnections()
		get := func() error {
			req, err := http.NewRequestWithContext(t.Context(), "GET", "http://"+addr+"/", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}
		require.ErrorIs(t, get(), syscall.ECONNREFUSED)

		ln, err = net.Listen("tcp", addr) // the server is back
		if err != nil {
			t.Skipf("port %s taken again meanwhile: %v", addr, err)
		}
		srv := httptest.NewUnstartedServer(http.NotFoundHandler())
		srv.Listener.Close()
		srv.Listener = ln
		srv.Start()
		defer srv.Close()

		err = get()
		require.ErrorIs(t, err, dial.ErrBackoff, "still inside the window, no time has passed")
		var dbe *dial.BackoffError
		require.ErrorAs(t, err, &dbe)
		assert.Positive(t, dbe.Remaining)

		tr.ResetBackoff(addr)
		assert.NoError(t, get())
	})
}

func TestDialBackoffErrorIsNotAnHTTPError(t *testing.T) {
	err := &dial.BackoffError{Addr: "h:1", Remaining: time.Second}
	assert.True(t, errors.Is(err, dial.ErrBackoff))
	assert.Contains(t, err.Error(), "h:1")
}

// Calls to a closed port fail with the dial's own failure first, and with
// the same text call after call, however much of the window is left.
func TestDialBackoffErrorNamesTheCauseFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close()) // the server is down

		d := &dial.Dialer{}
		base := &http.Transport{DialContext: d.DialContext}
		defer base.CloseIdleConnections()
		tr := &retryhttp.Transport{Base: base, Policy: retryConfig(3, 503)}
		want := "retryhttp: no response after 3 attempt(s): dial tcp " + addr +
			": connect: connection refused (retryhttp: address in dial backoff)"
		for call := range 2 {
			req, err := http.NewRequestWithContext(t.Context(), "GET", "http://"+addr+"/", nil)
			require.NoError(t, err)
			_, err = tr.RoundTrip(req)
			require.ErrorIs(t, err, dial.ErrBackoff, "call %d", call)
			assert.EqualError(t, err, want, "call %d", call)
		}
	})
}

// Under a hedging rule, a request that waits for ready sends the hedge
// after one refused by a dial backoff window once the window ends, instead
// of spending every hedge on the window at once.
func TestWaitForReadyUnderHedging(t *testing.T) {
	for _, ready := range []bool{false, true} {
		t.Run(fmt.Sprint("ready=", ready), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &failingDial{t0: time.Now()}
				d := &dial.Dialer{Dial: f.dial, Backoff: policy.Table{Steps: []time.Duration{time.Second}}}
				base := &http.Transport{DialContext: d.DialContext}
				defer base.CloseIdleConnections()
				cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
					Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: time.Hour}}}}
				tr := &retryhttp.Transport{Base: base, Policy: cfg}
				ctx := t.Context()
				if ready {
					ctx = retryhttp.WithWaitForReady(ctx)
				}
				start := time.Now()
				_, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
				require.ErrorIs(t, err, syscall.ECONNREFUSED)
				if !ready {
					assert.Zero(t, time.Since(start), "every hedge met the window at once")
					assert.Len(t, f.times, 1)
					return
				}
				// Attempt 1's resend met the window its refusal
				// opened: attempt 2 dials when it ends (Table jitters
				// 1 s into [0.5 s, 1.5 s]); its refusal opens another,
				// which attempt 3 meets.
				require.Len(t, f.times, 2)
				assert.GreaterOrEqual(t, f.times[1], 500*time.Millisecond)
				assert.Equal(t, f.times[1], time.Since(start))
			})
		})
	}
}
