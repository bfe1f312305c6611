package retryhttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

func TestHedgedAttemptsAreBoundedAtFive(t *testing.T) {
	// gRPC takes a larger maxAttempts as 5; here it also bounds the
	// memory one request takes, whatever the policy says.
	for _, max := range []int{6, 1_000_000, math.MaxInt} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := numbered(rt.Step{Delay: time.Second}, rt.Step{Delay: time.Hour})
				tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(max, 0, 503)}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				// All five start at once, in any order; the first to
				// reach the server answers first and wins.
				assert.Equal(t, "attempt 1", readAll(t, resp))
				srv.WantAttempts(t, 5)
				st := tr.Stats().Total
				assert.Equal(t, uint64(4), st.Hedges)
				assert.Equal(t, uint64(4), st.HedgesCancelled)
			})
		})
	}
}

func TestTransparentResendOfAHedgeIsNoFurtherHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Delay: time.Second, Body: "attempt 1"},
			rt.Step{Delay: 10 * time.Millisecond, Body: "attempt 2, resent"})
		tr, _ := newCalls(hedgeConfig(2, 50*time.Millisecond, 503), srv.RoundTrip, refuse, srv.RoundTrip)
		var log hookLog
		tr.Hooks = log.hooks("")
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, "attempt 2, resent", readAll(t, resp))
		assert.Equal(t, "1", resp.Header.Get(retryhttp.AttemptsHeader))
		assert.Equal(t, []string{
			"start 1 hedge=false", "start 2 hedge=true", "done 2 never-sent 0 err=" + errRefused.Error(),
			"start 2 hedge=true", "done 2 success 200 err=<nil>", "done 1 cancelled 0 err=retryhttp: another hedge won",
		}, log.lines("start", "done"))
		st := tr.Stats().Total
		assert.Equal(t, uint64(1), st.TransparentRetries)
		assert.Equal(t, uint64(1), st.ExtraAttempts, "the resend is not a further attempt")
		assert.Zero(t, st.ExtraAttemptsFailed)
		assertHedges(t, st, 1, 1, 1)
	})
}

func TestTransparentResendOfARetryIsNoFurtherAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Status: 503}, rt.Step{})
		tr, _ := newCalls(retryConfig(3, 503), srv.RoundTrip, refuse, srv.RoundTrip)
		var log hookLog
		tr.Hooks = log.hooks("")
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, []string{
			"start 1 hedge=false", "done 1 retryable 503 err=<nil>",
			"start 2 hedge=false", "done 2 never-sent 0 err=" + errRefused.Error(),
			"start 2 hedge=false", "done 2 success 200 err=<nil>",
		}, log.lines("start", "done"))
		st := tr.Stats().Total
		assert.Equal(t, uint64(1), st.ExtraAttempts)
		assert.Zero(t, st.ExtraAttemptsFailed, "the never-sent try was resent and won")
		assert.Equal(t, uint64(1), st.TransparentRetries)
	})
}

// jitteryHost answers every request 200 after a latency drawn uniformly
// from [lo, lo+spread), seeded.
func jitteryHost(lo, spread time.Duration) *rt.Server {
	var mu sync.Mutex // Choose is called by concurrent hedges
	rng := rand.New(rand.NewPCG(1, 2))
	return &rt.Server{Choose: func(int, *http.Request) rt.Step {
		mu.Lock()
		defer mu.Unlock()
		return rt.Step{Delay: lo + time.Duration(rng.Int64N(int64(spread))), Body: "ok"}
	}}
}

func TestAdaptiveDelayIsNotDraggedDownByCutOffHedges(t *testing.T) {
	// Every answer takes 100 to 120 ms. A hedge sent at the median and
	// cut off when attempt 1 answers a few ms later ran for a few ms:
	// counted as a latency, it would pull the "median" below anything the
	// host ever takes, and then nearly every request would be hedged.
	synctest.Test(t, func(t *testing.T) {
		host := jitteryHost(100*time.Millisecond, 20*time.Millisecond)
		cfg := hedgeConfig(3, time.Second, 503)
		cfg.Rules[0].Hedge.HedgingDelayQuantile = 0.5
		var log hookLog
		tr := &retryhttp.Transport{Base: host, Policy: cfg, Hooks: log.hooks("")}
		for range 300 {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			readAll(t, resp)
		}
		before := host.Count()
		for range 100 {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			readAll(t, resp)
		}
		perRequest := float64(host.Count()-before) / 100
		var delays []time.Duration
		for _, w := range log.waits() {
			if w.Attempt == 2 {
				delays = append(delays, w.Delay)
			}
		}
		require.NotEmpty(t, delays, "the hedging delay is reported")
		t.Logf("server requests per request: %.2f; last delay %v", perRequest, delays[len(delays)-1])
		// A true median hedges about half the requests.
		assert.InDelta(t, 1.5, perRequest, 0.25)
		assert.InDelta(t, float64(110*time.Millisecond), float64(delays[len(delays)-1]), float64(5*time.Millisecond))
	})
}

func TestNeverSentCauseSurvivesAResendWithoutBody(t *testing.T) {
	// Attempt 1 is refused at the dial. A body past its buffer is not
	// resent; when GetBody fails, the resend cannot get the body again.
	// The caller learns why the request was not sent and, when GetBody
	// failed, why it was not sent again.
	errGone := errors.New("source gone")
	for _, mode := range []string{"hedge", "retry"} {
		for _, body := range []string{"GetBody fails", "past the buffer"} {
			t.Run(mode+"/"+body, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					cfg := hedgeConfig(2, 50*time.Millisecond, 503)
					if mode == "retry" {
						cfg = retryConfig(2, 503)
					}
					srv := script(rt.Step{Delay: time.Millisecond, Body: "ok"})
					tr, _ := newCalls(cfg, refuse, srv.RoundTrip)
					tr.Buffer = retryhttp.BufferLimits{PerRequest: 4}
					req := newRequest(t, t.Context(), "PUT", "0123456789")
					if body == "GetBody fails" {
						req.GetBody = func() (io.ReadCloser, error) { return nil, errGone }
					} else {
						req.GetBody = nil
					}
					resp, err := tr.RoundTrip(req)
					require.Nil(t, resp)
					assert.ErrorIs(t, err, syscall.ECONNREFUSED)
					if body == "GetBody fails" {
						assert.ErrorIs(t, err, errGone)
					}
					var rerr *retryhttp.Error
					require.ErrorAs(t, err, &rerr)
					assert.Equal(t, 1, rerr.Attempts)
				})
			})
		}
	}
}

func TestNoHedgeStartsForACallerThatHasGone(t *testing.T) {
	// The timer of a zero delay and the caller's end are ready together;
	// the hedge loop must not pick the timer.
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Delay: time.Hour})
		tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(5, 0, 503)}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		for range 50 {
			_, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
			require.ErrorIs(t, err, context.Canceled)
		}
		assert.Zero(t, tr.Stats().Total.Hedges)
	})
}

func TestWinnerDoesNotWaitForTheKeptLoserToDrain(t *testing.T) {
	// Attempt 1's 503 is kept, in case every attempt fails; its body
	// stalls. When hedge 2 wins, the 503 is cut off, not drained.
	synctest.Test(t, func(t *testing.T) {
		// A body that yields nothing for an hour, within the length a
		// drain reads, until its attempt ends.
		stalled := rt.Step{Delay: 10 * time.Millisecond, Status: 503, Body: "unavailable", Trickle: rt.Rate{Every: time.Hour}}
		win := rt.Step{Delay: 10 * time.Millisecond, Body: "win"}
		for _, second := range []string{"wins", "fails too"} {
			next := win
			if second == "fails too" {
				next = stalled
			}
			srv := script(stalled, next, win)
			tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(3, time.Second, 503)}
			t0 := time.Now()
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			assert.Equal(t, "win", readAll(t, resp))
			// Each 503 sends the next hedge at once, whatever its body.
			want := map[string]time.Duration{"wins": 20 * time.Millisecond, "fails too": 30 * time.Millisecond}[second]
			assert.Equal(t, want, time.Since(t0), second)
		}
	})
}

func TestBodyPastItsBufferCutsOffHedgesThatCannotSendIt(t *testing.T) {
	// Attempt 1 sends a body that outgrows its 4-byte buffer at 1 ms,
	// then gets a 503. Hedges 2 and 3, sent before, are still dialing:
	// they could never send the body now, so they are cut off, hedge 4
	// is not sent, and the 503 comes back at once. No refusal is
	// reported, as no hedge was due when the body was cut.
	synctest.Test(t, func(t *testing.T) {
		dialing := func(req *http.Request) (*http.Response, error) {
			defer req.Body.Close()
			select {
			case <-time.After(10 * time.Second):
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
			_, err := io.Copy(io.Discard, req.Body)
			return nil, err
		}
		srv := script(rt.Step{Delay: time.Millisecond, Status: 503, Body: "busy"})
		sending := func(req *http.Request) (*http.Response, error) {
			time.Sleep(time.Millisecond) // then the server reads the body
			return srv.RoundTrip(req)
		}
		var log hookLog
		tr, _ := newCalls(hedgeConfig(4, 400*time.Microsecond, 503), sending, dialing)
		tr.Buffer, tr.Hooks = retryhttp.BufferLimits{PerRequest: 4}, log.hooks("")
		req := newRequest(t, t.Context(), "PUT", "")
		req.Body = io.NopCloser(strings.NewReader("0123456789"))
		t0 := time.Now()
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, "busy", readAll(t, resp))
		assert.Equal(t, 2*time.Millisecond, time.Since(t0))
		assert.Empty(t, log.refused())
		st := tr.Stats().Total
		assertHedges(t, st, 2, 0, 2)
		assert.Equal(t, uint64(1), st.CommittedForSize)
	})
}

func TestPushbackHoldsTheNextHedgeAgainstALaterPlainStatus(t *testing.T) {
	// Attempt 1 asks for 300 ms at 15 ms; attempt 2, sent at 10 ms,
	// answers a plain 503 at 30 ms, which would send the next hedge at
	// once: the server's request stands.
	synctest.Test(t, func(t *testing.T) {
		srv := numbered(rt.Step{Delay: 15 * time.Millisecond, Status: 503, Header: pushback("300")},
			rt.Step{Delay: 20 * time.Millisecond, Status: 503}, rt.Step{Delay: 10 * time.Millisecond})
		tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(3, 10*time.Millisecond, 503)}
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, "attempt 3", readAll(t, resp))
		starts := arrivals(srv)
		require.Len(t, starts, 3)
		assert.Equal(t, starts[2]+10*time.Millisecond, time.Since(start), "the first attempt is sent at once")
		// 300 ms and its jitter, under a tenth, from the 503 at 15 ms.
		assert.GreaterOrEqual(t, starts[2], 315*time.Millisecond)
		assert.Less(t, starts[2], 345*time.Millisecond)
	})
}

// liveBody reads as body while its attempt's context lives.
type liveBody struct {
	ctx context.Context
	r   io.Reader
}

func (b *liveBody) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	return b.r.Read(p)
}

func (b *liveBody) Close() error { return nil }

func TestBodyPastItsBufferDoesNotCutOffAnAnswerAlreadyIn(t *testing.T) {
	// Hedge 2 answers without reading the body (a server may). Its
	// result is waiting for the hedge loop when attempt 1 outgrows the
	// buffer: the answer is taken, not cancelled under the caller.
	// The loop sees both at once and must not pick either at random.
	for range 20 {
		synctest.Test(t, func(t *testing.T) {
			srv := script(rt.Step{Delay: time.Hour, Body: "attempt 1"})
			send := make(chan struct{})
			sender := func(req *http.Request) (*http.Response, error) {
				<-send // then the server reads the body
				return srv.RoundTrip(req)
			}
			early := func(req *http.Request) (*http.Response, error) {
				req.Body.Close()
				return &http.Response{StatusCode: 200, Header: http.Header{}, ContentLength: -1, Request: req,
					Body: &liveBody{ctx: req.Context(), r: strings.NewReader("attempt 2")}}, nil
			}
			hooks := &retrytrace.Hooks{Wait: func(w retrytrace.WaitInfo) {
				if w.Attempt == 3 { // attempt 2 has just been launched
					synctest.Wait() // its answer is queued
					close(send)
					synctest.Wait() // attempt 1 has outgrown the buffer
				}
			}}
			tr, _ := newCalls(hedgeConfig(3, time.Millisecond, 503), sender, early)
			tr.Buffer, tr.Hooks = retryhttp.BufferLimits{PerRequest: 4}, hooks
			req := newRequest(t, t.Context(), "PUT", "")
			req.Body = io.NopCloser(strings.NewReader("0123456789"))
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			assert.Equal(t, "attempt 2", readAll(t, resp))
		})
	}
}

func TestNeverSentCauseSurvivesAHedgeThatFailedFirst(t *testing.T) {
	// Attempt 1 is refused just as hedge 2 starts, and GetBody fails for
	// both hedge 2 and attempt 1's resend. Whichever failure the hedge
	// loop sees first, the caller learns of the refusal.
	errGone := errors.New("source gone")
	for range 200 {
		synctest.Test(t, func(t *testing.T) {
			late := func(req *http.Request) (*http.Response, error) {
				time.Sleep(10 * time.Millisecond)
				return refuse(req)
			}
			srv := script(rt.Step{Delay: time.Millisecond, Body: "ok"})
			tr, _ := newCalls(hedgeConfig(2, 10*time.Millisecond, 503), late, srv.RoundTrip)
			req := newRequest(t, t.Context(), "PUT", "0123456789")
			req.GetBody = func() (io.ReadCloser, error) { return nil, errGone }
			resp, err := tr.RoundTrip(req)
			require.Nil(t, resp)
			require.ErrorIs(t, err, syscall.ECONNREFUSED)
		})
	}
}

// A hedged request with no body whose attempts all fail with an error
// reports that error alone: nothing about a body that was never there.
func TestHedgedErrorsSayWhatHappened(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &retryhttp.Transport{Base: fail(syscall.ECONNRESET), Policy: hedgeConfig(3, 10*time.Millisecond)}
		_, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.ErrorIs(t, err, syscall.ECONNRESET)
		assert.NotContains(t, err.Error(), "cannot be replayed", "got %v", err)
	})
}
