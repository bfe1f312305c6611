package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
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
	"github.com/retryhttp/retryhttp/internal/memfleet"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// twoRules is the default policy with a rule for /a/ and one for /b/
// before its own, so that one host has two keys, each paced apart, and
// admission with a limit of max, an attempt past it waiting up to wait.
func twoRules(max int, wait time.Duration) *policy.Config {
	cfg := policy.Default()
	retry := cfg.Rules[0].Retry
	cfg.Rules = append([]policy.Rule{
		{Name: []policy.Name{{Path: "/a/"}}, Retry: retry},
		{Name: []policy.Name{{Path: "/b/"}}, Retry: retry},
	}, cfg.Rules...)
	cfg.Admission = &policy.Admission{MaxConcurrency: max, MaxWait: wait}
	return cfg
}

// An attempt waiting for its send slot is not in flight, and holds no
// concurrency slot: the host's limit counts what it is sent. Requests of
// a rule paced to a slot every 1.4 s, waiting seconds for theirs, leave
// the limit whole to the host's other rule, whose requests go at once
// and are not shed; Stats show nothing in flight while they wait.
func TestAttemptsWaitingForTheirSlotHoldNoConcurrencySlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			if req.URL.Path == "/a/limit" {
				return rt.Step{Status: 429}
			}
			return rt.Step{}
		}}
		tr := &retryhttp.Transport{Base: srv, Policy: twoRules(2, 0)}
		pacedBy429(t, tr, "/a/x", "/a/limit") // rule a, at 0.7/s

		var wg sync.WaitGroup
		wg.Go(func() {
			for _, err := range burst(t, tr, "/a/x", 3, 10*time.Second) {
				assert.NoError(t, err)
			}
		})
		synctest.Wait() // the first slot now, the others 1.4 s and 2.8 s away
		hs := tr.Stats().Hosts["api.test"]
		assert.Zero(t, hs.InFlight, "waiting for a send slot is not in flight")

		start := time.Now()
		for _, err := range burst(t, tr, "/b/x", 2, time.Second) {
			assert.NoError(t, err, "rule b is not paced, and the host has room")
			assert.False(t, errors.Is(err, retryhttp.ErrShed))
		}
		assert.Equal(t, start, time.Now(), "rule b's requests go at once")
		wg.Wait()
		hs = tr.Stats().Hosts["api.test"]
		assert.Zero(t, hs.Shed)
		assert.Zero(t, hs.InFlight)
	})
}

// The concurrency limit follows the policy in force, whatever policy the
// requests still under way started with: the retry of a request sent
// before SetPolicy lowered MaxConcurrency from 10 to 2 does not raise the
// host's limit back to 10, letting the requests waiting in line under
// the new policy go all at once.
func TestAnOlderRequestsRetryKeepsTheLimitInForce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(n int, req *http.Request) rt.Step {
			if req.URL.Path == "/old" && n == 1 {
				return rt.Step{Status: 503} // retried after its backoff
			}
			return rt.Step{Delay: 5 * time.Second}
		}}
		with := func(max int) *policy.Config {
			cfg := withWaits(retryConfig(3, 503), time.Second, time.Second)
			cfg.Admission = &policy.Admission{MaxConcurrency: max, MaxWait: 20 * time.Second}
			return cfg
		}
		tr := &retryhttp.Transport{Base: srv, Policy: with(10)}
		var wg sync.WaitGroup
		wg.Go(func() {
			req, err := http.NewRequestWithContext(t.Context(), "GET", "https://api.test/old", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			if assert.NoError(t, err) {
				readAll(t, resp)
			}
		})
		synctest.Wait() // its first attempt answered; its retry a second away
		require.NoError(t, tr.SetPolicy(with(2)))
		wg.Go(func() {
			for _, err := range burst(t, tr, "/x", 6, 0) {
				assert.NoError(t, err)
			}
		})
		time.Sleep(2 * time.Second) // the old request's retry came and went into line
		synctest.Wait()
		hs := tr.Stats().Hosts["api.test"]
		assert.Equal(t, 2, hs.ConcurrencyLimit)
		assert.LessOrEqual(t, hs.InFlight, 2, "no more in flight than the policy in force allows")
		assert.Equal(t, 3, srv.Count(), "the old request's first attempt and two of the new ones")
		wg.Wait()
	})
}

// An attempt past the limit whose deadline comes before maxWait waits
// in line within its deadline, not up to it: no slot come, it is shed,
// nothing sent, with ErrShed, before its context ends, every time, under
// either loop. Its wait once ended at the deadline itself, and the
// caller got ErrShed or its context's error as the two fell.
func TestAShedWithinTheDeadlineIsErrShed(t *testing.T) {
	for name, cfg := range map[string]*policy.Config{
		"retry": retryConfig(3, 503),
		"hedge": hedgeConfig(3, 10*time.Millisecond, 503),
	} {
		t.Run(name, func(t *testing.T) {
			cfg.Admission = &policy.Admission{MaxConcurrency: 1, MaxWait: 500 * time.Millisecond}
			for i := range 20 {
				synctest.Test(t, func(t *testing.T) {
					srv := &rt.Server{Choose: func(int, *http.Request) rt.Step { return rt.Step{Delay: time.Second} }}
					tr := &retryhttp.Transport{Base: srv, Policy: cfg}
					var wg sync.WaitGroup
					wg.Go(func() { burst(t, tr, "/x", 1, 0) }) // the host full for a second
					synctest.Wait()
					ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
					defer cancel()
					var closes atomic.Int64
					body := &closeCounter{ReadCloser: io.NopCloser(strings.NewReader("payload")), n: &closes}
					req, err := http.NewRequestWithContext(ctx, "PUT", "https://api.test/x", body)
					require.NoError(t, err)
					start := time.Now()
					_, err = tr.RoundTrip(req)
					require.ErrorIs(t, err, retryhttp.ErrShed, "round %d", i)
					var e *retryhttp.Error
					require.ErrorAs(t, err, &e)
					assert.Zero(t, e.Attempts, "nothing sent")
					assert.Less(t, time.Since(start), 100*time.Millisecond, "within the deadline")
					assert.Equal(t, int64(1), closes.Load(), "its body closed once")
					wg.Wait()
					assert.Equal(t, 1, srv.Count())
				})
			}
		})
	}
}

// However long the hold a throttle set, the requests that waited it out
// go out at the pace when it ends, not at once: nothing was sent during
// the hold, so the rate has not grown back past what the host takes.
// Callers keep asking 20 a second, the rate the host was sent before
// its 429; in the second after the hold's end it is sent about that
// many, not every request the hold gathered.
func TestALongHoldEndsAtThePace(t *testing.T) {
	for _, hold := range []int{1, 5, 10, 30} {
		t.Run(strconv.Itoa(hold)+"s", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := throttlesOnce(rt.Step{Status: 429, Header: http.Header{"Retry-After": {strconv.Itoa(hold)}}})
				tr := &retryhttp.Transport{Base: srv}
				start := time.Now() // the first arrival
				warm(t, tr, "/x")
				burst(t, tr, "/limit", 1, 0)
				end := time.Now().Add(time.Duration(hold) * time.Second)
				d := time.Duration(hold+5) * time.Second
				ok, paced := offer(t, tr, 20, d, 0, time.Minute)
				assert.Equal(t, int(20*d.Seconds()), ok+paced, "every request answered, or refused its slot past a minute")
				var after int
				for _, at := range arrivals(srv) {
					if a := start.Add(at); !a.Before(end) && a.Before(end.Add(time.Second)) {
						after++
					}
				}
				assert.LessOrEqual(t, after, 22, "the second after a hold of %d s: at the pace, not the %d it gathered", hold, 20*hold)
			})
		})
	}
}

// A hedge waiting for its send slot goes at its slot, not sooner, when
// a non-fatal answer comes meanwhile: the answer asks for the next hedge
// at once, and the slot it holds is later. Attempts of a request hedged
// on 503s, each answered 503 within 100 ms, reach a host paced at 0.7 a
// second a slot apart.
func TestANonFatalAnswerDoesNotSendAHedgeBeforeItsSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := limitAndFlaky()
		cfg := hedgeConfig(3, 10*time.Millisecond, 503)
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		rate := pacedBy429(t, tr, "/x", "/limit")
		time.Sleep(1500 * time.Millisecond) // the next slot is free, the pace not yet quiet
		before := len(arrivals(srv))
		req, err := http.NewRequestWithContext(t.Context(), "GET", "https://api.test/flaky", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
		at := arrivals(srv)[before:]
		require.Len(t, at, 3, "hedged twice")
		for i := 1; i < len(at); i++ {
			assert.GreaterOrEqual(t, at[i]-at[i-1], time.Second, "hedge %d went at its slot (rate %.2f/s)", i, rate)
		}
	})
}

// A hedge's wait for its send slot, or for a place in line, is one wait
// however often the hedge loop looks again meanwhile: a non-fatal answer
// that comes during it does not count it, or report it to the hooks, a
// second time. Two hedges that each wait once are two waits in Stats and
// in the Wait hook, and the time waited is counted in full.
func TestAHedgesWaitIsCountedOnce(t *testing.T) {
	t.Run("pace", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := limitAndFlaky()
			var log hookLog
			tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(3, 10*time.Millisecond, 503), Hooks: log.hooks("")}
			pacedBy429(t, tr, "/x", "/limit")
			time.Sleep(1500 * time.Millisecond) // the next slot is free, the pace not yet quiet
			before, from := tr.Stats().Total, len(log.waits())
			start := time.Now()
			req, err := http.NewRequestWithContext(t.Context(), "GET", "https://api.test/flaky", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			readAll(t, resp)
			took := time.Since(start)

			after := tr.Stats().Total
			assert.Equal(t, uint64(2), after.PaceWaits-before.PaceWaits, "each hedge waited once for its slot")
			var paced []int
			for _, w := range log.waits()[from:] {
				if w.Reason == retrytrace.WaitPace {
					paced = append(paced, w.Attempt)
				}
			}
			assert.Equal(t, []int{2, 3}, paced, "pace waits reported to the hooks, by attempt")
			waited := after.PaceWaitTime - before.PaceWaitTime
			assert.Greater(t, waited, 2*time.Second-2*20*time.Millisecond, "the time waited counted in full")
			assert.Less(t, waited, took)
		})
	})
	t.Run("admission", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
				switch req.URL.Path {
				case "/slow":
					return rt.Step{Delay: 10 * time.Second}
				case "/flaky":
					return rt.Step{Status: 503, Delay: 100 * time.Millisecond}
				}
				return rt.Step{Delay: 50 * time.Millisecond}
			}}
			cfg := hedgeConfig(2, 10*time.Millisecond, 503)
			cfg.Admission = &policy.Admission{MaxConcurrency: 2, MaxWait: 5 * time.Second}
			var log hookLog
			tr := &retryhttp.Transport{Base: srv, Policy: cfg, Hooks: log.hooks("")}
			var wg sync.WaitGroup
			wg.Go(func() { burst(t, tr, "/slow", 1, 0) }) // one slot taken for 10 s
			synctest.Wait()
			wg.Go(func() {
				req, err := http.NewRequestWithContext(t.Context(), "GET", "https://api.test/flaky", nil)
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req) // its first attempt takes the other slot
				if assert.NoError(t, err) {
					readAll(t, resp)
				}
			})
			time.Sleep(5 * time.Millisecond)
			wg.Go(func() { burst(t, tr, "/other", 1, 0) }) // first in line; its hedge, 5 ms later, second
			wg.Wait()

			// The 503 at 100 ms hands its slot to /other, and the hedge,
			// still in line, waits on until /other's answer at 150 ms.
			var inLine []int
			for _, w := range log.waits() {
				if w.Reason == retrytrace.WaitAdmission {
					inLine = append(inLine, w.Attempt)
				}
			}
			assert.Equal(t, []int{1, 2}, inLine, "waits in line reported to the hooks, by attempt: /other's, the hedge's")
			st := tr.Stats().Total
			assert.Equal(t, uint64(2), st.AdmissionWaits, "each attempt waited once in line")
			assert.Equal(t, 95*time.Millisecond+140*time.Millisecond, st.AdmissionWaitTime, "/other's 95 ms and the hedge's 140 ms")
			assert.Zero(t, st.Shed)
		})
	})
}

// limitAndFlaky is a server that answers /limit 429, /flaky 503 after
// 100 ms, and any other path 200.
func limitAndFlaky() *rt.Server {
	return &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
		switch req.URL.Path {
		case "/limit":
			return rt.Step{Status: 429}
		case "/flaky":
			return rt.Step{Status: 503, Delay: 100 * time.Millisecond}
		}
		return rt.Step{}
	}}
}

// A paced attempt whose send slot came while it waited in line for a
// concurrency slot is still not sent when its answer would come after
// its caller has gone: granted a slot 1.9 s later, with 0.1 s left for a
// 0.2 s answer, it fails with ErrPaced, nothing sent, as it would have
// had it taken its send slot then.
func TestASlotThatCameInLineStillLeavesTimeForTheAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			switch req.URL.Path {
			case "/a/limit":
				return rt.Step{Status: 429, Delay: 200 * time.Millisecond}
			case "/b/hog":
				return rt.Step{Delay: 1900 * time.Millisecond}
			}
			return rt.Step{Delay: 200 * time.Millisecond}
		}}
		cfg := twoRules(1, 0)
		cfg.Admission.MaxWait = 5 * time.Second
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		pacedBy429(t, tr, "/a/x", "/a/limit")
		time.Sleep(1500 * time.Millisecond) // the next slot of /a/ is free
		var wg sync.WaitGroup
		wg.Go(func() { burst(t, tr, "/b/hog", 1, 0) }) // the only concurrency slot, for 1.9 s
		synctest.Wait()
		before := srv.Count()
		errs := burst(t, tr, "/a/x", 1, 2*time.Second)
		wg.Wait()
		require.ErrorIs(t, errs[0], retryhttp.ErrPaced)
		var rerr *retryhttp.Error
		require.ErrorAs(t, errs[0], &rerr)
		assert.Zero(t, rerr.Attempts, "nothing sent")
		assert.Zero(t, srv.Count()-before, "nothing reached the host")
		assert.Contains(t, errs[0].Error(), "leaves no time for the answer before the deadline", "why, not a slot 0s away")
	})
}

// A hedge's transparent resend on a paced host goes at once, on the send
// slot of its first try, as any resend does: the slot the next hedge
// took meanwhile is that hedge's own.
func TestAHedgesResendOnAPacedHostGoesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var tries []time.Duration // of /h, from the request's start
		var start time.Time
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			switch req.URL.Path {
			case "/limit":
				return &http.Response{StatusCode: 429, Body: http.NoBody, Request: req}, nil
			case "/h":
				mu.Lock()
				tries = append(tries, time.Since(start))
				n := len(tries)
				mu.Unlock()
				if n == 2 { // the first hedge's first try never reaches the host, 2 s on
					time.Sleep(2 * time.Second)
					return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
				}
				<-req.Context().Done()
				return nil, req.Context().Err()
			}
			return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
		})
		cfg := policy.Default()
		cfg.Rules = []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 10 * time.Millisecond}}}
		tr := &retryhttp.Transport{Base: base, Policy: cfg}
		pacedBy429(t, tr, "/x", "/limit")
		time.Sleep(1500 * time.Millisecond)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", "https://api.test/h", nil)
		require.NoError(t, err)
		start = time.Now()
		_, err = tr.RoundTrip(req)
		require.Error(t, err, "no attempt answers")
		mu.Lock()
		defer mu.Unlock()
		require.GreaterOrEqual(t, len(tries), 4, "the first try, two hedges and the resend: %v", tries)
		assert.Equal(t, tries[1]+2*time.Second, tries[3], "the resend went as its first try failed: %v", tries)
	})
}

// A hedged request whose first attempt never reached the host while a
// hold came, its hedge waiting in line meanwhile, leaves no concurrency
// slot behind: once it is over nothing is in flight, and the host's next
// request goes at once.
func TestAHedgedResendAfterAHoldLeavesNoSlotBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fleet := memfleet.New()
		var calls atomic.Int32
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if calls.Add(1) == 1 {
				time.Sleep(50 * time.Millisecond)
				fleet.Report("api.test", retryhttp.FleetReport{Rule: "*", HoldUntil: time.Now().Add(time.Second), HoldStatus: 429})
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
			}
			return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
		})
		cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 10 * time.Millisecond}}},
			Admission: &policy.Admission{MaxConcurrency: 1, MaxWait: 5 * time.Second}}
		tr := &retryhttp.Transport{Base: base, Policy: cfg, Fleet: fleet}
		for _, path := range []string{"/h", "/next"} {
			req, err := http.NewRequestWithContext(t.Context(), "GET", "https://api.test"+path, nil)
			require.NoError(t, err)
			start := time.Now()
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err, path)
			readAll(t, resp)
			synctest.Wait()
			assert.Zero(t, tr.Stats().Hosts["api.test"].InFlight, "%s: nothing in flight once it is over", path)
			if path == "/next" {
				assert.Zero(t, time.Since(start), "the host idle, the next request goes at once")
			}
		}
	})
}
