package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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

// tracked is a base that hands every attempt to next and counts the
// response bodies it returned and those closed since.
type tracked struct {
	next           http.RoundTripper
	opened, closed atomic.Int64
}

func (b *tracked) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(req)
	if resp != nil {
		b.opened.Add(1)
		resp.Body = &onceCloser{ReadCloser: resp.Body, n: &b.closed}
	}
	return resp, err
}

// open returns the number of response bodies never closed.
func (b *tracked) open() int64 { return b.opened.Load() - b.closed.Load() }

// onceCloser counts its first Close in n.
type onceCloser struct {
	io.ReadCloser
	once sync.Once
	n    *atomic.Int64
}

func (c *onceCloser) Close() error {
	c.once.Do(func() { c.n.Add(1) })
	return c.ReadCloser.Close()
}

// big is a response body longer than the Transport reads ahead of a
// response kept through a wait (64 KiB).
var big = strings.Repeat("x", 100<<10)

// A retry's backoff that the caller's cancellation cuts short leaves no
// response open: the one kept through the wait, read ahead only to
// 64 KiB, is closed with the request.
func TestKeptResponseClosedWhenCancelledDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Status: 503, Body: big})
		base := &tracked{next: srv}
		tr := &retryhttp.Transport{Base: base, Policy: retryConfig(3, 503)}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		time.AfterFunc(50*time.Millisecond, cancel) // during the 100 ms backoff
		resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
		require.Error(t, err)
		require.Nil(t, resp)
		synctest.Wait()
		assert.Equal(t, int64(0), base.open(), "response bodies left open")
	})
}

// A wait that would end at or past the deadline is not started: the last
// outcome goes back at once. The deadline is checked when the wait is
// decided, and the wait ends when it was decided to end, however long the
// next attempt's GetBody and the Wait hook take meanwhile.
func TestWaitPastTheDeadlineIsNotStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Status: 503, Body: big}, rt.Step{Body: "ok"})
		base := &tracked{next: srv}
		tr := &retryhttp.Transport{Base: base, Policy: retryConfig(3, 503)}
		ctx, cancel := context.WithTimeout(t.Context(), 120*time.Millisecond)
		defer cancel()
		req := newRequest(t, ctx, "PUT", "payload")
		req.GetBody = func() (io.ReadCloser, error) {
			time.Sleep(50 * time.Millisecond) // a body reopened from slow storage
			return io.NopCloser(strings.NewReader("payload")), nil
		}
		// The 503 comes at 0, decide allows its 100 ms backoff (ends at
		// 100 ms < 120 ms), GetBody takes 50 ms, then the loop sleeps the
		// whole 100 ms: to 150 ms, past the deadline. Either the wait is
		// kept to what was decided (attempt 2 answers) or the 503 comes
		// back: never an error.
		resp, err := tr.RoundTrip(req)
		if assert.NoError(t, err, "the wait crossed the deadline") {
			resp.Body.Close()
		}
		synctest.Wait()
		assert.Equal(t, int64(0), base.open(), "response bodies left open")
	})
}

// A hook that panics reaches the caller with every attempt closed, the
// response an AttemptDone hook was told about included, under the retry
// loop and under the hedge loop.
func TestAttemptDonePanicClosesItsResponse(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  *policy.Config
	}{
		{"retry", retryConfig(3, 503)},
		{"hedge", &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: time.Second}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &tracked{next: script(rt.Step{Body: "ok"})}
				tr := &retryhttp.Transport{Base: base, Policy: tc.cfg,
					Hooks: &retrytrace.Hooks{AttemptDone: func(retrytrace.AttemptDoneInfo) { panic("hook is broken") }}}
				func() {
					defer func() { assert.Equal(t, "hook is broken", recover()) }()
					tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				}()
				synctest.Wait()
				assert.Equal(t, int64(0), base.open(), "response bodies left open")
			})
		})
	}
}

// A Done hook that panics leaves open no response, not even the one
// RoundTrip was about to return.
func TestDonePanicClosesTheResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &tracked{next: script(rt.Step{Body: "ok"})}
		tr := &retryhttp.Transport{Base: base, Policy: retryConfig(3, 503),
			Hooks: &retrytrace.Hooks{Done: func(retrytrace.DoneInfo) { panic("hook is broken") }}}
		func() {
			defer func() { assert.Equal(t, "hook is broken", recover()) }()
			tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		}()
		synctest.Wait()
		assert.Equal(t, int64(0), base.open(), "response bodies left open")
	})
}

// A base that panics on a hedge that lost, as it is cancelled, reaches
// the caller too, once every attempt is closed.
func TestLoserPanicDuringCancelAllReachesTheCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Body: "ok"})
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Header.Get(retryhttp.AttemptsHeader) == "" { // attempt 1: slow, panics once cancelled
				<-req.Context().Done()
				panic("base is broken")
			}
			return srv.RoundTrip(req)
		})
		cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: 10 * time.Millisecond}}}}
		tr := &retryhttp.Transport{Base: base, Policy: cfg}
		var recovered any
		func() {
			defer func() { recovered = recover() }()
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			if err == nil {
				resp.Body.Close()
			}
		}()
		assert.Equal(t, "base is broken", recovered, "the loser's panic was swallowed")
	})
}

// A panic met while the hedges that lost are cut off (a loser's base, a
// hook told of a loser) leaves open no response, not even the winner's,
// which RoundTrip had chosen to hand back.
func TestPanicAmongTheLosersClosesTheWinner(t *testing.T) {
	for _, tc := range []struct {
		name  string
		base  func(srv *rt.Server) http.RoundTripper
		hooks *retrytrace.Hooks
	}{
		{"loser's base", func(srv *rt.Server) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if req.Header.Get(retryhttp.AttemptsHeader) == "" { // attempt 1: slow, panics once cancelled
					<-req.Context().Done()
					panic("broken")
				}
				return srv.RoundTrip(req)
			})
		}, nil},
		{"loser's hook", func(srv *rt.Server) http.RoundTripper { return srv },
			&retrytrace.Hooks{AttemptDone: func(i retrytrace.AttemptDoneInfo) {
				if i.Outcome == retrytrace.OutcomeCancelled {
					panic("broken")
				}
			}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := numbered(rt.Step{Delay: time.Second}, rt.Step{})
				base := &tracked{next: tc.base(srv)}
				tr := &retryhttp.Transport{Base: base, Policy: hedgeConfig(2, 10*time.Millisecond), Hooks: tc.hooks}
				func() {
					defer func() { assert.Equal(t, "broken", recover()) }()
					tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				}()
				synctest.Wait()
				require.Equal(t, int64(1), base.opened.Load(), "the winner's answer came")
				assert.Equal(t, int64(0), base.open(), "response bodies left open")
			})
		})
	}
}

// A panic leaves no goroutine watching the caller's Request.Cancel.
func TestPanicLeavesNoCancelWatcher(t *testing.T) {
	before := goleakIgnore()
	tr := &retryhttp.Transport{Base: script(rt.Step{Body: "ok"}), Policy: retryConfig(3, 503),
		Hooks: &retrytrace.Hooks{AttemptStart: func(retrytrace.AttemptStartInfo) { panic("hook is broken") }}}
	req := newRequest(t, context.Background(), "GET", "")
	stop := make(chan struct{}) // as http.Client sets it; closed only once the check is done
	//lint:ignore SA1019 the legacy way is what http.Client uses, and what is tested
	req.Cancel = stop
	t.Cleanup(func() { close(stop) })
	func() {
		defer func() { assert.Equal(t, "hook is broken", recover()) }()
		tr.RoundTrip(req)
	}()
	assertNoLeak(t, before)
}

// When a transparent resend cannot get its body, the error names why the
// attempt was not sent, then why its resend was not, each once.
func TestResendErrorWrappedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		tr, _ := newCalls(retryConfig(3, 503), fail(refused))
		req := newRequest(t, t.Context(), "PUT", "payload")
		req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("storage gone") }
		resp, err := tr.RoundTrip(req)
		require.Nil(t, resp)
		require.Error(t, err)
		assert.Equal(t, 1, strings.Count(err.Error(), "connection refused"), "error: %v", err)
	})
}

// A GetBody that returns neither a body nor an error is one that cannot
// give the body again: a request with a body hands back the answer it
// has, as when GetBody fails, rather than net/http's refusal of a nil
// body; a request without one is resent with no body.
func TestGetBodyReturningNilIsNoBody(t *testing.T) {
	cases := []struct {
		name       string
		body       string
		wantStatus int
		wantSent   int
	}{
		{"a body: the 503 handed back", "payload", 503, 1},
		{"no body: resent", "", 200, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := script(rt.Step{Status: 503}, rt.Step{Body: "ok"})
				tr := &retryhttp.Transport{Base: srv, Policy: retryConfig(3, 503)}
				req := newRequest(t, t.Context(), "PUT", tc.body)
				req.GetBody = func() (io.ReadCloser, error) { return nil, nil }
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				readAll(t, resp)
				assert.Equal(t, tc.wantStatus, resp.StatusCode)
				assert.Equal(t, tc.wantSent, srv.Count())
			})
		})
	}
}
