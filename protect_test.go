package retryhttp_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// elapsedFor runs one request through a scripted transport and returns
// the virtual time it took and the number of attempts.
func elapsedFor(t *testing.T, cfg *policy.Config, method string, ctx context.Context, steps ...rt.Step) (time.Duration, int, *http.Response) {
	t.Helper()
	tr, s := newScripted(cfg, steps...)
	start := time.Now()
	resp, err := tr.RoundTrip(newRequest(t, ctx, method, "x"))
	require.NoError(t, err)
	readAll(t, resp)
	return time.Since(start), s.Count(), resp
}

func TestServerDelays(t *testing.T) {
	skewed := func() string { return time.Now().Add(time.Hour).UTC().Format(http.TimeFormat) }
	inFive := func() string { return time.Now().Add(time.Hour + 5*time.Second).UTC().Format(http.TimeFormat) }
	cases := []struct {
		name     string
		method   string
		header   func() http.Header
		cfg      func(*policy.Config)
		min, max time.Duration // the wait, jitter included
		calls    int
	}{
		{"retry-after seconds", "GET", func() http.Header { return hdr("Retry-After", "3") }, nil, 3 * time.Second, 3300 * time.Millisecond, 2},
		{"retry-after date, server clock an hour ahead", "GET", func() http.Header {
			return hdr("Date", skewed(), "Retry-After", inFive())
		}, nil, 5 * time.Second, 5500 * time.Millisecond, 2},
		{"retry-after over maxServerDelay", "GET", func() http.Header { return hdr("Retry-After", "61") }, nil, 0, 0, 1},
		{"retry-after at maxServerDelay", "GET", func() http.Header { return hdr("Retry-After", "60") }, nil, 60 * time.Second, 66 * time.Second, 2},
		{"retry-after date past", "GET", func() http.Header {
			return hdr("Date", time.Now().UTC().Format(http.TimeFormat), "Retry-After", time.Now().Add(-time.Minute).UTC().Format(http.TimeFormat))
		}, nil, 0, 0, 2},
		{"retry-after date, no Date header", "GET", func() http.Header {
			return hdr("Retry-After", time.Now().Add(5*time.Second).UTC().Format(http.TimeFormat))
		}, nil, 5 * time.Second, 5500 * time.Millisecond, 2},
		{"retry-after date over maxServerDelay", "GET", func() http.Header {
			return hdr("Date", skewed(), "Retry-After", time.Now().Add(time.Hour+2*time.Minute).UTC().Format(http.TimeFormat))
		}, nil, 0, 0, 1},
		{"retry-after negative falls back to backoff", "GET", func() http.Header { return hdr("Retry-After", "-5") }, nil, 100 * time.Millisecond, 100 * time.Millisecond, 2},
		{"pushback over maxServerDelay", "GET", func() http.Header { return hdr("X-Retry-Pushback-Ms", "60001") }, nil, 0, 0, 1},
		{"pushback too large to represent", "GET", func() http.Header { return hdr("X-Retry-Pushback-Ms", "99999999999999999999") }, nil, 0, 0, 1},
		{"retry-after under a raised maxServerDelay", "GET", func() http.Header { return hdr("Retry-After", "90") },
			func(c *policy.Config) { c.MaxServerDelay = 2 * time.Minute }, 90 * time.Second, 91 * time.Second, 2},
		{"retry-after absurd", "GET", func() http.Header { return hdr("Retry-After", "99999999999999999999999") }, nil, 0, 0, 1},
		{"retry-after garbage falls back to backoff", "GET", func() http.Header { return hdr("Retry-After", "soon") }, nil, 100 * time.Millisecond, 100 * time.Millisecond, 2},
		{"pushback ms", "GET", func() http.Header { return hdr("X-Retry-Pushback-Ms", "250") }, nil, 250 * time.Millisecond, 275 * time.Millisecond, 2},
		{"pushback -1 stops", "GET", func() http.Header { return hdr("X-Retry-Pushback-Ms", "-1") }, nil, 0, 0, 1},
		{"pushback garbage stops", "GET", func() http.Header { return hdr("X-Retry-Pushback-Ms", "later") }, nil, 0, 0, 1},
		{"pushback directs a POST", "POST", func() http.Header { return hdr("X-Retry-Pushback-Ms", "10") }, nil, 10 * time.Millisecond, 11 * time.Millisecond, 2},
		{"retry-after alone does not direct a POST", "POST", func() http.Header { return hdr("Retry-After", "1") }, nil, 0, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := retryConfig(2, 503)
				if tc.cfg != nil {
					tc.cfg(cfg)
				}
				took, calls, _ := elapsedFor(t, cfg, tc.method, t.Context(), rt.Step{Status: 503, Header: tc.header()}, rt.Step{})
				assert.Equal(t, tc.calls, calls)
				assert.GreaterOrEqual(t, took, tc.min)
				assert.LessOrEqual(t, took, tc.max)
			})
		})
	}
}

func TestServerDelayPastTheDeadlineIsNotWaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		took, calls, resp := elapsedFor(t, retryConfig(3, 503), "GET", ctx, rt.Step{Status: 503, Header: hdr("Retry-After", "5")})
		assert.Equal(t, time.Duration(0), took)
		assert.Equal(t, 1, calls)
		assert.Equal(t, 503, resp.StatusCode)
	})
}

func TestPushbackRestartsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := retryConfig(5, 503)
		cfg.Pace = &policy.Pace{Off: true} // the pushback's 503 is a throttle: this is about the backoff alone
		// Waits: backoff 100ms (n=0), 200ms (n=1), pushback 0ms, then
		// backoff restarts at 100ms (n=0).
		took, calls, _ := elapsedFor(t, cfg, "GET", t.Context(),
			rt.Step{Status: 503}, rt.Step{Status: 503}, rt.Step{Status: 503, Header: hdr("X-Retry-Pushback-Ms", "0")},
			rt.Step{Status: 503}, rt.Step{})
		assert.Equal(t, 5, calls)
		assert.Equal(t, 400*time.Millisecond, took)
	})
}

// outage runs n sequential GETs against host through tr, whose base is
// srv, and returns the attempts srv saw.
func outage(t *testing.T, tr *retryhttp.Transport, srv *rt.Server, host string, n int) int {
	t.Helper()
	before := srv.Count()
	for range n {
		req, err := http.NewRequestWithContext(t.Context(), "GET", "https://"+host+"/", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
	}
	return srv.Count() - before
}

func throttled(maxAttempts int) *policy.Config {
	cfg := retryConfig(maxAttempts, 503)
	cfg.Throttle = &policy.Throttle{MaxTokens: 100, TokenRatio: 0.25}
	return cfg
}

func TestBudgetStopsAnOutageAndRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		healthy := false // down.test answers 200 while set; everything else 503
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			if healthy && req.URL.Host == "down.test" {
				return rt.Step{Body: "ok"}
			}
			return rt.Step{Status: 503}
		}}
		tr := &retryhttp.Transport{Base: srv, Policy: throttled(5)}
		// 100 tokens, retries stop at 50: ten requests make five
		// attempts each, every later one a single attempt.
		assert.Equal(t, 50+190, outage(t, tr, srv, "down.test", 200))
		assert.Equal(t, uint64(190), tr.Stats().Hosts["down.test"].BudgetRefusals)
		// Another host has a budget of its own.
		assert.Equal(t, 50, outage(t, tr, srv, "other.test", 10))

		// Healthy again: 220 successes refill 0.25 each, to 55 tokens.
		// Retries resume: the next failing request makes all 5
		// attempts (55 -> 50); the one after it is refused again.
		healthy = true
		assert.Equal(t, 220, outage(t, tr, srv, "down.test", 220))
		healthy = false
		assert.Equal(t, 5+1, outage(t, tr, srv, "down.test", 2), "got no retries after recovery")
	})
}

// A pushback's jitter is positive, at most 10% of the delay and at most a
// second: a 30 s pushback is waited 30 to 31 s, never 33.
func TestPushbackJitterIsAtMostASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var longest time.Duration
		for range 50 {
			took, calls, _ := elapsedFor(t, retryConfig(2, 503), "GET", t.Context(),
				rt.Step{Status: 503, Header: hdr("X-Retry-Pushback-Ms", "30000")}, rt.Step{})
			require.Equal(t, 2, calls)
			require.GreaterOrEqual(t, took, 30*time.Second)
			require.LessOrEqual(t, took, 31*time.Second)
			longest = max(longest, took)
		}
		assert.Greater(t, longest, 30*time.Second, "no wait had any jitter")
	})
}

// What each outcome does to its host's budget, read in Stats: a retryable
// status (handed back at once too, as the server or a verdict says), a
// retryable network error, a non-fatal hedge and a pushback that forbids
// retrying take a token; any other answer adds tokenRatio, up to
// maxTokens; an attempt that never reached the server counts for nothing.
func TestBudgetCountsEachOutcome(t *testing.T) {
	const ratio = 0.25
	final := func(int, *http.Response, error) retryhttp.Verdict { return retryhttp.Final }
	cases := []struct {
		name     string
		cfg      *policy.Config
		base     func(srv *rt.Server) http.RoundTripper
		steps    []rt.Step
		want     float64 // tokens after one request, from 10
		classify func(int, *http.Response, error) retryhttp.Verdict
	}{
		{"two listed statuses, then a success", retryConfig(3, 503), nil,
			[]rt.Step{{Status: 503}, {Status: 503}, {}}, 10 - 2 + ratio, nil},
		{"a status not listed is a success", retryConfig(3, 503), nil, []rt.Step{{Status: 500}}, 10, nil},
		{"a redirect is a success", retryConfig(3, 503), nil, []rt.Step{{Status: 302}}, 10, nil},
		{"a pushback that forbids retrying", retryConfig(3, 503), nil,
			[]rt.Step{{Status: 503, Header: hdr("X-Retry-Pushback-Ms", "-1")}}, 9, nil},
		{"a listed status the server says not to retry", retryConfig(3, 503), nil,
			[]rt.Step{{Status: 503, Header: hdr("X-Should-Retry", "false")}}, 9, nil},
		{"a listed status the classifier calls final", retryConfig(3, 503), nil,
			[]rt.Step{{Status: 503}}, 9, final},
		{"a status not listed the classifier calls final", retryConfig(3, 503), nil,
			[]rt.Step{{Status: 500}}, 10, final},
		{"a reset, then a success", retryConfig(3, 503), nil, []rt.Step{{Fault: rt.Reset}, {}}, 10 - 1 + ratio, nil},
		{"a refused dial resent transparently", retryConfig(3, 503), func(srv *rt.Server) http.RoundTripper {
			return &calls{do: []roundTripFunc{refuse, srv.RoundTrip}}
		}, []rt.Step{{Status: 503}, {}}, 10 - 1 + ratio, nil},
		{"a non-fatal hedge, then a success", hedgeConfig(3, time.Second, 503), nil,
			[]rt.Step{{Status: 503}, {}}, 10 - 1 + ratio, nil},
		{"a refused dial under no rule", &policy.Config{}, func(srv *rt.Server) http.RoundTripper {
			return &calls{do: []roundTripFunc{refuse, srv.RoundTrip}}
		}, []rt.Step{{}}, 10, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tc.cfg.Throttle = &policy.Throttle{MaxTokens: 10, TokenRatio: ratio}
				srv := script(tc.steps...)
				var base http.RoundTripper = srv
				if tc.base != nil {
					base = tc.base(srv)
				}
				tr := &retryhttp.Transport{Base: base, Policy: tc.cfg, Classify: tc.classify}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				readAll(t, resp)
				hs := tr.Stats().Hosts["api.test"]
				assert.Equal(t, 10.0, hs.MaxTokens)
				assert.InDelta(t, tc.want, hs.Tokens, 1e-9)
			})
		})
	}
}

// The budget gates at half its capacity, and no lower: with 10 tokens a
// host that always fails gets five attempts (10 -> 5), then one per
// request; it is kept per URL host, lowercased, its port apart.
func TestBudgetGatesAtHalf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := retryConfig(10, 503)
		withWaits(cfg, time.Millisecond, time.Millisecond)
		cfg.Throttle = &policy.Throttle{MaxTokens: 10, TokenRatio: 0.5}
		srv := script(rt.Step{Status: 503})
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		get := func(host string) int { return outage(t, tr, srv, host, 1) }
		assert.Equal(t, 5, get("api.test"), "attempts while tokens > 5")
		assert.Equal(t, 5.0, tr.Stats().Hosts["api.test"].Tokens)
		assert.Equal(t, 1, get("API.Test"), "the same host in another case")
		assert.Equal(t, 4.0, tr.Stats().Hosts["api.test"].Tokens)
		for range 10 {
			get("api.test")
		}
		assert.Zero(t, tr.Stats().Hosts["api.test"].Tokens, "the floor is 0")
		assert.Equal(t, 5, get("api.test:443"), "the host with its port is a host of its own")
	})
}
