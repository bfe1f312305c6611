package retryhttp_test

import (
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Transport's policy is its own once taken: what the caller does to
// the Config afterwards, at first use or at SetPolicy, changes nothing.
func TestPolicyEditsAfterUseChangeNothing(t *testing.T) {
	edits := []struct {
		name string
		edit func(cfg *policy.Config)
	}{
		{"maxAttempts", func(cfg *policy.Config) { cfg.Rules[0].Retry.MaxAttempts = 1 }},
		{"the retryable statuses", func(cfg *policy.Config) { cfg.Rules[0].Retry.RetryableStatusCodes[0] = 500 }},
		{"the rule's name", func(cfg *policy.Config) { cfg.Rules[0].Name[0].Path = "/elsewhere" }},
		{"the retry policy itself", func(cfg *policy.Config) { cfg.Rules[0].Retry = nil }},
		{"the rules", func(cfg *policy.Config) { cfg.Rules = nil }},
		{"the backoff's steps", func(cfg *policy.Config) {
			cfg.Rules[0].Retry.Backoff.(*policy.Table).Steps[0] = time.Hour
		}},
	}
	// A 503 retried twice, 100 ms apart: three attempts, 200 ms.
	cfg := func() *policy.Config {
		return &policy.Config{
			Rules: []policy.Rule{{
				Name: []policy.Name{{Path: "/v1/"}},
				Retry: &policy.Retry{MaxAttempts: 3, RetryableStatusCodes: []int{503},
					Backoff: &policy.Table{Steps: []time.Duration{100 * time.Millisecond}}},
			}},
			Throttle: &policy.Throttle{Off: true},
		}
	}
	send := func(t *testing.T, tr *retryhttp.Transport, s *rt.Server) {
		t.Helper()
		before := s.Count()
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, 3, s.Count()-before, "got %d attempts, want 3", s.Count()-before)
		// Table jitters each step by [0.5, 1.5): two waits of 50-150 ms.
		assert.Less(t, time.Since(start), 300*time.Millisecond, "the waits changed")
	}
	for _, e := range edits {
		t.Run(e.name+" after first use", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := cfg()
				tr, s := newScripted(c, rt.Step{Status: 503})
				send(t, tr, s)
				e.edit(c)
				send(t, tr, s)
			})
		})
		t.Run(e.name+" after SetPolicy", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, s := newScripted(policy.None(), rt.Step{Status: 503})
				c := cfg()
				require.NoError(t, tr.SetPolicy(c))
				e.edit(c)
				send(t, tr, s)
				send(t, tr, s)
			})
		})
	}
}

// A Config built in Go is reported in Go's words: the error names the
// field as the caller wrote it, and the way out.
func TestGoConfigErrorsNameGoFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := &policy.Config{Rules: []policy.Rule{{
			Name:  []policy.Name{{}},
			Retry: &policy.Retry{MaxAttempts: 3, RetryableStatusCodes: []int{503}},
		}}}
		tr, s := newScripted(cfg, rt.Step{Status: 503})
		_, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.ErrorIs(t, err, policy.ErrInvalid)
		assert.Contains(t, err.Error(), "Rules[0].Retry.InitialBackoff: 0s")
		assert.Contains(t, err.Error(), "Backoff")
		assert.NotContains(t, err.Error(), "methodConfig")
		assert.Zero(t, s.Count(), "nothing was sent")

		err = tr.SetPolicy(&policy.Config{Throttle: &policy.Throttle{MaxTokens: 10}})
		require.ErrorIs(t, err, policy.ErrInvalid)
		assert.Contains(t, err.Error(), "Throttle.TokenRatio: 0")
	})
}

// A retry policy's attempts are bounded whatever its figure says, as
// gRPC's are: a maxAttempts of a million against a host that always
// fails sends ten attempts, not as many as the deadline allows.
func TestRetryAttemptsAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int
		want int
	}{
		{"a million", 1_000_000, policy.MaxRetryAttempts},
		{"eleven", 11, policy.MaxRetryAttempts},
		{"ten", 10, 10},
		{"Google's six", 6, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg, err := policy.ParseConfig([]byte(`{"methodConfig": [{"name": [{}],
				  "retryPolicy": {"maxAttempts": ` + strconv.Itoa(tc.max) + `, "initialBackoff": "0.1s",
				    "maxBackoff": "0.1s", "backoffMultiplier": 1, "retryableStatusCodes": [503]}}],
				  "retryThrottling": {"off": true}}`))
				require.NoError(t, err)
				tr, s := newScripted(cfg, rt.Step{Status: 503})
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), http.MethodGet, ""))
				require.NoError(t, err)
				readAll(t, resp)
				assert.Equal(t, 503, resp.StatusCode)
				assert.Equal(t, tc.want, s.Count(), "got %d attempts, want %d", s.Count(), tc.want)
			})
		})
	}
}

// A retry policy read from JSON waits as the design's formula says:
// before retry n, min(initialBackoff * multiplier^n, maxBackoff) times
// 1 ± jitter, jitter 0.2 when left out, the cap taken before the jitter.
func TestJSONRetryWaitsFollowTheFormula(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := parsed(t, `{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 5,
		  "initialBackoff": "1s", "maxBackoff": "3s", "backoffMultiplier": 2,
		  "retryableStatusCodes": [503]}}], "retryThrottling": {"off": true}}`)
		tr, s := newScripted(cfg, rt.Step{Status: 503})
		var log hookLog
		tr.Hooks = log.hooks("")
		for range 30 {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			readAll(t, resp)
		}
		assert.Equal(t, 30*5, s.Count())
		waits := log.waits()
		require.Len(t, waits, 30*4)
		spread := map[int][2]time.Duration{}
		for i, w := range waits {
			n := i % 4
			base := min(time.Second<<n, 3*time.Second)
			assert.GreaterOrEqual(t, w.Delay, base*8/10, "wait %d", n)
			assert.LessOrEqual(t, w.Delay, base*12/10, "wait %d", n)
			r, ok := spread[n]
			if !ok {
				r = [2]time.Duration{w.Delay, w.Delay}
			}
			spread[n] = [2]time.Duration{min(r[0], w.Delay), max(r[1], w.Delay)}
		}
		for n, r := range spread {
			base := min(time.Second<<n, 3*time.Second)
			assert.Greater(t, r[1]-r[0], base/5, "wait %d: jittered over more than a tenth each way", n)
		}
	})
}
