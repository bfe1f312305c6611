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
	return &http.Response{StatusCode: code, Header: http.Header{}, Request: req,
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
		assert.Equal(t, uint64(1), st.HedgesSent)
		assert.Equal(t, uint64(1), st.HedgesWon)
		assert.Equal(t, uint64(1), st.HedgesCancelled)
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
