package retryhttp_test

import (
	"context"
	"fmt"
	"net/http"
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

// numbered returns a kit Server that plays steps as a Script does, the
// last one repeating, each reply's body naming its attempt in the order
// of arrival: "attempt 1", "attempt 2"...
func numbered(steps ...rt.Step) *rt.Server {
	return &rt.Server{Choose: func(n int, _ *http.Request) rt.Step {
		st := steps[min(n, len(steps))-1]
		st.Body = fmt.Sprint("attempt ", n)
		return st
	}}
}

func hedgeConfig(maxAttempts int, delay time.Duration, nonFatal ...int) *policy.Config {
	return &policy.Config{Rules: []policy.Rule{{
		Name:  []policy.Name{{}},
		Hedge: &policy.Hedge{MaxAttempts: maxAttempts, HedgingDelay: delay, NonFatalStatusCodes: nonFatal},
	}}}
}

func runHedged(t *testing.T, srv *rt.Server, cfg *policy.Config, method string) (*retryhttp.Transport, *http.Response, error) {
	t.Helper()
	tr := &retryhttp.Transport{Base: srv, Policy: cfg}
	resp, err := tr.RoundTrip(newRequest(t, t.Context(), method, ""))
	return tr, resp, err
}

func TestHedgeBeatsASlowFirstAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := numbered(rt.Step{Delay: time.Second}, rt.Step{Delay: 10 * time.Millisecond})
		start := time.Now()
		tr, resp, err := runHedged(t, srv, hedgeConfig(3, 50*time.Millisecond, 503), "GET")
		require.NoError(t, err)
		assert.Equal(t, 60*time.Millisecond, time.Since(start))
		assert.Equal(t, "attempt 2", readAll(t, resp))
		assert.Equal(t, "1", resp.Header.Get(retryhttp.AttemptsHeader))
		srv.WantArrivals(t, 0, 50*time.Millisecond)
		assert.Equal(t, []bool{true, false}, cancelled(srv), "the loser is cancelled at once")
		st := tr.Stats().Total
		assertHedges(t, st, 1, 1, 1)
	})
}

func TestNonFatalStatusSendsTheNextHedgeAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := numbered(rt.Step{Delay: 10 * time.Millisecond, Status: 503}, rt.Step{Delay: 10 * time.Millisecond})
		start := time.Now()
		_, resp, err := runHedged(t, srv, hedgeConfig(3, time.Second, 503), "GET")
		require.NoError(t, err)
		assert.Equal(t, 20*time.Millisecond, time.Since(start), "the first attempt is sent at once")
		assert.Equal(t, "attempt 2", readAll(t, resp))
		srv.WantArrivals(t, 0, 10*time.Millisecond)
	})
}

func TestFatalStatusEndsTheHedging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := numbered(rt.Step{Delay: time.Second}, rt.Step{Delay: 10 * time.Millisecond, Status: 500})
		_, resp, err := runHedged(t, srv, hedgeConfig(3, 50*time.Millisecond, 503), "GET")
		require.NoError(t, err)
		assert.Equal(t, 500, resp.StatusCode)
		assert.Equal(t, "attempt 2", readAll(t, resp))
		srv.WantAttempts(t, 2)
		assert.Equal(t, []bool{true, false}, cancelled(srv))
	})
}

func TestAllHedgesFailingReturnTheLastOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := numbered(rt.Step{Delay: 30 * time.Millisecond, Status: 503},
			rt.Step{Delay: 20 * time.Millisecond, Status: 503}, rt.Step{Delay: 10 * time.Millisecond, Status: 503})
		start := time.Now()
		tr, resp, err := runHedged(t, srv, hedgeConfig(3, 0, 503), "GET")
		require.NoError(t, err)
		assert.Equal(t, 30*time.Millisecond, time.Since(start), "all are sent at once")
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, "attempt 1", readAll(t, resp), "the last to arrive is handed back")
		assert.Equal(t, []time.Duration{0, 0, 0}, arrivals(srv), "a zero delay sends all at once")
		st := tr.Stats().Total
		assert.Equal(t, uint64(2), st.Hedges)
		assert.Equal(t, uint64(2), st.ExtraAttemptsFailed)
		assert.Equal(t, uint64(0), st.HedgesWon)
	})
}

func TestHedgingOnlyForIdempotentRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := numbered(rt.Step{Delay: time.Second})
		_, resp, err := runHedged(t, srv, hedgeConfig(3, 50*time.Millisecond, 503), "POST")
		require.NoError(t, err)
		readAll(t, resp)
		srv.WantAttempts(t, 1)
	})
}

func TestCallerCancellationStopsEveryHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := numbered(rt.Step{Delay: time.Hour})
		tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(3, 10*time.Millisecond, 503)}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, []bool{true, true, true}, cancelled(srv))
		// synctest.Test fails if any goroutine of the request outlives it.
	})
}

func pushback(v string) http.Header { return http.Header{"X-Retry-Pushback-Ms": {v}} }

func TestNegativePushbackStopsFurtherHedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := numbered(rt.Step{Delay: time.Second},
			rt.Step{Delay: 10 * time.Millisecond, Status: 503, Header: pushback("-1")})
		var log hookLog
		tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(3, 50*time.Millisecond, 503), Hooks: log.hooks("")}
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, "attempt 1", readAll(t, resp), "the attempt in flight goes on")
		assert.Equal(t, time.Second, time.Since(start))
		assert.Equal(t, []time.Duration{0, 50 * time.Millisecond}, arrivals(srv), "no hedge after the pushback")
		assert.Equal(t, []retrytrace.RefusedInfo{{Request: resp.Request, Rule: "*", Attempt: 3, Reason: retrytrace.RefusedNoRetry}}, log.refused())
		st := tr.Stats().Total
		assertHedges(t, st, 1, 0, 0)
		assert.Equal(t, uint64(1), st.ExtraAttemptsFailed)
	})
}

func TestPushbackDelaysTheNextHedgeOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := numbered(rt.Step{Delay: time.Second},
			rt.Step{Delay: 10 * time.Millisecond, Status: 503, Header: pushback("300")},
			rt.Step{Delay: time.Second}, rt.Step{Delay: 10 * time.Millisecond})
		var log hookLog
		tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(4, 50*time.Millisecond, 503), Hooks: log.hooks("")}
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		took := time.Since(start)
		require.NoError(t, err)
		assert.Equal(t, "attempt 4", readAll(t, resp))
		// Each hedge's delay is reported as it starts; the pushback
		// then takes the place of the delay before attempt 3.
		waits := log.waits()
		require.Len(t, waits, 4)
		w := waits[2]
		assert.Equal(t, 3, w.Attempt)
		assert.Equal(t, retrytrace.WaitPushback, w.Reason)
		for i, n := range map[int]int{0: 2, 1: 3, 3: 4} {
			assert.Equal(t, n, waits[i].Attempt)
			assert.Equal(t, retrytrace.WaitHedgeDelay, waits[i].Reason)
			assert.Equal(t, 50*time.Millisecond, waits[i].Delay)
		}
		// 300 ms plus a jitter of less than a tenth of it, never minus.
		assert.GreaterOrEqual(t, w.Delay, 300*time.Millisecond)
		assert.Less(t, w.Delay, 330*time.Millisecond)
		starts := arrivals(srv)
		require.Len(t, starts, 4)
		assert.Equal(t, []time.Duration{0, 50 * time.Millisecond}, starts[:2])
		assert.Equal(t, 60*time.Millisecond+w.Delay, starts[2], "the pushback runs from the 503")
		assert.Equal(t, 50*time.Millisecond, starts[3]-starts[2], "then the hedging delay again")
		assert.Equal(t, starts[3]+10*time.Millisecond, took, "the first attempt is sent at once")
		assert.Equal(t, []bool{true, false, true, false}, cancelled(srv))
		st := tr.Stats().Total
		assertHedges(t, st, 3, 1, 2)
	})
}

func TestSpentBudgetSendsNoHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Six 503s take a budget of 10 tokens to 4: at most half, so
		// it refuses. The seventh attempt is the slow one that a hedge
		// would have raced. Each 503 comes a millisecond after its
		// request's two attempts are sent, so that neither is counted
		// before the hedge is due.
		busy := rt.Step{Delay: time.Millisecond, Status: 503}
		srv := numbered(busy, busy, busy, busy, busy, busy, rt.Step{Delay: time.Second})
		cfg := hedgeConfig(2, 0, 503)
		cfg.Throttle = &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		for range 3 {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			assert.Equal(t, 503, resp.StatusCode)
			readAll(t, resp)
		}
		require.Equal(t, 6, srv.Count(), "while the budget lasts, each request is hedged")
		before := tr.Stats().Total
		require.Equal(t, uint64(3), before.Hedges)
		require.Equal(t, uint64(0), before.BudgetRefusals)

		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, "attempt 7", readAll(t, resp))
		assert.Equal(t, time.Second, time.Since(start), "no hedge raced the slow attempt")
		srv.WantAttempts(t, 7)
		st := tr.Stats().Total
		assert.Equal(t, uint64(3), st.Hedges)
		assert.Equal(t, uint64(1), st.BudgetRefusals)
		assert.Equal(t, uint64(0), st.HedgesWon)
		assert.Equal(t, uint64(0), st.HedgesCancelled)
	})
}

func TestAdaptiveDelayFollowsTheQuantileOnceKnown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const fast, slow = 30 * time.Millisecond, time.Second
		steps := make([]rt.Step, 19, 23)
		for i := range steps {
			steps[i].Delay = fast
		}
		steps = append(steps, rt.Step{Delay: slow}, rt.Step{Delay: fast}, rt.Step{Delay: slow}, rt.Step{Delay: fast})
		srv := numbered(steps...)
		cfg := hedgeConfig(2, 100*time.Millisecond, 503)
		cfg.Rules[0].Hedge.HedgingDelayQuantile = 0.5
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		get := func() string {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			return readAll(t, resp)
		}
		for range 19 {
			get() // 19 latencies of 30 ms: one short of the minimum
		}
		require.Equal(t, 19, srv.Count(), "30 ms answers are not hedged at 100 ms")

		assert.Equal(t, "attempt 21", get())
		starts := arrivals(srv)
		require.Len(t, starts, 21)
		assert.Equal(t, 100*time.Millisecond, starts[20]-starts[19], "too few samples: hedgingDelay")

		// 20 latencies of 30 ms and the loser's 130 ms: the median is 30 ms.
		assert.Equal(t, "attempt 23", get())
		starts = arrivals(srv)
		require.Len(t, starts, 23)
		assert.Equal(t, fast, starts[22]-starts[21], "the median of recent latencies")
		st := tr.Stats().Total
		assertHedges(t, st, 2, 2, 2)
	})
}

func TestPushbackAfterTheLastHedgeReportsNothing(t *testing.T) {
	// Every attempt the policy allows is already sent when the 503
	// comes: no wait or refusal concerns an attempt 3 that could never
	// be made, as the retry loop reports none past maxAttempts either.
	for _, v := range []string{"300", "-1"} {
		t.Run(v, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := numbered(rt.Step{Delay: time.Second},
					rt.Step{Delay: 10 * time.Millisecond, Status: 503, Header: pushback(v)})
				var log hookLog
				tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(2, 50*time.Millisecond, 503), Hooks: log.hooks("")}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				assert.Equal(t, "attempt 1", readAll(t, resp))
				srv.WantAttempts(t, 2)
				waits := log.waits()
				require.Len(t, waits, 1, "only the delay before attempt 2")
				assert.Equal(t, retrytrace.WaitHedgeDelay, waits[0].Reason)
				assert.Empty(t, log.refused())
			})
		})
	}
}

// assertHedges checks the hedge counters of c: hedges sent, won, and
// attempts cancelled.
func assertHedges(t *testing.T, c retryhttp.Counters, sent, won, cancelled uint64) {
	t.Helper()
	assert.Equal(t, [3]uint64{sent, won, cancelled}, [3]uint64{c.Hedges, c.HedgesWon, c.HedgesCancelled},
		"hedges sent, won, cancelled")
}

// The answer handed back carries the number of attempts sent before the
// one that produced it, whichever it is: none when all failed and the
// first one's answer came last, as when the first answered.
func TestHedgedAnswerCountsTheAttemptsBeforeIt(t *testing.T) {
	cases := []struct {
		name   string
		steps  []rt.Step // by the attempt's number, not its arrival
		delay  time.Duration
		body   string
		header []string
	}{
		{"the third wins while the others run", []rt.Step{{Delay: time.Hour}, {Delay: time.Hour}, {Delay: time.Millisecond}},
			10 * time.Millisecond, "attempt 3", []string{"2"}},
		{"all fail, the first answers last", []rt.Step{{Delay: 30 * time.Millisecond, Status: 503},
			{Delay: 20 * time.Millisecond, Status: 503}, {Delay: 10 * time.Millisecond, Status: 503}},
			0, "attempt 1", nil},
		{"all fail, the third answers last", []rt.Step{{Delay: 10 * time.Millisecond, Status: 503},
			{Delay: 10 * time.Millisecond, Status: 503}, {Delay: 10 * time.Millisecond, Status: 503}},
			time.Second, "attempt 3", []string{"2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// Hedges sent at once reach the server in any order: each
				// step goes by the attempt's own number.
				srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
					n := 1
					if v := req.Header.Get(retryhttp.AttemptsHeader); v != "" {
						fmt.Sscan(v, &n)
						n++
					}
					st := tc.steps[n-1]
					st.Body = fmt.Sprint("attempt ", n)
					return st
				}}
				_, resp, err := runHedged(t, srv, hedgeConfig(3, tc.delay, 503), "GET")
				require.NoError(t, err)
				assert.Equal(t, tc.body, readAll(t, resp))
				assert.Equal(t, tc.header, resp.Header.Values(retryhttp.AttemptsHeader))
			})
		})
	}
}

// Under a hedging rule the classifier is asked about each attempt that
// answered, numbered as the hedges were sent; Retryable and
// RetryableUnprocessed make an answer non-fatal, so the next hedge goes at
// once, and Final makes a non-fatal status win.
func TestClassifyUnderHedging(t *testing.T) {
	cases := []struct {
		name    string
		verdict retryhttp.Verdict // for attempt 1 and 2
		status  int               // of attempts 1 and 2; attempt 3 answers 200
		asked   []int
		body    string
	}{
		{"UsePolicy", retryhttp.UsePolicy, 503, []int{1, 2, 3}, "attempt 3"},
		{"Retryable", retryhttp.Retryable, 200, []int{1, 2, 3}, "attempt 3"},
		{"RetryableUnprocessed", retryhttp.RetryableUnprocessed, 200, []int{1, 2, 3}, "attempt 3"},
		{"Final", retryhttp.Final, 503, []int{1}, "attempt 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				step := rt.Step{Delay: 10 * time.Millisecond, Status: tc.status}
				srv := numbered(step, step, rt.Step{Delay: 10 * time.Millisecond})
				tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(3, time.Hour, 503)}
				var asked []int
				tr.Classify = func(attempt int, resp *http.Response, err error) retryhttp.Verdict {
					asked = append(asked, attempt)
					if attempt < 3 {
						return tc.verdict
					}
					return retryhttp.UsePolicy
				}
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				assert.Equal(t, tc.body, readAll(t, resp))
				assert.Equal(t, tc.asked, asked)
				assert.Equal(t, time.Duration(len(tc.asked))*10*time.Millisecond, time.Since(start),
					"each hedge went as the one before it answered, not after the hedging delay")
			})
		})
	}
}

// A POST is hedged when it carries an idempotency key, as a retry rule
// retries it.
func TestHedgingAnIdempotencyKey(t *testing.T) {
	for _, header := range []string{"", "Idempotency-Key", "X-Idempotency-Key"} {
		t.Run(header, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := numbered(rt.Step{Delay: time.Second})
				tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(3, 50*time.Millisecond, 503)}
				req := newRequest(t, t.Context(), "POST", "payload")
				if header != "" {
					req.Header.Set(header, "k-1")
				}
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				readAll(t, resp)
				want := 3
				if header == "" {
					want = 1
				}
				srv.WantAttempts(t, want)
				srv.WantBody(t, "payload")
			})
		})
	}
}

// OmitAttemptsHeader holds for hedges too: none carries the header, and
// the winning hedge's answer is not marked.
func TestHedgesOmitTheAttemptsHeaderWhenAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := numbered(rt.Step{Delay: time.Hour}, rt.Step{Delay: time.Hour}, rt.Step{Delay: time.Millisecond})
		tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(3, 10*time.Millisecond, 503), OmitAttemptsHeader: true}
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, "attempt 3", readAll(t, resp))
		assert.NotContains(t, resp.Header, retryhttp.AttemptsHeader)
		srv.WantHeader(t, retryhttp.AttemptsHeader, "", "", "")
	})
}
