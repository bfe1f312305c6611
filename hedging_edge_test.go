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

	"github.com/retryhttp/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// steps is a base whose call i is answered by do[min(i, len-1)].
type steps struct {
	mu    sync.Mutex
	calls int
	do    []func(*http.Request) (*http.Response, error)
}

func (s *steps) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	i := s.calls
	s.calls++
	s.mu.Unlock()
	return s.do[min(i, len(s.do)-1)](req)
}

// answerAfter reads the request body, then answers code with body after d,
// or fails when the attempt's context ends first.
func answerAfter(d time.Duration, code int, body string) func(*http.Request) (*http.Response, error) {
	return func(req *http.Request) (*http.Response, error) {
		if req.Body != nil {
			io.Copy(io.Discard, req.Body)
			req.Body.Close()
		}
		select {
		case <-time.After(d):
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		return &http.Response{StatusCode: code, Header: http.Header{}, Request: req,
			Body: io.NopCloser(strings.NewReader(body))}, nil
	}
}

// refuse fails as a dial to a closed port does: the request never left.
func refuse(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	return nil, errRefused
}

// attemptLog records the AttemptStart and AttemptDone hooks.
type attemptLog struct {
	mu     sync.Mutex
	events []string
}

func (l *attemptLog) hooks() *retryhttp.Hooks {
	add := func(s string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.events = append(l.events, s)
	}
	return &retryhttp.Hooks{
		AttemptStart: func(a retryhttp.AttemptStart) { add(fmt.Sprint("start ", a.Attempt)) },
		AttemptDone:  func(a retryhttp.AttemptDone) { add(fmt.Sprint("done ", a.Attempt, " ", a.Outcome)) },
	}
}

func TestHedgedAttemptsAreBoundedAtFive(t *testing.T) {
	// gRPC takes a larger maxAttempts as 5; here it also bounds the
	// memory one request takes, whatever the policy says.
	for _, max := range []int{6, 1_000_000, math.MaxInt} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &slowServer{delays: []time.Duration{time.Second, time.Hour}, statuses: []int{200}, t0: time.Now()}
				tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(max, 0, 503)}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				// All five start at once, in any order; the first to
				// reach the server answers first and wins.
				assert.Equal(t, "attempt 1", readAll(t, resp))
				assert.Len(t, srv.starts, 5)
				st := tr.Stats().Total
				assert.Equal(t, uint64(4), st.HedgesSent)
				assert.Equal(t, uint64(4), st.HedgesCancelled)
			})
		})
	}
}

func TestTransparentResendOfAHedgeIsNoFurtherHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &steps{do: []func(*http.Request) (*http.Response, error){
			answerAfter(time.Second, 200, "attempt 1"),
			refuse,
			answerAfter(10*time.Millisecond, 200, "attempt 2, resent"),
		}}
		var log attemptLog
		tr := &retryhttp.Transport{Base: base, Policy: hedgeConfig(2, 50*time.Millisecond, 503), Hooks: log.hooks()}
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, "attempt 2, resent", readAll(t, resp))
		assert.Equal(t, "1", resp.Header.Get(retryhttp.AttemptsHeader))
		assert.Equal(t, []string{
			"start 1", "start 2", "done 2 never-sent", "start 2", "done 2 success", "done 1 cancelled",
		}, log.events)
		st := tr.Stats().Total
		assert.Equal(t, uint64(1), st.TransparentRetries)
		assert.Equal(t, uint64(1), st.RetryAttempts, "the resend is not a further attempt")
		assert.Zero(t, st.RetryAttemptsFailed)
		assertHedges(t, st, 1, 1, 1)
	})
}

func TestTransparentResendOfARetryIsNoFurtherAttempt(t *testing.T) {
	tr, _ := newScripted(t, retryConfig(3, 503), step{status: 503}, step{err: errRefused}, step{status: 200})
	var log attemptLog
	tr.Hooks = log.hooks()
	resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, []string{
		"start 1", "done 1 retryable", "start 2", "done 2 never-sent", "start 2", "done 2 success",
	}, log.events)
	st := tr.Stats().Total
	assert.Equal(t, uint64(1), st.RetryAttempts)
	assert.Zero(t, st.RetryAttemptsFailed, "the never-sent try was resent and won")
	assert.Equal(t, uint64(1), st.TransparentRetries)
}

// jitteryHost answers every request 200 after a latency drawn uniformly
// from [lo, lo+spread), seeded.
type jitteryHost struct {
	mu     sync.Mutex
	rng    *rand.Rand
	lo     time.Duration
	spread time.Duration
	sent   int
}

func (h *jitteryHost) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	d := h.lo + time.Duration(h.rng.Int64N(int64(h.spread)))
	h.sent++
	h.mu.Unlock()
	return answerAfter(d, 200, "ok")(req)
}

func TestAdaptiveDelayIsNotDraggedDownByCutOffHedges(t *testing.T) {
	// Every answer takes 100 to 120 ms. A hedge sent at the median and
	// cut off when attempt 1 answers a few ms later ran for a few ms:
	// counted as a latency, it would pull the "median" below anything the
	// host ever takes, and then nearly every request would be hedged.
	synctest.Test(t, func(t *testing.T) {
		host := &jitteryHost{rng: rand.New(rand.NewPCG(1, 2)), lo: 100 * time.Millisecond, spread: 20 * time.Millisecond}
		cfg := hedgeConfig(3, time.Second, 503)
		cfg.Rules[0].Hedge.HedgingDelayQuantile = 0.5
		var delays []time.Duration
		tr := &retryhttp.Transport{Base: host, Policy: cfg, Hooks: &retryhttp.Hooks{Wait: func(w retryhttp.Wait) {
			if w.Attempt == 2 {
				delays = append(delays, w.Length)
			}
		}}}
		for range 300 {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			readAll(t, resp)
		}
		before := host.sent
		for range 100 {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			readAll(t, resp)
		}
		perRequest := float64(host.sent-before) / 100
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
					base := &steps{do: []func(*http.Request) (*http.Response, error){refuse, answerAfter(time.Millisecond, 200, "ok")}}
					cfg := hedgeConfig(2, 50*time.Millisecond, 503)
					if mode == "retry" {
						cfg = retryConfig(2, 503)
					}
					tr := &retryhttp.Transport{Base: base, Policy: cfg, Buffer: retryhttp.BufferLimits{PerRequest: 4}}
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
		srv := &slowServer{delays: []time.Duration{time.Hour}, statuses: []int{200}, t0: time.Now()}
		tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(5, 0, 503)}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		for range 50 {
			_, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
			require.ErrorIs(t, err, context.Canceled)
		}
		assert.Zero(t, tr.Stats().Total.HedgesSent)
	})
}

// endless is a response body that yields nothing until its attempt's
// context ends, as a stalled server's body on a real connection.
type endless struct{ ctx context.Context }

func (b endless) Read([]byte) (int, error) { <-b.ctx.Done(); return 0, b.ctx.Err() }
func (b endless) Close() error             { return nil }

func TestWinnerDoesNotWaitForTheKeptLoserToDrain(t *testing.T) {
	// Attempt 1's 503 is kept, in case every attempt fails; its body
	// stalls. When hedge 2 wins, the 503 is cut off, not drained.
	synctest.Test(t, func(t *testing.T) {
		stalled := func(req *http.Request) (*http.Response, error) {
			time.Sleep(10 * time.Millisecond)
			return &http.Response{StatusCode: 503, Header: http.Header{}, ContentLength: -1, Request: req, Body: endless{req.Context()}}, nil
		}
		for _, second := range []string{"wins", "fails too"} {
			next := answerAfter(10*time.Millisecond, 200, "win")
			if second == "fails too" {
				next = stalled
			}
			base := &steps{do: []func(*http.Request) (*http.Response, error){stalled, next, answerAfter(10*time.Millisecond, 200, "win")}}
			tr := &retryhttp.Transport{Base: base, Policy: hedgeConfig(3, time.Second, 503)}
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
		sending := func(req *http.Request) (*http.Response, error) {
			time.Sleep(time.Millisecond)
			return answerAfter(time.Millisecond, 503, "busy")(req)
		}
		var log hookLog
		base := &steps{do: []func(*http.Request) (*http.Response, error){sending, dialing}}
		tr := &retryhttp.Transport{Base: base, Policy: hedgeConfig(4, 400*time.Microsecond, 503),
			Buffer: retryhttp.BufferLimits{PerRequest: 4}, Hooks: log.hooks()}
		req := newRequest(t, t.Context(), "PUT", "")
		req.Body = io.NopCloser(strings.NewReader("0123456789"))
		t0 := time.Now()
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, "busy", readAll(t, resp))
		assert.Equal(t, 2*time.Millisecond, time.Since(t0))
		assert.Empty(t, log.refused)
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
		srv := &slowServer{
			delays:   []time.Duration{15 * time.Millisecond, 20 * time.Millisecond, 10 * time.Millisecond},
			statuses: []int{503, 503, 200},
			headers:  []http.Header{pushback("300")},
			t0:       time.Now(),
		}
		tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(3, 10*time.Millisecond, 503)}
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, "attempt 3", readAll(t, resp))
		require.Len(t, srv.starts, 3)
		// 300 ms and its jitter, under a tenth, from the 503 at 15 ms.
		assert.GreaterOrEqual(t, srv.starts[2], 315*time.Millisecond)
		assert.Less(t, srv.starts[2], 345*time.Millisecond)
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
			send := make(chan struct{})
			sender := func(req *http.Request) (*http.Response, error) {
				<-send
				return answerAfter(time.Hour, 200, "attempt 1")(req)
			}
			early := func(req *http.Request) (*http.Response, error) {
				req.Body.Close()
				return &http.Response{StatusCode: 200, Header: http.Header{}, ContentLength: -1, Request: req,
					Body: &liveBody{ctx: req.Context(), r: strings.NewReader("attempt 2")}}, nil
			}
			hooks := &retryhttp.Hooks{Wait: func(w retryhttp.Wait) {
				if w.Attempt == 3 { // attempt 2 has just been launched
					synctest.Wait() // its answer is queued
					close(send)
					synctest.Wait() // attempt 1 has outgrown the buffer
				}
			}}
			base := &steps{do: []func(*http.Request) (*http.Response, error){sender, early}}
			tr := &retryhttp.Transport{Base: base, Policy: hedgeConfig(3, time.Millisecond, 503),
				Buffer: retryhttp.BufferLimits{PerRequest: 4}, Hooks: hooks}
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
			base := &steps{do: []func(*http.Request) (*http.Response, error){late, answerAfter(time.Millisecond, 200, "ok")}}
			tr := &retryhttp.Transport{Base: base, Policy: hedgeConfig(2, 10*time.Millisecond, 503)}
			req := newRequest(t, t.Context(), "PUT", "0123456789")
			req.GetBody = func() (io.ReadCloser, error) { return nil, errGone }
			resp, err := tr.RoundTrip(req)
			require.Nil(t, resp)
			require.ErrorIs(t, err, syscall.ECONNREFUSED)
		})
	}
}
