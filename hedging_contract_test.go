package retryhttp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// The hedging contract, case by case, as DESIGN.md and gRPC's A6 state
// it: what the caller gets, what the server sees, and what Stats count.

// byNumber returns a kit Server whose step for each attempt goes by the
// attempt's own number, read from its attempts header, not by the order
// of arrival, its reply's body naming it: "attempt 1", "attempt 2"...
func byNumber(steps ...rt.Step) *rt.Server {
	return &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
		n := 1
		if v := req.Header.Get(retryhttp.AttemptsHeader); v != "" {
			fmt.Sscan(v, &n)
			n++
		}
		st := steps[min(n, len(steps))-1]
		st.Body = fmt.Sprint("attempt ", n)
		return st
	}}
}

// When every attempt the policy allows answers with a non-fatal status,
// the last to answer is handed back, marked with the attempts before it;
// every other answer is closed, and the server saw each hedge numbered.
func TestHedgingHandsBackTheLastNonFatalAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := byNumber(rt.Step{Delay: 40 * time.Millisecond, Status: 503},
			rt.Step{Delay: 100 * time.Millisecond, Status: 503}, rt.Step{Delay: 30 * time.Millisecond, Status: 503})
		tr, base := newCalls(hedgeConfig(3, 10*time.Millisecond, 503), srv.RoundTrip)
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, 110*time.Millisecond, time.Since(start), "attempt 2, sent at 10 ms, answers last")
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, "1", resp.Header.Get(retryhttp.AttemptsHeader))
		synctest.Wait()
		// A short answer kept for the caller may be read into memory
		// and closed already; each of the others is closed.
		assert.GreaterOrEqual(t, base.closed.Load(), int64(2), "the other answers are closed")
		assert.Equal(t, "attempt 2", readAll(t, resp))
		assert.Equal(t, int64(3), base.closed.Load(), "each answer is closed once")
		srv.WantHeader(t, retryhttp.AttemptsHeader, "", "1", "2")
		assert.Equal(t, []time.Duration{0, 10 * time.Millisecond, 20 * time.Millisecond}, arrivals(srv))
		assert.Equal(t, []bool{false, false, false}, cancelled(srv))
		st := tr.Stats().Total
		assert.Equal(t, uint64(2), st.Hedges)
		assert.Equal(t, uint64(2), st.ExtraAttemptsFailed)
		assert.Zero(t, st.HedgesCancelled, "none was cut off")
		assert.Zero(t, st.HedgesWon, "no answer won: the last failure came back")
	})
}

// A fatal status wins as a success does, even after an earlier
// non-fatal one: it is handed back, the non-fatal answer is closed and
// the attempt still in flight is cancelled.
func TestFatalStatusFromALateHedgeWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := byNumber(rt.Step{Delay: 30 * time.Millisecond, Status: 503},
			rt.Step{Delay: time.Hour}, rt.Step{Delay: 10 * time.Millisecond, Status: 500})
		tr, base := newCalls(hedgeConfig(4, 20*time.Millisecond, 503), srv.RoundTrip)
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, 40*time.Millisecond, time.Since(start), "the 503 at 30 ms sends hedge 3 at once")
		assert.Equal(t, 500, resp.StatusCode)
		assert.Equal(t, "2", resp.Header.Get(retryhttp.AttemptsHeader))
		assert.Equal(t, "attempt 3", readAll(t, resp))
		synctest.Wait()
		assert.Equal(t, int64(2), base.closed.Load(), "the 503 and the 500 are closed, once each")
		srv.WantAttempts(t, 3)
		assert.Equal(t, []time.Duration{0, 20 * time.Millisecond, 30 * time.Millisecond}, arrivals(srv))
		assert.Equal(t, []bool{false, true, false}, cancelled(srv))
		st := tr.Stats().Total
		assert.Equal(t, uint64(2), st.Hedges)
		assert.Equal(t, uint64(1), st.HedgesCancelled)
	})
}

// chunkedSource is a caller's body with no GetBody that yields one piece
// every 10 ms.
type chunkedSource struct {
	pieces [][]byte
	closes atomic.Int64
}

func (s *chunkedSource) Read(p []byte) (int, error) {
	if len(s.pieces) == 0 {
		return 0, io.EOF
	}
	time.Sleep(10 * time.Millisecond) // virtual time
	n := copy(p, s.pieces[0])
	if s.pieces[0] = s.pieces[0][n:]; len(s.pieces[0]) == 0 {
		s.pieces = s.pieces[1:]
	}
	return n, nil
}

func (s *chunkedSource) Close() error { s.closes.Add(1); return nil }

// A hedge may win while the first attempt is still sending its streamed
// body: the hedge reads what the first teed into the buffer and then the
// rest of the caller's body itself, the server gets the body whole, and
// the first attempt, cut off under its upload, gives the buffer back.
func TestHedgeWinsWhileTheFirstStillUploads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Body: "stored"})
		stuck := func(req *http.Request) (*http.Response, error) {
			defer req.Body.Close()
			var b [5]byte
			io.ReadFull(req.Body, b[:]) // the first piece, then the connection stalls
			<-req.Context().Done()
			return nil, context.Cause(req.Context())
		}
		tr, _ := newCalls(hedgeConfig(2, 5*time.Millisecond, 503), stuck, srv.RoundTrip)
		src := &chunkedSource{pieces: [][]byte{[]byte("01234"), []byte("56789"), []byte("abcde")}}
		req := newRequest(t, t.Context(), "PUT", "")
		req.Body, req.ContentLength = src, 15
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, "stored", readAll(t, resp))
		assert.Equal(t, "1", resp.Header.Get(retryhttp.AttemptsHeader))
		srv.WantBody(t, "0123456789abcde")
		synctest.Wait()
		assert.Zero(t, tr.Stats().Buffer.Buffered, "the buffer was given back")
		assert.Equal(t, int64(1), src.closes.Load(), "the caller's body is closed once")
		assertHedges(t, tr.Stats().Total, 1, 1, 1)
	})
}

// Only a request that may be sent twice is hedged: an idempotent method,
// or one with an idempotency key. Any other is sent once, whatever its
// first attempt gets: a non-fatal status comes back as it is.
func TestHedgingFollowsIdempotency(t *testing.T) {
	for _, tc := range []struct {
		method string
		sent   int
	}{
		{"GET", 2}, {"HEAD", 2}, {"OPTIONS", 2}, {"TRACE", 2}, {"PUT", 2}, {"DELETE", 2},
		{"POST", 1}, {"PATCH", 1}, {"CONNECT", 1},
	} {
		t.Run(tc.method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := numbered(rt.Step{Delay: 10 * time.Millisecond, Status: 503}, rt.Step{})
				tr, resp, err := runHedged(t, srv, hedgeConfig(2, time.Second, 503), tc.method)
				require.NoError(t, err)
				readAll(t, resp)
				srv.WantAttempts(t, tc.sent)
				assert.Equal(t, uint64(tc.sent-1), tr.Stats().Total.Hedges)
			})
		})
	}
}

// A request a hedging rule may not hedge still gets the retries every
// rule gives a request that is not idempotent: sent again, one attempt at
// a time, when the server says it did not act on it (a 429 or a pushback
// among the rule's non-fatal statuses, X-Should-Retry: true), waiting as
// it asks, a second at least after a bare 429. Any other answer comes
// back as it is.
func TestNonIdempotentUnderAHedgingRuleGetsTheRetriesTheServerAsksFor(t *testing.T) {
	h := func(kv ...string) http.Header {
		hd := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			hd.Set(kv[i], kv[i+1])
		}
		return hd
	}
	for _, tc := range []struct {
		name     string
		nonFatal []int
		first    rt.Step
		at       []time.Duration // arrivals; its length is the attempts sent
	}{
		{"429 with Retry-After", []int{429, 503}, rt.Step{Status: 429, Header: h("Retry-After", "2")}, []time.Duration{0, 2 * time.Second}},
		{"bare 429", []int{429, 503}, rt.Step{Status: 429}, []time.Duration{0, time.Second}},
		{"503 with pushback", []int{503}, rt.Step{Status: 503, Header: h("X-Retry-Pushback-Ms", "300")}, []time.Duration{0, 300 * time.Millisecond}},
		{"503 saying it did not act", []int{503}, rt.Step{Status: 503, Header: h("X-Should-Retry", "true")}, []time.Duration{0, 0}},
		{"bare 503", []int{503}, rt.Step{Status: 503}, []time.Duration{0}},
		{"503 with Retry-After", []int{503}, rt.Step{Status: 503, Header: h("Retry-After", "1")}, []time.Duration{0}},
		{"429 not listed", []int{503}, rt.Step{Status: 429, Header: h("Retry-After", "1")}, []time.Duration{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := numbered(tc.first, rt.Step{})
				cfg := hedgeConfig(3, 10*time.Millisecond, tc.nonFatal...)
				tr := &retryhttp.Transport{Base: srv, Policy: cfg}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "POST", "payload"))
				require.NoError(t, err)
				readAll(t, resp)
				got := arrivals(srv)
				require.Len(t, got, len(tc.at), "attempts sent")
				for i, want := range tc.at {
					// Server delays are jittered up by at most 10%.
					assert.GreaterOrEqual(t, got[i], want, "attempt %d", i+1)
					assert.LessOrEqual(t, got[i], want+want/10, "attempt %d", i+1)
				}
				srv.WantBody(t, "payload")
				wantStatus := tc.first.Status
				if len(tc.at) > 1 {
					wantStatus = 200
				}
				assert.Equal(t, wantStatus, resp.StatusCode)
				st := tr.Stats().Total
				assert.Equal(t, uint64(len(tc.at)-1), st.ExtraAttempts)
				assertHedges(t, st, 0, 0, 0)
			})
		})
	}
}

// A hedging config in JSON that says nothing of retryThrottling keeps the
// default budget of 100 tokens: against a host that answers every
// attempt 503, hedges stop once it is down to half.
func TestHedgingJSONKeepsTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := policy.ParseConfig([]byte(`{"methodConfig": [{"name": [{"method": "GET"}],
			"hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.05s", "nonFatalStatusCodes": [502, 503, 504]}}]}`))
		require.NoError(t, err)
		srv := script(rt.Step{Delay: 10 * time.Millisecond, Status: 503})
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		for range 40 {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			assert.Equal(t, 503, resp.StatusCode)
			readAll(t, resp)
		}
		// Sixteen requests of three 503s take it to 52, the 17th's two
		// to 50; each later request is sent once.
		srv.WantAttempts(t, 16*3+2+23)
		st := tr.Stats().Total
		assert.Equal(t, uint64(16*2+1), st.Hedges)
		assert.Equal(t, uint64(24), st.BudgetRefusals)
	})
}

// With no hedging delay every attempt goes at once, as many as the
// policy allows, while the budget has more than half its tokens; each
// hedge's non-fatal answer costs the budget a token, so that after two
// such requests the third is not hedged.
func TestZeroDelayHedgesAllAtOnceWithinTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := numbered(rt.Step{Delay: 10 * time.Millisecond, Status: 503})
		cfg := hedgeConfig(4, 0, 503)
		cfg.Throttle = &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		for i, want := range []struct {
			sent   int
			tokens float64
		}{{4, 6}, {4, 2}, {1, 1}} {
			before := srv.Count()
			start := time.Now()
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			readAll(t, resp)
			assert.Equal(t, 10*time.Millisecond, time.Since(start), "request %d", i+1)
			at := arrivals(srv)[before:]
			assert.Len(t, at, want.sent, "request %d", i+1)
			for _, a := range at {
				assert.Equal(t, at[0], a, "request %d: all at once", i+1)
			}
			assert.Equal(t, want.tokens, tr.Stats().Hosts["api.test"].Tokens, "request %d", i+1)
		}
		st := tr.Stats().Total
		assert.Equal(t, uint64(6), st.Hedges)
		assert.Equal(t, uint64(1), st.BudgetRefusals)
	})
}

// A hedge the budget would have let go when its delay began is refused
// when the delay ends if other requests have spent the budget meanwhile.
func TestBudgetIsAskedWhenTheHedgeIsDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slow atomic.Int64
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			if req.URL.Path == "/busy" {
				return rt.Step{Status: 503}
			}
			slow.Add(1)
			return rt.Step{Delay: time.Second, Body: "slow"}
		}}
		cfg := hedgeConfig(2, 50*time.Millisecond, 503)
		cfg.Throttle = &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		var wg sync.WaitGroup
		wg.Go(func() {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			if assert.NoError(t, err) {
				assert.Equal(t, "slow", readAll(t, resp))
			}
		})
		synctest.Wait() // its first attempt is out, its hedge due at 50 ms
		// Two requests of a 503 and its hedge's take 10 tokens to 6; a
		// third's 503 takes them to 5, half, and its hedge is refused.
		for range 3 {
			_, err := getWithin(t, tr, t.Context(), "/busy", 0)
			require.NoError(t, err)
		}
		require.Equal(t, 5.0, tr.Stats().Hosts["api.test"].Tokens)
		wg.Wait()
		assert.Equal(t, int64(1), slow.Load(), "the slow request sent no hedge")
		assert.Equal(t, uint64(2), tr.Stats().Total.BudgetRefusals)
	})
}

// An attempt refused at the dial under hedging is sent again at once
// under its own number; the next hedge still goes when the hedging delay
// ends, numbered after it.
func TestFirstAttemptRefusedAtTheDialUnderHedging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Delay: time.Second, Body: "attempt 1"}, rt.Step{Delay: 10 * time.Millisecond, Body: "attempt 2"})
		tr, base := newCalls(hedgeConfig(3, 50*time.Millisecond, 503), refuse, srv.RoundTrip)
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, "attempt 2", readAll(t, resp))
		assert.Equal(t, 60*time.Millisecond, time.Since(start))
		assert.Equal(t, 3, base.count())
		srv.WantHeader(t, retryhttp.AttemptsHeader, "", "1")
		assert.Equal(t, []time.Duration{0, 50 * time.Millisecond}, arrivals(srv))
		st := tr.Stats().Total
		assert.Equal(t, uint64(1), st.TransparentRetries)
		assertHedges(t, st, 1, 1, 1)
	})
}

// WithoutRetries sends a hedged request once; WithPolicy hedges a
// request the Transport's policy would not, or retries one it would
// hedge.
func TestHedgingUnderPerCallRules(t *testing.T) {
	hedge := &policy.Rule{Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 50 * time.Millisecond, NonFatalStatusCodes: []int{503}}}
	retry := &policy.Rule{Retry: &policy.Retry{MaxAttempts: 3, RetryableStatusCodes: []int{503},
		Backoff: policy.Exponential{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 2}}}
	cases := []struct {
		name string
		cfg  *policy.Config
		ctx  func(context.Context) context.Context
		at   []time.Duration // when the server saw the attempts
	}{
		{"WithoutRetries", hedgeConfig(3, 50*time.Millisecond, 503), retryhttp.WithoutRetries,
			[]time.Duration{0}},
		{"WithoutRetries over WithPolicy", policy.None(),
			func(ctx context.Context) context.Context {
				return retryhttp.WithoutRetries(retryhttp.WithPolicy(ctx, hedge))
			}, []time.Duration{0}},
		{"WithPolicy hedges", policy.None(),
			func(ctx context.Context) context.Context { return retryhttp.WithPolicy(ctx, hedge) },
			[]time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond}},
		{"WithPolicy retries", hedgeConfig(3, 50*time.Millisecond, 503),
			func(ctx context.Context) context.Context { return retryhttp.WithPolicy(ctx, retry) },
			[]time.Duration{0, 400 * time.Millisecond, 900 * time.Millisecond}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// Every answer is a 503 after 300 ms: hedges overlap,
				// retries follow one another.
				srv := numbered(rt.Step{Delay: 300 * time.Millisecond, Status: 503})
				tr := &retryhttp.Transport{Base: srv, Policy: tc.cfg}
				resp, err := tr.RoundTrip(newRequest(t, tc.ctx(t.Context()), "GET", ""))
				require.NoError(t, err)
				assert.Equal(t, 503, resp.StatusCode)
				readAll(t, resp)
				assert.Equal(t, tc.at, arrivals(srv))
			})
		})
	}
}

// The quantile delay is the host's own: latencies learnt of one host do
// not set the delay of another, until that one has enough of its own.
func TestQuantileDelayIsPerHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			if req.URL.Host == "fast.test" {
				return rt.Step{Delay: 30 * time.Millisecond}
			}
			return rt.Step{Delay: time.Second}
		}}
		cfg := hedgeConfig(2, 100*time.Millisecond, 503)
		cfg.Rules[0].Hedge.HedgingDelayQuantile = 0.5
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		get := func(host string) {
			req, err := http.NewRequestWithContext(t.Context(), "GET", "https://"+host+"/x", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			readAll(t, resp)
		}
		for range 25 {
			get("fast.test")
		}
		for _, host := range []string{"slow.test", "FAST.test"} {
			before := srv.Count()
			get(host)
			at := arrivals(srv)[before:]
			require.Len(t, at, 2, host)
			want := map[string]time.Duration{"slow.test": 100 * time.Millisecond, "FAST.test": 30 * time.Millisecond}[host]
			assert.Equal(t, want, at[1]-at[0], host)
		}
	})
}

// A verdict's wait holds the next hedge back as a pushback does: the
// hedge goes when the wait ends, not at once and not when the hedging
// delay ends; a wait longer than the policy waits sends no further hedge.
func TestVerdictWaitHoldsTheNextHedge(t *testing.T) {
	cases := []struct {
		name string
		wait time.Duration
		at   []time.Duration // when hedge 2 may reach the server: [lo, hi); nil: never
		body string
	}{
		{"a short wait", 300 * time.Millisecond, []time.Duration{310 * time.Millisecond, 340 * time.Millisecond}, "attempt 2"},
		{"a wait too long", 2 * time.Minute, nil, "attempt 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := numbered(rt.Step{Delay: 10 * time.Millisecond}, rt.Step{Delay: 10 * time.Millisecond})
				var log hookLog
				tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(3, 50*time.Millisecond, 503), Hooks: log.hooks("")}
				tr.Classify = func(attempt int, _ *http.Response, _ error) retryhttp.Verdict {
					if attempt == 1 {
						return retryhttp.Retryable.After(tc.wait)
					}
					return retryhttp.UsePolicy
				}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				assert.Equal(t, tc.body, readAll(t, resp))
				at := arrivals(srv)
				if tc.at == nil {
					assert.Len(t, at, 1, "no hedge")
					assert.Equal(t, retrytrace.RefusedDelayTooLong, log.refused()[0].Reason)
					return
				}
				require.Len(t, at, 2)
				assert.GreaterOrEqual(t, at[1], tc.at[0])
				assert.Less(t, at[1], tc.at[1])
				assert.Equal(t, retrytrace.WaitClassify, log.waits()[1].Reason)
			})
		})
	}
}

// A hold that another request sets holds every hedge of the rule: a
// hedge due while the hold lasts is not sent, and the attempt in flight
// answers the request.
func TestHoldHoldsTheHedgesOfARequestInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			if req.URL.Path == "/limit" {
				return rt.Step{Delay: 10 * time.Millisecond, Status: 429, Header: http.Header{"Retry-After": {"2"}}}
			}
			return rt.Step{Delay: time.Second, Body: "slow"}
		}}
		cfg := hedgeConfig(3, 50*time.Millisecond, 503)
		cfg.Hold = &policy.Hold{}
		var log hookLog
		tr := &retryhttp.Transport{Base: srv, Policy: cfg, Hooks: log.hooks("")}
		var wg sync.WaitGroup
		wg.Go(func() {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			if assert.NoError(t, err) {
				assert.Equal(t, "slow", readAll(t, resp))
			}
		})
		synctest.Wait()
		status, err := getWithin(t, tr, t.Context(), "/limit", 0)
		require.NoError(t, err)
		require.Equal(t, 429, status)
		wg.Wait()
		assert.Equal(t, 2, srv.Count(), "no hedge went during the hold")
		assert.Zero(t, tr.Stats().Total.Hedges)
		var held bool
		for _, w := range log.waits() {
			held = held || w.Reason == retrytrace.WaitHold
		}
		assert.True(t, held, "the hedge waited for the hold")
	})
}

// A non-fatal answer sends the next hedge at once, and the hedging delay
// then runs again from that hedge: the one after it is a delay later.
func TestNonFatalAnswerRestartsTheHedgingDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := byNumber(rt.Step{Delay: 30 * time.Millisecond, Status: 503},
			rt.Step{Delay: time.Hour}, rt.Step{Delay: 10 * time.Millisecond})
		tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(3, 100*time.Millisecond, 503)}
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, "attempt 3", readAll(t, resp))
		assert.Equal(t, []time.Duration{0, 30 * time.Millisecond, 130 * time.Millisecond}, arrivals(srv))
		assert.Equal(t, []bool{false, true, false}, cancelled(srv))
	})
}

// The last non-fatal answer handed back when every attempt failed is the
// caller's to read to its end, however long it takes: its attempt's
// context lives until the caller closes its body.
func TestLastNonFatalAnswerIsReadWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		long := string(bytes.Repeat([]byte("x"), 200<<10)) // past what is read ahead
		slow := rt.Step{Delay: 10 * time.Millisecond, Status: 503, Body: long, Trickle: rt.Rate{Bytes: 10 << 10, Every: time.Millisecond}}
		srv := script(slow)
		tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(2, 5*time.Millisecond, 503)}
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode)
		time.Sleep(time.Second)
		assert.Equal(t, long, readAll(t, resp))
		srv.WantAttempts(t, 2)
		// The first answer, discarded, was longer than a drain reads:
		// it was cut off; the second was sent whole.
		assert.Equal(t, []bool{true, false}, cancelled(srv))
	})
}

// The retry budget counts what each attempt showed: each non-fatal answer
// takes a token, a win gives back tokenRatio, and an attempt cut off
// because another won counts for nothing.
func TestBudgetCountsEachHedgeOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			if req.URL.Path == "/busy" {
				return rt.Step{Delay: 10 * time.Millisecond, Status: 503}
			}
			if req.Header.Get(retryhttp.AttemptsHeader) == "1" {
				return rt.Step{Delay: 10 * time.Millisecond}
			}
			return rt.Step{Delay: time.Hour}
		}}
		cfg := hedgeConfig(3, 0, 503)
		cfg.Throttle = &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		_, err := getWithin(t, tr, t.Context(), "/busy", 0)
		require.NoError(t, err)
		assert.Equal(t, 7.0, tr.Stats().Hosts["api.test"].Tokens, "three 503s")
		_, err = getWithin(t, tr, t.Context(), "/x", 0)
		require.NoError(t, err)
		assert.InDelta(t, 7.1, tr.Stats().Hosts["api.test"].Tokens, 1e-9, "one win; the others were cut off")
		st := tr.Stats().Total
		assertHedges(t, st, 4, 1, 2)
	})
}

// Attempt 1 refused at the dial after hedge 2 has gone is resent under
// its own number: with no attempts header, spending no budget, and
// counted as no further hedge.
func TestLateDialRefusalIsResentUnderItsNumber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Delay: time.Hour}, rt.Step{Delay: 100 * time.Millisecond, Body: "resent"})
		late := func(req *http.Request) (*http.Response, error) {
			time.Sleep(60 * time.Millisecond)
			return refuse(req)
		}
		tr, _ := newCalls(hedgeConfig(2, 50*time.Millisecond, 503), late, srv.RoundTrip)
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, "resent", readAll(t, resp))
		assert.Empty(t, resp.Header.Values(retryhttp.AttemptsHeader), "the first attempt's answer")
		srv.WantHeader(t, retryhttp.AttemptsHeader, "1", "")
		assert.Equal(t, []time.Duration{0, 10 * time.Millisecond}, arrivals(srv))
		hs := tr.Stats().Hosts["api.test"]
		assert.Equal(t, uint64(1), hs.TransparentRetries)
		assertHedges(t, hs.Counters, 1, 0, 1)
		assert.InDelta(t, 100, hs.Tokens, 1e-9, "nothing spent")
	})
}
