package retryhttp_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// Policies with and without holds, pace, admission and a throttle, with
// retry and hedging rules in turn, and invalid ones, swapped while
// requests wait on all of these: every request ends, each invalid policy
// is refused and changes nothing, no concurrency slot is kept, and the
// totals count every request.
func TestSetPolicySwapsProtectionsUnderLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		retry := func(path string) policy.Rule {
			return policy.Rule{Name: []policy.Name{{Path: path}}, Retry: &policy.Retry{MaxAttempts: 4,
				RetryableStatusCodes: []int{429, 503},
				Backoff:              policy.Exponential{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond, Multiplier: 2}}}
		}
		hedge := func(path string) policy.Rule {
			return policy.Rule{Name: []policy.Name{{Path: path}}, Hedge: &policy.Hedge{MaxAttempts: 3,
				HedgingDelay: 20 * time.Millisecond, NonFatalStatusCodes: []int{503}}}
		}
		invalid := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}}, Retry: &policy.Retry{MaxAttempts: 1}}}}
		cfgs := []*policy.Config{
			{Rules: []policy.Rule{retry("/a"), hedge("/b")}},
			{Rules: []policy.Rule{hedge("/a"), retry("/b")}, Admission: &policy.Admission{MaxConcurrency: 3, MaxWait: 50 * time.Millisecond}},
			policy.None(),
			{Rules: []policy.Rule{retry("/b"), retry("/a")}, Hold: &policy.Hold{Off: true}, Pace: &policy.Pace{Off: true},
				Throttle: &policy.Throttle{Off: true}, Admission: &policy.Admission{MaxConcurrency: 1, MaxWait: -1}},
			invalid,
			nil,
			{Rules: []policy.Rule{retry("/a"), hedge("/b")}, Throttle: &policy.Throttle{MaxTokens: 3, TokenRatio: 0.1},
				Admission: &policy.Admission{MaxConcurrency: 2}},
		}
		// Holds, throttles that pace, slow answers and slow failures.
		srv := &rt.Server{Choose: func(i int, req *http.Request) rt.Step {
			switch i % 7 {
			case 0:
				return rt.Step{Status: 429, Header: http.Header{"Retry-After": {"1"}}}
			case 1:
				return rt.Step{Status: 503, Delay: 30 * time.Millisecond}
			case 2:
				return rt.Step{Status: 503, Header: http.Header{"Retry-After": {"0"}}}
			case 3:
				return rt.Step{Delay: 80 * time.Millisecond}
			}
			return rt.Step{Delay: time.Duration(i%5) * time.Millisecond}
		}}
		tr := &retryhttp.Transport{Base: srv, Policy: cfgs[0]}
		const requests = 600
		var wg sync.WaitGroup
		var answered, failed atomic.Int64
		for i := range requests {
			wg.Go(func() {
				time.Sleep(time.Duration(i%200) * 5 * time.Millisecond)
				ctx, cancel := context.WithTimeout(t.Context(), time.Duration(1+i%3)*time.Second)
				defer cancel()
				path := []string{"/a", "/b"}[i%2]
				req, err := http.NewRequestWithContext(ctx, "GET", "https://h"+strconv.Itoa(i%3)+".test"+path, nil)
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					assert.NotErrorIs(t, err, policy.ErrInvalid, "an invalid policy was refused, never put in force")
					var e *retryhttp.Error
					assert.True(t, errors.As(err, &e), "got %T %v, want a *retryhttp.Error", err, err)
					failed.Add(1)
					return
				}
				readAll(t, resp)
				answered.Add(1)
			})
		}
		// The last policy set has admission on, so that its slots can be
		// counted at the end.
		for i := range 7*40 + 7 {
			cfg := cfgs[i%len(cfgs)]
			if err := tr.SetPolicy(cfg); cfg == invalid {
				require.ErrorIs(t, err, policy.ErrInvalid)
			} else {
				require.NoError(t, err)
			}
			time.Sleep(3 * time.Millisecond)
			_ = tr.Stats() // read while requests and swaps run
		}
		wg.Wait()
		st := tr.Stats()
		assert.Nil(t, st.PolicyErr)
		assert.Equal(t, int64(requests), answered.Load()+failed.Load())
		assert.Positive(t, answered.Load(), "some requests were answered")
		assert.Equal(t, uint64(requests), st.Total.Requests, "the totals carry on")
		require.Len(t, st.Hosts, 3)
		for h, hs := range st.Hosts {
			// The limit adapts to the losses, from the policy's 2 down.
			assert.Positive(t, hs.ConcurrencyLimit, "host %s: got no limit, want the policy's admission", h)
			assert.LessOrEqual(t, hs.ConcurrencyLimit, 2, "host %s: got limit %d, want at most the policy's 2", h, hs.ConcurrencyLimit)
			assert.Zero(t, hs.InFlight, "host %s: got %d slots kept, want none", h, hs.InFlight)
		}
		for key, c := range st.Rules {
			assert.LessOrEqual(t, c.ExtraAttemptsFailed, c.ExtraAttempts, "rule %s", key)
			assert.LessOrEqual(t, c.HedgesWon, c.Hedges, "rule %s", key)
			assert.LessOrEqual(t, c.Hedges, c.ExtraAttempts, "rule %s", key)
		}
	})
}
