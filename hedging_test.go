package retryhttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowServer answers attempt i (0-based) after delays[i] with statuses[i],
// on virtual time, or gives up when the attempt's context ends.
type slowServer struct {
	delays   []time.Duration
	statuses []int
	headers  []http.Header // per attempt, when set

	mu        sync.Mutex
	starts    []time.Duration // since t0, per attempt
	cancelled []bool
	t0        time.Time
}

func (s *slowServer) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	i := len(s.starts)
	s.starts = append(s.starts, time.Since(s.t0))
	s.cancelled = append(s.cancelled, false)
	d, code := s.delays[min(i, len(s.delays)-1)], s.statuses[min(i, len(s.statuses)-1)]
	header := http.Header{}
	if i < len(s.headers) && s.headers[i] != nil {
		header = s.headers[i].Clone()
	}
	s.mu.Unlock()
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	select {
	case <-time.After(d):
	case <-req.Context().Done():
		s.mu.Lock()
		s.cancelled[i] = true
		s.mu.Unlock()
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: code, Header: header, Request: req,
		Body: io.NopCloser(strings.NewReader(fmt.Sprint("attempt ", i+1)))}, nil
}

func hedgeConfig(maxAttempts int, delay time.Duration, nonFatal ...int) *policy.Config {
	return &policy.Config{Rules: []policy.Rule{{
		Name:  []policy.Name{{}},
		Hedge: &policy.Hedge{MaxAttempts: maxAttempts, HedgingDelay: delay, NonFatalStatusCodes: nonFatal},
	}}}
}

func runHedged(t *testing.T, srv *slowServer, cfg *policy.Config, method string) (*retryhttp.Transport, *http.Response, error) {
	t.Helper()
	srv.t0 = time.Now()
	tr := &retryhttp.Transport{Base: srv, Policy: cfg}
	resp, err := tr.RoundTrip(newRequest(t, t.Context(), method, ""))
	return tr, resp, err
}

func TestHedgeBeatsASlowFirstAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &slowServer{delays: []time.Duration{time.Second, 10 * time.Millisecond}, statuses: []int{200}}
		tr, resp, err := runHedged(t, srv, hedgeConfig(3, 50*time.Millisecond, 503), "GET")
		require.NoError(t, err)
		assert.Equal(t, 60*time.Millisecond, time.Since(srv.t0))
		assert.Equal(t, "attempt 2", readAll(t, resp))
		assert.Equal(t, "1", resp.Header.Get(retryhttp.AttemptsHeader))
		assert.Equal(t, []time.Duration{0, 50 * time.Millisecond}, srv.starts)
		assert.Equal(t, []bool{true, false}, srv.cancelled, "the loser is cancelled at once")
		st := tr.Stats().Total
		assertHedges(t, st, 1, 1, 1)
	})
}

func TestNonFatalStatusSendsTheNextHedgeAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &slowServer{delays: []time.Duration{10 * time.Millisecond}, statuses: []int{503, 200}}
		_, resp, err := runHedged(t, srv, hedgeConfig(3, time.Second, 503), "GET")
		require.NoError(t, err)
		assert.Equal(t, "attempt 2", readAll(t, resp))
		assert.Equal(t, []time.Duration{0, 10 * time.Millisecond}, srv.starts)
	})
}

func TestFatalStatusEndsTheHedging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &slowServer{delays: []time.Duration{time.Second, 10 * time.Millisecond}, statuses: []int{200, 500}}
		_, resp, err := runHedged(t, srv, hedgeConfig(3, 50*time.Millisecond, 503), "GET")
		require.NoError(t, err)
		assert.Equal(t, 500, resp.StatusCode)
		assert.Equal(t, "attempt 2", readAll(t, resp))
		assert.Equal(t, 2, len(srv.starts))
		assert.Equal(t, []bool{true, false}, srv.cancelled)
	})
}

func TestAllHedgesFailingReturnTheLastOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &slowServer{delays: []time.Duration{30 * time.Millisecond, 20 * time.Millisecond, 10 * time.Millisecond}, statuses: []int{503}}
		tr, resp, err := runHedged(t, srv, hedgeConfig(3, 0, 503), "GET")
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, "attempt 1", readAll(t, resp), "the last to arrive is handed back")
		assert.Equal(t, []time.Duration{0, 0, 0}, srv.starts, "a zero delay sends all at once")
		st := tr.Stats().Total
		assert.Equal(t, uint64(2), st.HedgesSent)
		assert.Equal(t, uint64(2), st.RetryAttemptsFailed)
		assert.Equal(t, uint64(0), st.HedgesWon)
	})
}

func TestHedgingOnlyForIdempotentRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &slowServer{delays: []time.Duration{time.Second}, statuses: []int{200}}
		_, resp, err := runHedged(t, srv, hedgeConfig(3, 50*time.Millisecond, 503), "POST")
		require.NoError(t, err)
		readAll(t, resp)
		assert.Len(t, srv.starts, 1)
	})
}

func TestCallerCancellationStopsEveryHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &slowServer{delays: []time.Duration{time.Hour}, statuses: []int{200}, t0: time.Now()}
		tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(3, 10*time.Millisecond, 503)}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, []bool{true, true, true}, srv.cancelled)
		// synctest.Test fails if any goroutine of the request outlives it.
	})
}

// hookLog records the waits and refusals a Transport reports.
type hookLog struct {
	mu      sync.Mutex
	waits   []retryhttp.Wait
	refused []retryhttp.Refused
}

func (l *hookLog) hooks() *retryhttp.Hooks {
	return &retryhttp.Hooks{
		Wait: func(w retryhttp.Wait) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.waits = append(l.waits, w)
		},
		Refused: func(r retryhttp.Refused) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.refused = append(l.refused, r)
		},
	}
}

func pushback(v string) http.Header { return http.Header{"X-Retry-Pushback-Ms": {v}} }

func TestNegativePushbackStopsFurtherHedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &slowServer{
			delays:   []time.Duration{time.Second, 10 * time.Millisecond},
			statuses: []int{200, 503},
			headers:  []http.Header{nil, pushback("-1")},
			t0:       time.Now(),
		}
		var log hookLog
		tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(3, 50*time.Millisecond, 503), Hooks: log.hooks()}
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, "attempt 1", readAll(t, resp), "the attempt in flight goes on")
		assert.Equal(t, time.Second, time.Since(srv.t0))
		assert.Equal(t, []time.Duration{0, 50 * time.Millisecond}, srv.starts, "no hedge after the pushback")
		assert.Equal(t, []retryhttp.Refused{{Request: resp.Request, Attempt: 3, Reason: retryhttp.RefusedServerDelay}}, log.refused)
		st := tr.Stats().Total
		assertHedges(t, st, 1, 0, 0)
		assert.Equal(t, uint64(1), st.RetryAttemptsFailed)
	})
}

func TestPushbackDelaysTheNextHedgeOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &slowServer{
			delays:   []time.Duration{time.Second, 10 * time.Millisecond, time.Second, 10 * time.Millisecond},
			statuses: []int{200, 503, 200, 200},
			headers:  []http.Header{nil, pushback("300")},
			t0:       time.Now(),
		}
		var log hookLog
		tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(4, 50*time.Millisecond, 503), Hooks: log.hooks()}
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, "attempt 4", readAll(t, resp))
		// Each hedge's delay is reported as it starts; the pushback
		// then takes the place of the delay before attempt 3.
		require.Len(t, log.waits, 4)
		w := log.waits[2]
		assert.Equal(t, 3, w.Attempt)
		assert.Equal(t, retryhttp.WaitPushback, w.Reason)
		for i, n := range map[int]int{0: 2, 1: 3, 3: 4} {
			assert.Equal(t, n, log.waits[i].Attempt)
			assert.Equal(t, retryhttp.WaitHedgeDelay, log.waits[i].Reason)
			assert.Equal(t, 50*time.Millisecond, log.waits[i].Length)
		}
		// 300 ms plus a jitter of less than a tenth of it, never minus.
		assert.GreaterOrEqual(t, w.Length, 300*time.Millisecond)
		assert.Less(t, w.Length, 330*time.Millisecond)
		require.Len(t, srv.starts, 4)
		assert.Equal(t, []time.Duration{0, 50 * time.Millisecond}, srv.starts[:2])
		assert.Equal(t, 60*time.Millisecond+w.Length, srv.starts[2], "the pushback runs from the 503")
		assert.Equal(t, 50*time.Millisecond, srv.starts[3]-srv.starts[2], "then the hedging delay again")
		assert.Equal(t, []bool{true, false, true, false}, srv.cancelled)
		st := tr.Stats().Total
		assertHedges(t, st, 3, 1, 2)
	})
}

func TestSpentBudgetSendsNoHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Six 503s take a budget of 10 tokens to 4: at most half, so
		// it refuses. The seventh attempt is the slow one that a hedge
		// would have raced.
		srv := &slowServer{
			delays:   []time.Duration{0, 0, 0, 0, 0, 0, time.Second},
			statuses: []int{503, 503, 503, 503, 503, 503, 200},
		}
		cfg := hedgeConfig(2, 0, 503)
		cfg.Throttle = &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		for range 3 {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			assert.Equal(t, 503, resp.StatusCode)
			readAll(t, resp)
		}
		require.Len(t, srv.starts, 6, "while the budget lasts, each request is hedged")
		before := tr.Stats().Total
		require.Equal(t, uint64(3), before.HedgesSent)
		require.Equal(t, uint64(0), before.BudgetRefusals)

		srv.t0 = time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, "attempt 7", readAll(t, resp))
		assert.Equal(t, time.Second, time.Since(srv.t0), "no hedge raced the slow attempt")
		assert.Len(t, srv.starts, 7)
		st := tr.Stats().Total
		assert.Equal(t, uint64(3), st.HedgesSent)
		assert.Equal(t, uint64(1), st.BudgetRefusals)
		assert.Equal(t, uint64(0), st.HedgesWon)
		assert.Equal(t, uint64(0), st.HedgesCancelled)
	})
}

func TestAdaptiveDelayFollowsTheQuantileOnceKnown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const fast, slow = 30 * time.Millisecond, time.Second
		delays := make([]time.Duration, 19, 23)
		for i := range delays {
			delays[i] = fast
		}
		delays = append(delays, slow, fast, slow, fast)
		srv := &slowServer{delays: delays, statuses: []int{200}, t0: time.Now()}
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
		require.Len(t, srv.starts, 19, "30 ms answers are not hedged at 100 ms")

		assert.Equal(t, "attempt 21", get())
		require.Len(t, srv.starts, 21)
		assert.Equal(t, 100*time.Millisecond, srv.starts[20]-srv.starts[19], "too few samples: hedgingDelay")

		// 20 latencies of 30 ms and the loser's 130 ms: the median is 30 ms.
		assert.Equal(t, "attempt 23", get())
		require.Len(t, srv.starts, 23)
		assert.Equal(t, fast, srv.starts[22]-srv.starts[21], "the median of recent latencies")
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
				srv := &slowServer{
					delays:   []time.Duration{time.Second, 10 * time.Millisecond},
					statuses: []int{200, 503},
					headers:  []http.Header{nil, pushback(v)},
				}
				var log hookLog
				tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(2, 50*time.Millisecond, 503), Hooks: log.hooks()}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				assert.Equal(t, "attempt 1", readAll(t, resp))
				assert.Len(t, srv.starts, 2)
				require.Len(t, log.waits, 1, "only the delay before attempt 2")
				assert.Equal(t, retryhttp.WaitHedgeDelay, log.waits[0].Reason)
				assert.Empty(t, log.refused)
			})
		})
	}
}

// assertHedges checks the hedge counters of c: hedges sent, won, and
// attempts cancelled.
func assertHedges(t *testing.T, c retryhttp.Counters, sent, won, cancelled uint64) {
	t.Helper()
	assert.Equal(t, [3]uint64{sent, won, cancelled}, [3]uint64{c.HedgesSent, c.HedgesWon, c.HedgesCancelled},
		"hedges sent, won, cancelled")
}
