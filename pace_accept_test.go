package retryhttp_test

import (
	"context"
	"net/http"
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

// warm sends path one request each 50 ms for a second: the host is sent
// 20 a second, the rate a throttle then cuts from.
func warm(t *testing.T, tr *retryhttp.Transport, path string) {
	t.Helper()
	for range 20 {
		for _, err := range burst(t, tr, path, 1, 0) {
			require.NoError(t, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Which answers are throttles: a 429, bare or with a delay, and a 503
// with a server delay pace the host; a 503 without one, a refusal that
// says nothing of load, does not.
func TestWhichAnswersPaceTheHost(t *testing.T) {
	tests := []struct {
		name  string
		step  rt.Step
		paced bool
	}{
		{"a bare 429", rt.Step{Status: 429}, true},
		{"a 429 with Retry-After", rt.Step{Status: 429, Header: http.Header{"Retry-After": {"1"}}}, true},
		{"a 503 with Retry-After", rt.Step{Status: 503, Header: http.Header{"Retry-After": {"1"}}}, true},
		{"a bare 503", rt.Step{Status: 503}, false},
		{"a bare 500", rt.Step{Status: 500}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
					if req.URL.Path == "/limit" {
						return tt.step
					}
					return rt.Step{}
				}}
				tr := &retryhttp.Transport{Base: srv}
				warm(t, tr, "/warm")
				burst(t, tr, "/limit", 1, 0)
				time.Sleep(1500 * time.Millisecond) // past the hold, not past paceQuiet
				rate := tr.Stats().Hosts["api.test"].PaceRate
				if tt.paced {
					assert.Positive(t, rate, "paced")
				} else {
					assert.Zero(t, rate, "not paced")
				}
			})
		})
	}
}

// The pace is the hold's key: a host's rule that was throttled is paced,
// another rule of the same host is not.
func TestThePaceIsPerRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			if req.URL.Path == "/a/limit" {
				return rt.Step{Status: 429}
			}
			return rt.Step{}
		}}
		cfg := policy.Default()
		retry := cfg.Rules[0].Retry
		cfg.Rules = append([]policy.Rule{
			{Name: []policy.Name{{Path: "/a/"}}, Retry: retry},
			{Name: []policy.Name{{Path: "/b/"}}, Retry: retry},
		}, cfg.Rules...)
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		warm(t, tr, "/a/x")
		burst(t, tr, "/a/limit", 1, 0)
		require.Positive(t, tr.Stats().Hosts["api.test"].PaceRate, "rule a paced")

		start := time.Now()
		for _, err := range burst(t, tr, "/b/x", 10, 0) {
			require.NoError(t, err)
		}
		assert.Equal(t, start, time.Now(), "rule b's requests go at once")

		before := len(arrivals(srv))
		for _, err := range burst(t, tr, "/a/x", 5, 0) {
			require.NoError(t, err)
		}
		at := arrivals(srv)[before:]
		require.Len(t, at, 5)
		assert.Greater(t, at[4]-at[0], 150*time.Millisecond, "rule a's requests go a slot apart")
	})
}

// An attempt waits for its slot only within maxServerDelay: with a
// deadline far off but a slot past maxServerDelay, it fails at once,
// nothing sent, with a *retryhttp.Error matching ErrPaced, and the
// refusal is reported with its own reason, rule and attempt.
func TestPaceWaitsAtMostMaxServerDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			if req.URL.Path == "/limit" {
				return rt.Step{Status: 429}
			}
			return rt.Step{}
		}}
		var log hookLog
		cfg := policy.Default()
		cfg.MaxServerDelay = 500 * time.Millisecond
		tr := &retryhttp.Transport{Base: srv, Policy: cfg, Hooks: log.hooks("")}
		pacedBy429(t, tr, "/x", "/limit") // at 0.7/s, a slot each 1.4 s
		before := srv.Count()
		start := time.Now()
		errs := burst(t, tr, "/x", 3, time.Minute)
		paced := 0
		for _, err := range errs {
			if err == nil {
				continue
			}
			require.ErrorIs(t, err, retryhttp.ErrPaced)
			var e *retryhttp.Error
			require.ErrorAs(t, err, &e)
			assert.Zero(t, e.Attempts, "nothing sent")
			paced++
		}
		assert.GreaterOrEqual(t, paced, 2, "slots 1.4 s apart: past maxServerDelay after the first")
		assert.Equal(t, before+3-paced, srv.Count(), "the refused were never sent")
		assert.LessOrEqual(t, time.Since(start), cfg.MaxServerDelay, "refused at once, not after a wait")
		var reported int
		for _, r := range log.refused() {
			if r.Reason == retrytrace.RefusedPaced {
				reported++
				assert.Equal(t, "*", r.Rule, "the default rule's name")
				assert.Equal(t, 1, r.Attempt, "the first attempt, not made")
			}
		}
		assert.Equal(t, paced, reported, "each refusal reported as paced")
		assert.Equal(t, uint64(paced), tr.Stats().Hosts["api.test"].PaceRefusals)
	})
}

// When a hold ends, the requests that waited it out go out at the pace
// the throttle set, a slot apart, not all at once to meet the limit
// together.
func TestAHoldEndsAtThePace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := throttlesOnce(rt.Step{Status: 429, Header: http.Header{"Retry-After": {"1"}}})
		tr := &retryhttp.Transport{Base: srv}
		warm(t, tr, "/x")
		first := arrivals(srv)[0]
		var wg sync.WaitGroup
		wg.Go(func() { burst(t, tr, "/limit", 1, 0) }) // holds the host a second
		synctest.Wait()
		before := srv.Count()
		for range 8 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, "GET", "https://api.test/x", nil)
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				readAll(t, resp)
			})
		}
		wg.Wait()
		at := arrivals(srv)[before:]
		require.Len(t, at, 8, "the eight that waited")
		assert.GreaterOrEqual(t, at[0]-first, time.Second, "nothing before the hold's end")
		for i := 1; i < len(at); i++ {
			assert.GreaterOrEqual(t, at[i]-at[i-1], 50*time.Millisecond,
				"a slot apart at a pace cut from 20/s: attempt %d", i)
		}
	})
}

// Rate-limit fields with odd values neither pace nor refuse a host whose
// quota they do not show spent: a quota too large to reach, a zero or
// fractional one, which the draft does not allow, and a window of zero.
// Twenty requests at once all go at once.
func TestOddRateLimitFieldsPaceNothing(t *testing.T) {
	const huge = "999999999999999"
	tests := []struct {
		name   string
		header http.Header
	}{
		{"r and q at the largest", http.Header{"Ratelimit": {`"d";r=` + huge + `;t=1`}, "Ratelimit-Policy": {`"d";q=` + huge + `;w=1`}}},
		{"r at the largest, t zero", http.Header{"Ratelimit": {`"d";r=` + huge + `;t=0`}}},
		{"q zero", http.Header{"Ratelimit-Policy": {`"d";q=0;w=1`}}},
		{"w zero", http.Header{"Ratelimit-Policy": {`"d";q=5;w=0`}}},
		{"q negative", http.Header{"Ratelimit-Policy": {`"d";q=-5;w=1`}}},
		{"r fractional", http.Header{"Ratelimit": {`"d";r=1.5;t=1`}}},
		{"r a string", http.Header{"Ratelimit": {`"d";r="1";t=1`}}},
		{"t fractional", http.Header{"Ratelimit": {`"d";r=1;t=0.5`}}},
		{"an inner list", http.Header{"Ratelimit": {`("d");r=1;t=1`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(int, *http.Request) rt.Step { return rt.Step{Header: tt.header} }}
				tr := &retryhttp.Transport{Base: srv}
				burst(t, tr, "/x", 1, 0)
				start := time.Now()
				for _, err := range burst(t, tr, "/x", 20, time.Second) {
					require.NoError(t, err)
				}
				assert.Equal(t, start, time.Now(), "nothing waited")
				hs := tr.Stats().Hosts["api.test"]
				assert.Zero(t, hs.PaceRate)
				assert.Zero(t, hs.PaceWaits+hs.PaceRefusals+hs.HoldsSet)
			})
		})
	}
}

// One throttle does not cap a host for good: under a steady load of 20
// requests a second that the host takes, after a single 429, the pace
// lifts within seconds, and the requests after it are all answered.
func TestOneThrottleLiftsWithinSecondsUnderLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		throttled := false
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
			mu.Lock()
			defer mu.Unlock()
			if !throttled && time.Since(start) >= 2*time.Second {
				throttled = true
				return rt.Step{Status: 429}
			}
			return rt.Step{}
		}}
		tr := &retryhttp.Transport{Base: srv}
		var paced, lifted time.Duration
		var watch sync.WaitGroup
		watch.Go(func() {
			for time.Since(start) < 30*time.Second {
				time.Sleep(100 * time.Millisecond)
				rate := tr.Stats().Hosts["api.test"].PaceRate
				switch {
				case rate > 0 && paced == 0:
					paced = time.Since(start)
				case rate == 0 && paced > 0 && lifted == 0:
					lifted = time.Since(start)
				}
			}
		})
		ok, refused := offer(t, tr, 20, 30*time.Second, 10*time.Second, time.Second)
		watch.Wait()
		require.NotZero(t, paced, "the 429 paced the host")
		require.NotZero(t, lifted, "the pace lifted")
		assert.LessOrEqual(t, lifted-paced, 10*time.Second, "lifted within seconds of the throttle")
		assert.Zero(t, refused, "a pace cut from 20/s refuses none of 20/s with a second to wait")
		assert.Equal(t, 400, ok, "the last 20 s, every request answered")
		t.Logf("paced at %v, lifted at %v", paced, lifted)
	})
}

// The pace is per member: a fleet shares holds and budget, not the
// rate, so a throttle one member met paces it and not another member of
// the same fleet.
func TestThePaceIsPerMemberOfAFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			if req.URL.Path == "/limit" {
				return rt.Step{Status: 429} // bare: a throttle, no hold
			}
			return rt.Step{}
		}}
		fleet := newMemFleet()
		a := &retryhttp.Transport{Base: srv, Fleet: fleet}
		b := &retryhttp.Transport{Base: srv, Fleet: fleet}
		warm(t, a, "/x")
		burst(t, a, "/limit", 1, 0)
		require.Positive(t, a.Stats().Hosts["api.test"].PaceRate, "the member throttled is paced")

		start := time.Now()
		for _, err := range burst(t, b, "/x", 10, 0) {
			require.NoError(t, err)
		}
		assert.Equal(t, start, time.Now(), "the other member's requests go at once")
		hs := b.Stats().Hosts["api.test"]
		assert.Zero(t, hs.PaceRate)
		assert.Zero(t, hs.PaceWaits)
	})
}

// Hedges take send slots as every attempt of a paced rule does: a
// request hedged each 10 ms to a host paced at 0.7 a second sends its
// hedges a slot apart, not 10 ms apart.
func TestHedgesGoAtThePace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			switch req.URL.Path {
			case "/limit":
				return rt.Step{Status: 429}
			case "/slow":
				return rt.Step{Delay: 5 * time.Second}
			}
			return rt.Step{}
		}}
		cfg := policy.Default()
		cfg.Rules = []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 10 * time.Millisecond}}}
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		rate := pacedBy429(t, tr, "/x", "/limit")
		time.Sleep(1500 * time.Millisecond) // the next slot is free, the pace not yet quiet
		require.Positive(t, tr.Stats().Hosts["api.test"].PaceRate, "still paced")
		before := len(arrivals(srv))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", "https://api.test/slow", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
		at := arrivals(srv)[before:]
		require.GreaterOrEqual(t, len(at), 2, "hedged")
		for i := 1; i < len(at); i++ {
			assert.GreaterOrEqual(t, at[i]-at[i-1], time.Second, "hedge %d waited for its slot (rate %.2f/s)", i, rate)
		}
	})
}
