package retryhttp_test

import (
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
)

// once answers its first request with header, and every other one with a
// plain 200.
func once(header http.Header) *rt.Server {
	var mu sync.Mutex
	first := true
	return &rt.Server{Choose: func(int, *http.Request) rt.Step {
		mu.Lock()
		defer mu.Unlock()
		if first {
			first = false
			return rt.Step{Header: header}
		}
		return rt.Step{}
	}}
}

// One answer whose rate-limit fields name a quota that lasts for years
// paces the host no longer than the policy waits for a server, as a hold
// of years is cut to maxServerDelay: once answers stop bringing the
// fields, the pace lifts, and the next requests go at once. Meanwhile,
// fields read alone are obeyed to the letter: one request left for
// thirty years lets one more go, and the others fail with ErrPaced, their
// slot past maxServerDelay. Under a policy, r is read as the quota's
// level, not a rate, and the policy's q per w caps the pace.
func TestFieldsOfYearsPaceNoLongerThanMaxServerDelay(t *testing.T) {
	year := int64(365 * 24 * 3600)
	remaining := []policy.DelayHeader{{Name: "X-RateLimit-Reset", Format: policy.DelaySeconds, Remaining: "X-RateLimit-Remaining"}}
	cases := []struct {
		name    string
		header  http.Header
		headers []policy.DelayHeader
		sent    int // of five requests at first, the first alone: it, and what the fields allow
	}{
		{"RateLimit", http.Header{"Ratelimit": {`"default";r=1;t=` + strconv.FormatInt(30*year, 10)}}, nil, 2},
		{"RateLimit at the largest t", http.Header{"Ratelimit": {`"default";r=1;t=999999999999999`}}, nil, 2},
		{"RateLimit under a policy", http.Header{
			"Ratelimit":        {`"default";r=1;t=` + strconv.FormatInt(30*year, 10)},
			"Ratelimit-Policy": {`"default";q=1;w=1`},
		}, nil, 5},
		{"a delay header with remaining", http.Header{
			"X-Ratelimit-Remaining": {"1"},
			"X-Ratelimit-Reset":     {strconv.FormatInt(30*year, 10)},
		}, remaining, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := once(tc.header)
				cfg := policy.Default()
				cfg.DelayHeaders = tc.headers
				tr := &retryhttp.Transport{Base: srv, Policy: cfg}
				for _, err := range append(burst(t, tr, "/x", 1, 0), burst(t, tr, "/x", 4, 0)...) {
					if err != nil {
						require.ErrorIs(t, err, retryhttp.ErrPaced)
					}
				}
				assert.Equal(t, tc.sent, srv.Count(), "requests sent of five, the first alone")
				require.NotZero(t, tr.Stats().Hosts["api.test"].PaceRate, "paced by the fields")
				time.Sleep(cfg.ServerDelayLimit() + 10*time.Second)
				assertUnpaced(t, tr, 10)
			})
		})
	}
}

// A RateLimit-Policy of one request per w of millions of years, sent on
// every answer, paces the host at that rate as any policy does: once the
// pace's first slot is taken, the requests are refused with ErrPaced,
// their slot far past maxServerDelay, nothing sent. Its slot was once a time in the past, the
// interval of a rate near zero passing what a Duration holds, and every
// request went at once.
func TestAPolicyOfOnePerAgesStillPaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
			return rt.Step{Header: http.Header{"Ratelimit-Policy": {`"ages";q=1;w=999999999999999`}}}
		}}
		tr := &retryhttp.Transport{Base: srv}
		require.NoError(t, burst(t, tr, "/x", 1, 0)[0], "unpaced")
		require.NoError(t, burst(t, tr, "/x", 1, 0)[0], "the pace's first slot")
		for range 3 {
			assert.ErrorIs(t, burst(t, tr, "/x", 1, 0)[0], retryhttp.ErrPaced)
		}
		assert.Equal(t, 2, srv.Count(), "nothing sent past the pace's first slot")
	})
}

// A RateLimit-Policy of a quota far below a request a second (a day's
// quota, or a window of years) paces the host at q per w while answers
// bring it. Once they stop, the pace goes stale, and lifts within
// seconds as a throttle's does: not after hours spent growing back from
// a rate near zero, nor with its next slot still a window away.
func TestATinyPolicyQuotaLiftsOnceStale(t *testing.T) {
	for _, policyField := range []string{`"day";q=1;w=86400`, `"long";q=1;w=999999999999999`} {
		t.Run(policyField, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := once(http.Header{"Ratelimit-Policy": {policyField}})
				tr := &retryhttp.Transport{Base: srv}
				for range 3 {
					burst(t, tr, "/x", 1, 0)
				}
				require.NotZero(t, tr.Stats().Hosts["api.test"].PaceRate, "paced by the policy")
				time.Sleep(30 * time.Second)
				assertUnpaced(t, tr, 5)
			})
		})
	}
}

// Callers that keep asking for more than a day's quota, refused with
// ErrPaced while the policy's answers come, get their requests through
// within seconds of the fields going stale: the slot the pace took a
// day ahead is taken anew at the floor's rate, which the probe grows
// past what they ask for.
func TestATinyPolicyQuotaLiftsUnderLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := once(http.Header{"Ratelimit-Policy": {`"day";q=1;w=86400`}})
		tr := &retryhttp.Transport{Base: srv}
		ok, paced := offer(t, tr, 20, 40*time.Second, 30*time.Second, time.Second)
		assert.NotZero(t, paced, "paced by the policy")
		assert.GreaterOrEqual(t, ok, 195, "the last 10 s at 20 per second")
	})
}

// A host that answers every request with a 429 and nothing more (no
// delay, so no hold) is sent no more than its pace lets go: the cut of
// each round of throttles starts the schedule of slots again, but the
// slot taken last before it still spaces the next. It once made the next
// slot due at the instant of the cut, and a host that throttled every
// request at once was sent every one of them, 50 a second, while Stats
// showed it paced at 0.5.
func TestAHostThatThrottlesEverythingIsSentAtThePace(t *testing.T) {
	for _, delay := range []time.Duration{0, 100 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(int, *http.Request) rt.Step { return rt.Step{Status: 429, Delay: delay} }}
				tr := &retryhttp.Transport{Base: srv}
				_, paced := offer(t, tr, 50, 20*time.Second, 0, time.Second)
				rate := tr.Stats().Hosts["api.test"].PaceRate
				assert.NotZero(t, paced, "refused: their slots are past their deadline")
				assert.Less(t, srv.Count(), 60, "a few in the first second, then at most the pace, %v a second", rate)
			})
		})
	}
}

// A quota that every answer calls spent and refilled at once (r=0;t=0, a
// 200 included) says nothing of the rate the host takes, as it sets no
// hold: requests below the policy's own rate are neither paced nor
// refused.
func TestASpentQuotaThatRefillsAtOnceIsNoThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
			return rt.Step{Header: http.Header{"Ratelimit": {`"d";r=0;t=0`}, "Ratelimit-Policy": {`"d";q=100;w=1`}}}
		}}
		tr := &retryhttp.Transport{Base: srv}
		start := time.Now()
		for i := range 50 {
			for _, err := range burst(t, tr, "/x", 2, time.Second) {
				require.NoError(t, err, "round %d", i)
			}
			time.Sleep(100 * time.Millisecond)
		}
		assert.Equal(t, 50*100*time.Millisecond, time.Since(start), "nothing waited")
		c := tr.Stats().Total
		assert.Zero(t, c.PaceWaits+c.PaceRefusals+c.HoldsSet, "nothing paced, refused or held")
		srv.WantAttempts(t, 100)
	})
}

// assertUnpaced checks that api.test shows no pace in tr's Stats, and
// that n requests to it go at once.
func assertUnpaced(t *testing.T, tr *retryhttp.Transport, n int) {
	t.Helper()
	assert.Zero(t, tr.Stats().Hosts["api.test"].PaceRate, "no longer paced")
	start := time.Now()
	for _, err := range burst(t, tr, "/x", n, 0) {
		require.NoError(t, err)
	}
	assert.Equal(t, start, time.Now(), "the next requests go at once")
}
