package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
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

// When a retry cannot get its body (GetBody fails), the response that
// asked for the retry comes back whole: it was kept until the body was
// in hand.
func TestRetryWithoutBodyReturnsTheLastResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, s := newScripted(retryConfig(3, 503), rt.Step{Status: 503, Body: "busy"}, rt.Step{})
		var log hookLog
		tr.Hooks = log.hooks("")
		req := newRequest(t, t.Context(), "PUT", "payload")
		errGone := errors.New("body gone")
		req.GetBody = func() (io.ReadCloser, error) { return nil, errGone }
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, "busy", readAll(t, resp), "the kept response's body is whole")
		s.WantAttempts(t, 1)
		refused := log.refused()
		require.Len(t, refused, 1)
		assert.Equal(t, retrytrace.RefusedBuffer, refused[0].Reason)
		assert.Equal(t, 2, refused[0].Attempt)
	})
}

// After a network error, the error comes back with the GetBody failure
// that stopped the retry, both visible to errors.Is.
func TestRetryWithoutBodyAfterAnErrorKeepsBothCauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, _ := newCalls(retryConfig(3, 503), fail(io.ErrUnexpectedEOF))
		req := newRequest(t, t.Context(), "PUT", "payload")
		errGone := errors.New("body gone")
		req.GetBody = func() (io.ReadCloser, error) { return nil, errGone }
		_, err := tr.RoundTrip(req)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		require.ErrorIs(t, err, errGone)
		var rerr *retryhttp.Error
		require.ErrorAs(t, err, &rerr)
		assert.Equal(t, 1, rerr.Attempts)
	})
}

// stuckBody is a response body that ignores every context: its Read
// returns only once it is closed.
type stuckBody struct {
	closed chan struct{}
	once   atomic.Bool
}

func (b *stuckBody) Read([]byte) (int, error) {
	<-b.closed
	return 0, io.ErrClosedPipe
}

func (b *stuckBody) Close() error {
	if b.once.CompareAndSwap(false, true) {
		close(b.closed)
	}
	return nil
}

// A discarded response whose body ignores its context, from a custom
// base, delays the request by the drain bound only: the body is closed
// when the bound passes.
func TestDrainOfABodyThatIgnoresItsContextIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := &stuckBody{closed: make(chan struct{})}
		busy := func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 503, Header: http.Header{}, Body: stuck, ContentLength: -1, Request: req}, nil
		}
		cfg := retryConfig(2, 503)
		withWaits(cfg, time.Millisecond, time.Millisecond)
		tr, _ := newCalls(cfg, busy, script(rt.Step{Body: "ok"}).RoundTrip)
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, "ok", readAll(t, resp))
		took := time.Since(start)
		// The drain bound (100 ms) and the backoff (1 ms, +-20%).
		assert.LessOrEqual(t, took, 102*time.Millisecond, "the request took %v", took)
		assert.True(t, stuck.once.Load(), "the stuck body was closed")
		synctest.Wait()
	})
}

// endedBody is a response body that ends when it is closed: its Read
// waits for Close, then reports the end of the body, as a base's body
// may once its connection is gone. It counts its Close calls.
type endedBody struct {
	closed chan struct{}
	closes atomic.Int32
}

func (b *endedBody) Read([]byte) (int, error) {
	<-b.closed
	return 0, io.EOF
}

func (b *endedBody) Close() error {
	if b.closes.Add(1) == 1 {
		close(b.closed)
	}
	return nil
}

// A kept response discarded while its read-ahead waits, whose body then
// ends, is closed once: by the discard, not again by the read-ahead that
// saw the end.
func TestKeptBodyEndedByItsCloseIsClosedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ended := &endedBody{closed: make(chan struct{})}
		busy := func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 503, Header: http.Header{}, Body: ended, ContentLength: -1, Request: req}, nil
		}
		cfg := retryConfig(2, 503)
		withWaits(cfg, time.Millisecond, time.Millisecond)
		tr, _ := newCalls(cfg, busy, script(rt.Step{Body: "ok"}).RoundTrip)
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, "ok", readAll(t, resp))
		synctest.Wait()
		assert.Equal(t, int32(1), ended.closes.Load(), "closes of the discarded body")
	})
}

// A server delay too large to represent, or absurd, is never waited for,
// even with no limit on server delays: the response comes back at once.
func TestSaturatedServerDelaysAreNeverWaited(t *testing.T) {
	for name, h := range map[string]http.Header{
		"Retry-After digits":    {"Retry-After": {"99999999999999999999"}},
		"Retry-After year 9999": {"Retry-After": {"Fri, 31 Dec 9999 23:59:59 GMT"}},
		"pushback digits":       {"X-Retry-Pushback-Ms": {"99999999999999999999"}},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := retryConfig(3, 503)
				cfg.MaxServerDelay = time.Duration(math.MaxInt64)
				tr, s := newScripted(cfg, rt.Step{Status: 503, Header: h}, rt.Step{})
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				readAll(t, resp)
				assert.Equal(t, 503, resp.StatusCode)
				assert.Zero(t, time.Since(start))
				s.WantAttempts(t, 1)
			})
		})
	}
}

// A first attempt's answer carries no attempts header the server made
// up; with the header switched off, the Transport leaves it alone and
// sends none.
func TestAttemptsHeaderIsTheTransports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		madeUp := http.Header{retryhttp.AttemptsHeader: {"41"}}
		tr, _ := newScripted(retryConfig(3, 503), rt.Step{Header: madeUp})
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Empty(t, resp.Header.Values(retryhttp.AttemptsHeader))

		tr, s := newScripted(retryConfig(3, 503), rt.Step{Status: 503}, rt.Step{Header: madeUp})
		tr.OmitAttemptsHeader = true
		resp, err = tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, []string{"41"}, resp.Header.Values(retryhttp.AttemptsHeader), "the server's own, untouched")
		s.WantHeader(t, retryhttp.AttemptsHeader, "", "") // not sent when switched off
	})
}

// Over HTTP/2, a stream the server resets on an idempotent request is
// retried, as the same failure over HTTP/1.1 (an EOF) is; a POST is not,
// as the server may have acted on it.
func TestHTTP2StreamResetIsRetried(t *testing.T) {
	for method, want := range map[string]int{"GET": 200, "POST": 0} {
		t.Run(method, func(t *testing.T) {
			// The first stream is reset with INTERNAL_ERROR once its
			// request is read.
			srv := script(rt.Step{Fault: rt.Reset}, rt.Step{Body: "ok"})
			ts := srv.StartHTTP2(t)
			base := ts.Client().Transport.(*http.Transport)
			t.Cleanup(base.CloseIdleConnections)
			cfg := retryConfig(3, 503)
			withWaits(cfg, time.Millisecond, time.Millisecond)
			tr := &retryhttp.Transport{Base: base, Policy: cfg}
			req, err := http.NewRequestWithContext(t.Context(), method, ts.URL, strings.NewReader("x"))
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			if want == 0 {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "INTERNAL_ERROR")
				srv.WantAttempts(t, 1)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "ok", readAll(t, resp))
			assert.Equal(t, 2, resp.ProtoMajor)
			srv.WantAttempts(t, 2)
		})
	}
}

// A hook that panics while hedges are in flight does not hand the state
// of its request to the next one: that gets its own answer.
func TestHookPanicLeavesTheNextRequestWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			if req.URL.Path == "/a" && req.Header.Get(retryhttp.AttemptsHeader) == "" {
				return rt.Step{Status: 503} // non-fatal: the next hedge goes at once
			}
			return rt.Step{Delay: time.Second, Body: "answer for " + req.URL.Path}
		}}
		// Attempt 2 goes at once after the 503 and answers after a
		// second; attempt 3, 10 ms later, starts while it is in flight.
		cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 10 * time.Millisecond, NonFatalStatusCodes: []int{503}}}}}
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		get := func(path string, h *retrytrace.Hooks) (*http.Response, error) {
			req, err := http.NewRequestWithContext(retrytrace.WithHooks(t.Context(), h), "GET", "https://api.test"+path, nil)
			require.NoError(t, err)
			return tr.RoundTrip(req)
		}
		func() {
			defer func() { assert.Equal(t, "hook bug", recover()) }()
			get("/a", &retrytrace.Hooks{AttemptStart: func(a retrytrace.AttemptStartInfo) {
				if a.Attempt == 3 {
					panic("hook bug")
				}
			}})
			t.Error("RoundTrip returned")
		}()
		for range 3 {
			resp, err := get("/b", nil)
			require.NoError(t, err)
			assert.Equal(t, "answer for /b", readAll(t, resp))
		}
		synctest.Wait()
	})
}

// A base that times out on its own (a middleware's context.WithTimeout)
// reports a timeout the caller can see as one; under policy.None it is
// not sent again.
func TestBaseTimeoutKeepsItsIdentity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Fault: rt.Hang})
		var sent atomic.Int64
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			sent.Add(1)
			ctx, cancel := context.WithTimeout(req.Context(), time.Second)
			defer cancel()
			return srv.RoundTrip(req.WithContext(ctx))
		})
		tr := &retryhttp.Transport{Base: base, Policy: policy.None()}
		_, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		var ne interface{ Timeout() bool }
		require.ErrorAs(t, err, &ne)
		assert.True(t, ne.Timeout(), "a timeout, as net.Error has it")
		assert.Equal(t, int64(1), sent.Load(), "sent once")
	})
}

// A hedge that could not get its body was never sent: the error counts
// only the attempts that were.
func TestUnsentHedgeIsNotCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: time.Millisecond}}}}
		tr, base := newCalls(cfg, fail(io.ErrUnexpectedEOF))
		req := newRequest(t, t.Context(), "PUT", "payload")
		req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("body gone") }
		_, err := tr.RoundTrip(req)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		var rerr *retryhttp.Error
		require.ErrorAs(t, err, &rerr)
		assert.Equal(t, 1, rerr.Attempts, "got %d attempts, want the one sent", rerr.Attempts)
		assert.Equal(t, 1, base.count())
	})
}

// A hedge that wins goes back to the caller within the drain bound,
// whatever the base does with the attempts that lost: one whose base
// ignores its cancellation and answers late is counted as cancelled at
// once, and its answer is closed when it comes.
func TestHedgeWinnerIsNotHeldByALoser(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var closed atomic.Int64
		deaf := func(req *http.Request) (*http.Response, error) {
			time.Sleep(600 * time.Millisecond) // ignores its context
			body := &closeCounter{ReadCloser: io.NopCloser(strings.NewReader("late")), n: &closed}
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: body, Request: req}, nil
		}
		srv := script(rt.Step{Delay: 10 * time.Millisecond, Body: "fast"})
		tr, _ := newCalls(hedgeConfig(2, 10*time.Millisecond, 503), deaf, srv.RoundTrip)
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		took := time.Since(start)
		require.NoError(t, err)
		assert.Equal(t, "fast", readAll(t, resp))
		assert.LessOrEqual(t, took, 20*time.Millisecond+100*time.Millisecond, "the winner came back after %v", took)
		st := tr.Stats().Total
		assert.Equal(t, uint64(1), st.HedgesWon)
		assert.Equal(t, uint64(1), st.HedgesCancelled, "the loser is counted")
		time.Sleep(time.Second) // the loser answers at 600 ms
		synctest.Wait()
		assert.Equal(t, int64(1), closed.Load(), "the loser's late answer is closed")
	})
}

// A base's odd response, with no Header and no Body, reaches the caller
// with both, on the first attempt as on any other.
func TestBaseResponseWithoutHeaderOrBody(t *testing.T) {
	for _, cfg := range []*policy.Config{nil, policy.None(), hedgeConfig(2, time.Second, 503)} {
		tr, _ := newCalls(cfg, func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200}, nil
		})
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		require.NotNil(t, resp.Header, "the header")
		require.NotNil(t, resp.Body, "the body")
		assert.Empty(t, readAll(t, resp))
	}
}

// A base that answers with no Body just as the per-attempt timeout fires
// (it ignored the cancellation, then answered) is counted as the timeout
// it was, never a panic.
func TestBaseResponseWithoutBodyAtThePerAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			<-req.Context().Done()
			return &http.Response{StatusCode: 200}, nil
		})
		cfg := retryConfig(2, 503)
		cfg.Rules[0].Retry.PerAttemptTimeout = time.Second
		tr := &retryhttp.Transport{Base: base, Policy: cfg}
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.Nil(t, resp)
		var rerr *retryhttp.Error
		require.ErrorAs(t, err, &rerr)
		assert.Equal(t, 2, rerr.Attempts, "both attempts timed out")
		var ne net.Error
		if assert.ErrorAs(t, err, &ne) {
			assert.True(t, ne.Timeout(), "got %v, want a timeout", err)
		}
	})
}
