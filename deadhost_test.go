package retryhttp_test

import (
	"context"
	"math"
	"net"
	"net/http"
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
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// host is a server that can be down: a base whose every attempt dials
// through a dial.Dialer, as a net/http base does, and is answered by a
// kit Server in memory once its dial connects. It records when each dial
// reached the network.
type host struct {
	srv    *rt.Server
	dialer *dial.Dialer
	mu     sync.Mutex
	up     bool
	dials  []time.Time
	failed int // dials refused
}

func newHost(srv *rt.Server, up bool) *host {
	h := &host{srv: srv, up: up}
	h.dialer = &dial.Dialer{Dial: h.dial} // gRPC's backoff
	return h
}

func (h *host) dial(context.Context, string, string) (net.Conn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dials = append(h.dials, time.Now())
	if !h.up {
		h.failed++
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	c, peer := net.Pipe()
	peer.Close()
	return c, nil
}

func (h *host) setUp(up bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.up = up
}

// dialed returns when each dial reached the network.
func (h *host) dialed() []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Time(nil), h.dials...)
}

func (h *host) RoundTrip(req *http.Request) (*http.Response, error) {
	conn, err := h.dialer.DialContext(req.Context(), "tcp", "api.test:443")
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	conn.Close()
	return h.srv.RoundTrip(req)
}

// Calls to a host that is down fail within the policy's own waits, the
// fiftieth as fast as the first, however long the dial backoff has grown;
// the dials that reach the network follow gRPC's connection backoff (1 s,
// growing by 1.6, each ±20%), and a connection accepted brings the
// backoff back to its first step.
func TestDeadHostFiftyCalls(t *testing.T) {
	for _, method := range []string{"GET", "POST"} {
		t.Run(method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHost(script(rt.Step{}), false)
				tr := &retryhttp.Transport{Base: h, Policy: policy.Default()}
				for call := range 50 {
					start := time.Now()
					_, err := tr.RoundTrip(newRequest(t, t.Context(), method, "body"))
					took := time.Since(start)
					require.ErrorIs(t, err, syscall.ECONNREFUSED, "call %d", call)
					var rerr *retryhttp.Error
					require.ErrorAs(t, err, &rerr, "call %d", call)
					assert.Equal(t, 3, rerr.Attempts, "call %d: every attempt is spent", call)
					// policy.Default waits 100 ms then 200 ms, ±20%.
					assert.LessOrEqual(t, took, 360*time.Millisecond, "call %d took %v", call, took)
					time.Sleep(time.Second) // the caller's own pace
				}
				st := tr.Stats()
				assert.Zero(t, st.Total.BudgetRefusals, "refusals inside a window spend no token")
				assert.Equal(t, uint64(100), st.Total.ExtraAttempts)

				// Dials reach the network only once a window has ended,
				// and the next call after that dials: each gap is the
				// window (1.6^k s, ±20%) plus at most a call's pace.
				dials := h.dialed()
				require.GreaterOrEqual(t, len(dials), 5)
				for k := 1; k < len(dials); k++ {
					w := time.Duration(math.Min(math.Pow(1.6, float64(k-1)), 120) * float64(time.Second))
					gap := dials[k].Sub(dials[k-1])
					assert.GreaterOrEqual(t, gap, w*8/10, "gap %d", k)
					assert.LessOrEqual(t, gap, w*12/10+1400*time.Millisecond, "gap %d", k)
				}

				// The host comes back: once its window ends, a call
				// connects, and a failure after that opens a window of
				// the first step again.
				h.setUp(true)
				var resp *http.Response
				var err error
				for range 300 {
					if resp, err = tr.RoundTrip(newRequest(t, t.Context(), method, "body")); err == nil {
						break
					}
					time.Sleep(time.Second)
				}
				require.NoError(t, err, "the host is back")
				readAll(t, resp)
				h.setUp(false)
				_, err = tr.RoundTrip(newRequest(t, retryhttp.WithoutRetries(t.Context()), method, "body"))
				var be *dial.BackoffError
				require.ErrorAs(t, err, &be, "the resend meets the window the refusal opened")
				assert.InDelta(t, 1, be.Remaining.Seconds(), 0.2, "a connection ends the backoff")
			})
		})
	}
}

// A refused dial never reached the server: its attempt is sent again at
// once, once, for any method, under its own number, spending neither an
// attempt nor a budget token (the attempt's own outcome counts, once).
func TestRefusedDialIsResentOnce(t *testing.T) {
	refused := fail(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	hedged := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
		Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: time.Hour}}}}
	tests := []struct {
		name    string
		cfg     *policy.Config
		once    bool // WithoutRetries
		method  string
		steps   []rt.Step
		twice   bool          // the resend is refused too
		calls   int           // of the base
		took    time.Duration // the retry's backoff, if any
		status  int           // 0: an error
		header  string        // X-Retry-Attempts of the response
		arrived []string      // X-Retry-Attempts of each attempt the server saw
		tokens  float64       // of 10
	}{
		{name: "POST, default policy", cfg: policy.Default(), method: "POST",
			calls: 2, status: 200, arrived: []string{""}, tokens: 10},
		{name: "POST, no policy", cfg: policy.None(), method: "POST",
			calls: 2, status: 200, arrived: []string{""}, tokens: 10},
		{name: "POST, without retries", cfg: policy.Default(), once: true, method: "POST",
			calls: 2, status: 200, arrived: []string{""}, tokens: 10},
		{name: "POST refused twice, no policy", cfg: policy.None(), method: "POST", twice: true,
			calls: 2, tokens: 9},
		{name: "GET answered 503 then retried", cfg: retryConfig(2, 503), method: "GET", steps: []rt.Step{{Status: 503}, {}},
			calls: 3, took: 100 * time.Millisecond, status: 200, header: "1", arrived: []string{"", "1"}, tokens: 9.1},
		{name: "GET, hedged", cfg: hedged, method: "GET",
			calls: 2, status: 200, arrived: []string{""}, tokens: 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				steps := tc.steps
				if steps == nil {
					steps = []rt.Step{{}}
				}
				srv := script(steps...)
				cfg := tc.cfg
				cfg.Throttle = &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}
				do := []roundTripFunc{refused, srv.RoundTrip}
				if tc.twice {
					do = do[:1]
				}
				tr, base := newCalls(cfg, do...)
				ctx := t.Context()
				if tc.once {
					ctx = retryhttp.WithoutRetries(ctx)
				}
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, ctx, tc.method, "body"))
				assert.Equal(t, tc.took, time.Since(start), "the resend goes at once")
				assert.Equal(t, tc.calls, base.count(), "calls of the base")
				if tc.status == 0 {
					require.ErrorIs(t, err, syscall.ECONNREFUSED)
					var rerr *retryhttp.Error
					require.ErrorAs(t, err, &rerr)
					assert.Equal(t, 1, rerr.Attempts, "the resend is no attempt of its own")
				} else {
					require.NoError(t, err)
					readAll(t, resp)
					assert.Equal(t, tc.status, resp.StatusCode)
					assert.Equal(t, tc.header, resp.Header.Get(retryhttp.AttemptsHeader))
				}
				var arrived []string
				for _, a := range srv.Attempts() {
					arrived = append(arrived, a.Header.Get(retryhttp.AttemptsHeader))
				}
				assert.Equal(t, tc.arrived, arrived, "X-Retry-Attempts as the server saw them")
				st := tr.Stats()
				assert.Equal(t, uint64(1), st.Total.TransparentRetries)
				assert.Equal(t, uint64(max(len(tc.arrived)-1, 0)), st.Total.ExtraAttempts)
				assert.InDelta(t, tc.tokens, st.Hosts["api.test"].Tokens, 1e-9, "tokens")
			})
		})
	}
}

// A request that waits for ready waits out the window its host's refusal
// opened, within its deadline, even with no retry to come: sent once, its
// attempt goes again when the window ends and reaches the host, back by
// then.
func TestWaitForReadyWithoutRetries(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  *policy.Config
		ctx  func(context.Context) context.Context
	}{
		{"no policy", policy.None(), func(ctx context.Context) context.Context { return ctx }},
		{"without retries", policy.Default(), retryhttp.WithoutRetries},
		{"POST under a retry rule", policy.Default(), func(ctx context.Context) context.Context { return ctx }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHost(script(rt.Step{}), false)
				time.AfterFunc(500*time.Millisecond, func() { h.setUp(true) })
				tr := &retryhttp.Transport{Base: h, Policy: tc.cfg}
				ctx, cancel := context.WithTimeout(retryhttp.WithWaitForReady(tc.ctx(t.Context())), 10*time.Second)
				defer cancel()
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, ctx, "POST", "body"))
				require.NoError(t, err)
				readAll(t, resp)
				assert.Equal(t, 200, resp.StatusCode)
				took := time.Since(start)
				assert.GreaterOrEqual(t, took, 800*time.Millisecond, "the window (1 s, ±20%) was waited out")
				assert.LessOrEqual(t, took, 1200*time.Millisecond)
				assert.Len(t, h.dialed(), 2, "no dial inside the window")
				assert.Len(t, h.srv.Attempts(), 1, "the attempt reached the server")
			})
		})
	}
}

// A request that waits for ready fails at once, its one dial made, when
// the window its refusal opened ends past its deadline, whatever its rule.
func TestWaitForReadyPastTheDeadlineFailsAtOnce(t *testing.T) {
	hedged := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
		Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 100 * time.Millisecond}}}}
	for _, tc := range []struct {
		name string
		cfg  *policy.Config
	}{
		{"retried", policy.Default()},
		{"hedged", hedged},
		{"no policy", policy.None()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHost(script(rt.Step{}), false)
				tr := &retryhttp.Transport{Base: h, Policy: tc.cfg}
				ctx, cancel := context.WithTimeout(retryhttp.WithWaitForReady(t.Context()), 700*time.Millisecond)
				defer cancel()
				start := time.Now()
				_, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
				require.ErrorIs(t, err, syscall.ECONNREFUSED)
				assert.Less(t, time.Since(start), 700*time.Millisecond, "no wait up to the deadline")
				assert.Len(t, h.dialed(), 1)
			})
		})
	}
}
