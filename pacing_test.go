package retryhttp_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
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

// burst sends n GETs of path at once through tr, each with deadline d (0:
// none), and returns their errors.
func burst(t *testing.T, tr *retryhttp.Transport, path string, n int, d time.Duration) []error {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx := retryhttp.WithoutRetries(t.Context())
			if d > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, d)
				defer cancel()
			}
			req, err := http.NewRequestWithContext(ctx, "GET", "https://api.test"+path, nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				readAll(t, resp)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return errs
}

// pacedBy429 paces tr's host as a throttle does: a request a second to warm
// for five seconds, so that the host has a rate for the throttle to cut,
// then one to throttle, which the test's server answers 429 (or 503 with
// a delay). It returns the pace's rate, which it requires.
func pacedBy429(t *testing.T, tr *retryhttp.Transport, warm, throttle string) float64 {
	t.Helper()
	for range 5 {
		burst(t, tr, warm, 1, 0)
		time.Sleep(time.Second)
	}
	burst(t, tr, throttle, 1, 0)
	rate := tr.Stats().Hosts["api.test"].PaceRate
	require.Positive(t, rate, "paced")
	return rate
}

// throttlesOnce is a server that answers the first request to /limit
// with st, and every other request 200.
func throttlesOnce(st rt.Step) *rt.Server {
	var once sync.Once
	return &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
		answer := rt.Step{}
		if req.URL.Path == "/limit" {
			once.Do(func() { answer = st })
		}
		return answer
	}}
}

// After a throttle, the host's requests of the rule, first attempts
// included, go out one send slot apart, at a rate cut from the rate sent;
// waits are reported and counted, and the rate is in Stats.
func TestAThrottlePacesTheHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := throttlesOnce(rt.Step{Status: 429}) // bare: no hold, a throttle all the same
		var mu sync.Mutex
		var waits []retrytrace.WaitInfo
		tr := &retryhttp.Transport{Base: srv, Hooks: &retrytrace.Hooks{Wait: func(w retrytrace.WaitInfo) {
			mu.Lock()
			waits = append(waits, w)
			mu.Unlock()
		}}}
		for range 20 { // 20 requests in a second: the rate sent
			burst(t, tr, "/warm", 1, 0)
			time.Sleep(50 * time.Millisecond)
		}
		burst(t, tr, "/limit", 1, 0)
		assert.InDelta(t, 0.7*20, tr.Stats().Hosts["api.test"].PaceRate, 2, "cut to 0.7 of the rate sent")
		start := len(arrivals(srv))
		for _, err := range burst(t, tr, "/x", 10, 0) {
			require.NoError(t, err)
		}
		at := arrivals(srv)[start:]
		require.Len(t, at, 10)
		for i := 1; i < len(at); i++ {
			assert.GreaterOrEqual(t, at[i]-at[i-1], 50*time.Millisecond, "paced, at most 20/s: attempt %d", i)
		}
		hs := tr.Stats().Hosts["api.test"]
		assert.Less(t, hs.PaceRate, 20.0, "growing back, not yet at the rate throttled")
		assert.Equal(t, uint64(9), hs.PaceWaits, "every attempt but the first waited for its slot")
		assert.Greater(t, hs.PaceWaitTime, time.Duration(0))
		mu.Lock()
		defer mu.Unlock()
		paced := 0
		for _, w := range waits {
			if w.Reason == retrytrace.WaitPace {
				paced++
			}
		}
		assert.Equal(t, 9, paced)
	})
}

// A throttle cuts from the rate the host was sent, not from the rate its
// callers asked for: requests that a hold on another rule kept back,
// failing with ErrHeld, never reached the host, and do not count.
func TestAThrottleCutsFromTheRateSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			switch req.URL.Path {
			case "/held/spent": // a quota spent for two seconds: a hold, not a throttle
				return rt.Step{Header: http.Header{"Ratelimit": {`"default";r=0;t=2`}}}
			case "/limit":
				return rt.Step{Status: 429}
			}
			return rt.Step{}
		}}
		cfg := policy.Default()
		cfg.Rules = append([]policy.Rule{{Name: []policy.Name{{Path: "/held/"}}, Retry: cfg.Rules[0].Retry}}, cfg.Rules...)
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		burst(t, tr, "/held/spent", 1, 0)
		for range 20 { // a second: 20 requests sent, 200 asked and held
			burst(t, tr, "/ok", 1, 0)
			for _, err := range burst(t, tr, "/held/x", 10, 500*time.Millisecond) {
				require.ErrorIs(t, err, retryhttp.ErrHeld)
			}
			time.Sleep(50 * time.Millisecond)
		}
		require.Equal(t, 21, len(arrivals(srv)), "the held requests were not sent")
		burst(t, tr, "/limit", 1, 0)
		rate := tr.Stats().Hosts["api.test"].PaceRate
		assert.Greater(t, rate, 0.0, "paced")
		assert.Less(t, rate, 0.7*20+2, "cut from the 20 attempts a second sent, not the 220 asked")
	})
}

// An attempt whose send slot would come past its deadline fails at once,
// nothing sent, with ErrPaced; ResetBackoff lifts the pace.
func TestPacedRequestsThatCannotWaitFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := throttledAtOnePerSecond(t) // paced at 0.7/s, a slot every 1.4 s
		start := time.Now()
		errs := burst(t, tr, "/x", 3, time.Second)
		var paced int
		for _, err := range errs {
			if errors.Is(err, retryhttp.ErrPaced) {
				paced++
				var e *retryhttp.Error
				require.ErrorAs(t, err, &e)
				assert.Zero(t, e.Attempts, "nothing sent")
				assert.ErrorIs(t, err, retryhttp.ErrNoResponse)
				assert.Contains(t, err.Error(), "api.test paced")
			} else {
				assert.NoError(t, err)
			}
		}
		assert.Equal(t, 2, paced, "one request has the next slot; the others' come past their deadline")
		assert.Equal(t, start, time.Now(), "the refusals come at once")
		assert.Equal(t, uint64(2), tr.Stats().Total.PaceRefusals)

		tr.ResetBackoff("api.test")
		for _, err := range burst(t, tr, "/x", 3, time.Second) {
			assert.NoError(t, err, "the pace is lifted")
		}
		assert.Zero(t, tr.Stats().Hosts["api.test"].PaceRate)
	})
}

// A Throttled verdict is a throttle: it paces the host, and it is retried
// whatever the method, as a 429 is.
func TestThrottledVerdict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(n int, _ *http.Request) rt.Step {
			if n == 1 {
				return rt.Step{Status: 400, Body: `{"__type": "ThrottlingException"}`}
			}
			return rt.Step{}
		}}
		tr := &retryhttp.Transport{Base: srv, Classify: func(_ int, resp *http.Response, _ error) retryhttp.Verdict {
			if resp != nil && resp.StatusCode == 400 {
				return retryhttp.Throttled
			}
			return retryhttp.UsePolicy
		}}
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "POST", "x"))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, 200, resp.StatusCode, "retried, a POST too")
		assert.NotZero(t, tr.Stats().Hosts["api.test"].PaceRate, "and the host is paced")
		assert.Equal(t, "Throttled.After(1s)", retryhttp.Throttled.After(time.Second).String())
	})
}

// Fields that announce the quota set the pace directly: at most r before
// t, spread over it, once the rate sent would spend it.
func TestRateLimitFieldsSetThePace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
			return rt.Step{Header: http.Header{"Ratelimit": {`"default";r=5;t=1`}}}
		}}
		tr := &retryhttp.Transport{Base: srv}
		for _, err := range burst(t, tr, "/x", 20, 0) {
			require.NoError(t, err)
		}
		at := arrivals(srv)
		assert.InDelta(t, 5, tr.Stats().Hosts["api.test"].PaceRate, 0.5)
		// The first answer's fields pace the rest: 19 more at 5/s.
		assert.GreaterOrEqual(t, at[len(at)-1]-at[0], 3*time.Second)
		assert.Less(t, at[len(at)-1]-at[0], 4*time.Second)
	})
}

// Pacing is a switch: off, a throttle paces nothing.
func TestPaceOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(n int, _ *http.Request) rt.Step {
			if n == 1 {
				return rt.Step{Status: 429}
			}
			return rt.Step{}
		}}
		cfg := policy.Default()
		cfg.Pace = &policy.Pace{Off: true}
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		burst(t, tr, "/limit", 1, 0)
		start := time.Now()
		burst(t, tr, "/x", 10, 0)
		assert.Equal(t, start, time.Now())
		assert.Zero(t, tr.Stats().Hosts["api.test"].PaceRate)
	})
}

// A serverDelayHeaders entry with a Remaining header gives the quota's r,
// and its reset t: GitHub's, X's and Discord's headers pace as the
// RateLimit field does.
func TestDelayHeaderWithRemainingSetsThePace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
			return rt.Step{Header: http.Header{
				"X-Ratelimit-Remaining": {"10"},
				"X-Ratelimit-Reset":     {strconv.FormatInt(time.Now().Add(5*time.Second).Unix(), 10)},
			}}
		}}
		cfg := policy.Default()
		cfg.DelayHeaders = []policy.DelayHeader{{Name: "X-RateLimit-Reset", Format: policy.DelayUnixSeconds, Remaining: "X-RateLimit-Remaining"}}
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		for _, err := range burst(t, tr, "/x", 8, 0) {
			require.NoError(t, err)
		}
		assert.InDelta(t, 10.0/5, tr.Stats().Hosts["api.test"].PaceRate, 0.2, "10 left for 5 s: 2/s")
	})
}

// An attempt whose send slot comes before its deadline, but too close to
// it for the host's answer to come in time, fails at once with ErrPaced,
// nothing sent: sent, it would spend the host's quota, and the slot, on
// an answer its caller no longer waits for.
func TestPacedRequestsLeaveTimeForTheAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			if req.URL.Path == "/limit" {
				return rt.Step{Status: 429, Delay: 200 * time.Millisecond}
			}
			return rt.Step{Delay: 200 * time.Millisecond}
		}}
		tr := &retryhttp.Transport{Base: srv}
		rate := pacedBy429(t, tr, "/slow", "/limit")
		// The second slot comes 1/rate from now, before the deadline; its
		// answer, 0.2 s later, would not.
		deadline := time.Duration(float64(time.Second)/rate) + 100*time.Millisecond
		start, before := time.Now(), len(arrivals(srv))
		var mu sync.Mutex
		var paced []time.Duration
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(retryhttp.WithoutRetries(t.Context()), deadline)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, "GET", "https://api.test/x", nil)
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				if err == nil {
					readAll(t, resp)
					return
				}
				assert.ErrorIs(t, err, retryhttp.ErrPaced, "its slot leaves 0.1 s for a 0.2 s answer")
				mu.Lock()
				paced = append(paced, time.Since(start))
				mu.Unlock()
			})
		}
		wg.Wait()
		require.Len(t, paced, 1, "one request has the slot now, the other is refused")
		assert.Zero(t, paced[0], "at once")
		assert.Len(t, arrivals(srv)[before:], 1, "the refused one was never sent")
	})
}

// bucketHost scripts a host behind a token bucket of rate per second
// holding up to burst, full at the start, that answers every attempt with
// the IETF fields: RateLimit-Policy q=rate;w=1, and RateLimit's r, the
// whole tokens left, and t, the seconds (rounded up) until it is full.
// An attempt that finds no whole token is answered 429. throttled counts
// those.
func bucketHost(rate, burst float64) (srv *rt.Server, throttled func() int) {
	var mu sync.Mutex
	tokens, last, n := burst, time.Now(), 0
	return &rt.Server{Choose: func(int, *http.Request) rt.Step {
			mu.Lock()
			defer mu.Unlock()
			now := time.Now()
			tokens, last = min(burst, tokens+rate*now.Sub(last).Seconds()), now
			status := http.StatusOK
			if tokens >= 1 {
				tokens--
			} else {
				status = http.StatusTooManyRequests
				n++
			}
			reset := int(math.Ceil((burst - tokens) / rate))
			return rt.Step{Status: status, Header: http.Header{
				"Ratelimit-Policy": {fmt.Sprintf(`"default";q=%d;w=1`, int(rate))},
				"Ratelimit":        {fmt.Sprintf(`"default";r=%d;t=%d`, int(tokens), reset)},
			}}
		}}, func() int {
			mu.Lock()
			defer mu.Unlock()
			return n
		}
}

// offer sends rate GETs per second through tr for d, each in its own
// goroutine under deadline, and returns how many succeeded after from,
// and how many were refused by the pace.
func offer(t *testing.T, tr *retryhttp.Transport, rate float64, d, from, deadline time.Duration) (ok, paced int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; time.Duration(float64(i)/rate*float64(time.Second)) < d; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(retryhttp.WithoutRetries(t.Context()), deadline)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, "GET", "https://api.test/x", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, retryhttp.ErrPaced):
				paced++
			case err == nil:
				readAll(t, resp)
				if resp.StatusCode == 200 && time.Since(start) >= from {
					ok++
				}
			}
		})
	}
	wg.Wait()
	return ok, paced
}

// RateLimit fields under a policy pace by the units left, not by r per
// t: a bucket that says t in whole seconds (r=19;t=1 when full, for 100
// per second) gives a lone client its whole quota, and clients sharing
// it about all of it between them, with few 429s, whatever their number.
func TestRateLimitFieldsShareTheQuota(t *testing.T) {
	t.Run("a lone client", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, throttled := bucketHost(100, 20)
			tr := &retryhttp.Transport{Base: srv}
			ok, paced := offer(t, tr, 60, 10*time.Second, 0, time.Second)
			assert.Zero(t, paced)
			assert.Equal(t, 600, ok, "every request, at 60 of 100 per second")
			assert.Zero(t, throttled())
		})
	})
	t.Run("three clients at 1.8 times the quota", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, throttled := bucketHost(100, 20)
			var mu sync.Mutex
			var wg sync.WaitGroup
			total := 0
			for range 3 {
				tr := &retryhttp.Transport{Base: srv}
				wg.Go(func() {
					ok, _ := offer(t, tr, 60, 20*time.Second, 10*time.Second, 2*time.Second)
					mu.Lock()
					total += ok
					mu.Unlock()
				})
			}
			wg.Wait()
			assert.GreaterOrEqual(t, total, 900, "90 of 100 per second, the last 10 s")
			assert.LessOrEqual(t, float64(throttled()), 0.02*float64(len(srv.Attempts())), "429s")
		})
	})
}

// A host that sends its RateLimit fields only with its 429s (a spent
// quota, under a policy of 100 per second) throttles for half a second,
// then answers every request with a plain 200: offered 60 per second,
// the pace lifts within seconds, and the caller gets all 60 again.
func TestFieldsPaceLiftsWhenTheFieldsStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
			if time.Since(start) < 500*time.Millisecond {
				return rt.Step{Status: 429, Header: http.Header{
					"Ratelimit-Policy": {`"default";q=100;w=1`},
					"Ratelimit":        {`"default";r=0;t=1`},
				}}
			}
			return rt.Step{}
		}}
		tr := &retryhttp.Transport{Base: srv}
		var mid float64
		go func() {
			time.Sleep(25 * time.Second)
			mid = tr.Stats().Hosts["api.test"].PaceRate
		}()
		ok, _ := offer(t, tr, 60, 30*time.Second, 20*time.Second, time.Second)
		synctest.Wait()
		assert.Zero(t, mid, "unpaced 24.5 s after the last throttle")
		assert.GreaterOrEqual(t, ok, 590, "the last 10 s at 60 per second")
	})
}

// A host nobody sent to since its last throttle shows no pace once its
// next request would meet none: Stats lifts it as that request would,
// rather than show for minutes a rate that holds nothing back.
func TestIdlePaceIsLiftedInStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := throttledAtOnePerSecond(t)
		require.NotZero(t, tr.Stats().Hosts["api.test"].PaceRate, "paced by the throttle")
		time.Sleep(10 * time.Second)
		assertUnpaced(t, tr, 10) // nobody asked for more since
	})
}

// throttledAtOnePerSecond returns a Transport whose host api.test was
// sent a request a second for five seconds and then answered one with a
// 429: a throttle at 1/s. Its path /limit answers 429, any other 200.
func throttledAtOnePerSecond(t *testing.T) *retryhttp.Transport {
	t.Helper()
	srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
		if req.URL.Path == "/limit" {
			return rt.Step{Status: 429}
		}
		return rt.Step{}
	}}
	tr := &retryhttp.Transport{Base: srv}
	for range 5 {
		burst(t, tr, "/slow", 1, 0)
		time.Sleep(time.Second)
	}
	burst(t, tr, "/limit", 1, 0)
	return tr
}
