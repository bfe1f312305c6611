package retryhttp_test

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// firstRule is the rule of a first config: four attempts at a 503.
const firstRule = `{"name": [{}], "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s",
  "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [503]}}`

// goFirstRule is firstRule built in Go.
func goFirstRule() []policy.Rule {
	return []policy.Rule{{Name: []policy.Name{{}}, Retry: &policy.Retry{MaxAttempts: 4,
		InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, BackoffMultiplier: 2,
		RetryableStatusCodes: []int{503}}}}
}

func parsed(t *testing.T, js string) *policy.Config {
	t.Helper()
	cfg, err := policy.ParseConfig([]byte(js))
	require.NoError(t, err)
	return cfg
}

// A first config written for maxAttempts keeps the protection the zero
// Transport had: a config that says nothing of the throttle or of holds
// has policy.Default's, in JSON as in Go; turning each off is explicit.
func TestFirstConfigKeepsTheProtection(t *testing.T) {
	cases := []struct {
		name string
		cfg  func(t *testing.T) *policy.Config
		// outage is the attempts 200 requests make against a host that
		// always answers 503; held, whether a 429's Retry-After holds
		// the next request.
		outage int
		held   bool
	}{
		// 100 tokens, retries stop at 50: twelve requests make four
		// attempts each, the 13th two, every later one a single attempt.
		{"JSON, silent", func(t *testing.T) *policy.Config {
			return parsed(t, `{"methodConfig": [`+firstRule+`]}`)
		}, 50 + 187, true},
		{"Go, silent", func(*testing.T) *policy.Config {
			return &policy.Config{Rules: goFirstRule()}
		}, 50 + 187, true},
		{"JSON, both off", func(t *testing.T) *policy.Config {
			return parsed(t, `{"methodConfig": [`+firstRule+`], "retryThrottling": {"off": true}, "hold": {"off": true}}`)
		}, 4 * 200, false},
		{"Go, both off", func(*testing.T) *policy.Config {
			return &policy.Config{Rules: goFirstRule(), Throttle: &policy.Throttle{Off: true}, Hold: &policy.Hold{Off: true}}
		}, 4 * 200, false},
		{"JSON, throttle off", func(t *testing.T) *policy.Config {
			return parsed(t, `{"methodConfig": [`+firstRule+`], "retryThrottling": {"off": true}}`)
		}, 4 * 200, true},
		{"JSON, holds off", func(t *testing.T) *policy.Config {
			return parsed(t, `{"methodConfig": [`+firstRule+`], "hold": {"off": true}}`)
		}, 50 + 187, false},
		{"JSON, a throttle of its own", func(t *testing.T) *policy.Config {
			return parsed(t, `{"methodConfig": [`+firstRule+`], "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}`)
		}, 5 + 198, true},
		{"the zero Config", func(*testing.T) *policy.Config { return &policy.Config{} }, 200, true},
		{"policy.None", func(*testing.T) *policy.Config { return policy.None() }, 200, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
					if req.URL.Host == "limited.test" {
						return rt.Step{Status: 429, Header: hdr("Retry-After", "5")}
					}
					return rt.Step{Status: 503}
				}}
				tr := &retryhttp.Transport{Base: srv, Policy: tc.cfg(t)}
				assert.Equal(t, tc.outage, outage(t, tr, srv, "down.test", 200), "attempts during the outage")

				// A 429 asking for 5 s, then at once the next request.
				for range 2 {
					req, err := http.NewRequestWithContext(retryhttp.WithoutRetries(t.Context()), "GET", "https://limited.test/", nil)
					require.NoError(t, err)
					resp, err := tr.RoundTrip(req)
					require.NoError(t, err)
					readAll(t, resp)
				}
				at := arrivals(srv)
				gap := at[len(at)-1] - at[len(at)-2]
				if tc.held {
					assert.GreaterOrEqual(t, gap, 5*time.Second, "the second request was not held")
				} else {
					assert.Zero(t, gap, "the second request was held")
				}
			})
		})
	}
}

// A first config that says nothing of the pace has policy.Default's, in
// JSON as in Go: a host's throttle paces its next requests. Turning it
// off is explicit.
func TestFirstConfigKeepsThePace(t *testing.T) {
	cases := []struct {
		name  string
		cfg   func(t *testing.T) *policy.Config
		paced bool
	}{
		{"JSON, silent", func(t *testing.T) *policy.Config { return parsed(t, `{"methodConfig": [`+firstRule+`]}`) }, true},
		{"Go, silent", func(*testing.T) *policy.Config { return &policy.Config{Rules: goFirstRule()} }, true},
		{"JSON, off", func(t *testing.T) *policy.Config {
			return parsed(t, `{"methodConfig": [`+firstRule+`], "pace": {"off": true}}`)
		}, false},
		{"Go, off", func(*testing.T) *policy.Config {
			return &policy.Config{Rules: goFirstRule(), Pace: &policy.Pace{Off: true}}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(n int, _ *http.Request) rt.Step {
					if n == 1 {
						return rt.Step{Status: 429} // bare: a throttle, no hold
					}
					return rt.Step{}
				}}
				tr := &retryhttp.Transport{Base: srv, Policy: tc.cfg(t)}
				burst(t, tr, "/limit", 1, 0)
				start := time.Now()
				burst(t, tr, "/x", 10, 0)
				if tc.paced {
					assert.Positive(t, tr.Stats().Hosts["api.test"].PaceRate)
					assert.Greater(t, time.Since(start), time.Duration(0), "the requests after the throttle were paced")
				} else {
					assert.Zero(t, tr.Stats().Hosts["api.test"].PaceRate)
					assert.Zero(t, time.Since(start))
				}
			})
		})
	}
}
