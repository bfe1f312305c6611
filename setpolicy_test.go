package retryhttp_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Policies swapped while 1000 requests run: each request keeps the rule
// it started with (3 attempts or 1, never 2), and the totals carry on.
func TestSetPolicyUnderLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		three := retryConfig(3, 503)
		three.Throttle = &policy.Throttle{Off: true} // every request under it retries
		tr, _ := newScripted(three, rt.Step{Status: 503})
		const requests = 1000
		var wg sync.WaitGroup
		got := make([]string, requests)
		for i := range requests {
			wg.Go(func() {
				time.Sleep(time.Duration(i%50) * time.Millisecond)
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				if assert.NoError(t, err) {
					readAll(t, resp)
					got[i] = resp.Header.Get(retryhttp.AttemptsHeader)
				}
			})
		}
		for i := range 100 {
			cfg := three
			if i%2 == 0 {
				cfg = policy.None()
			}
			require.NoError(t, tr.SetPolicy(cfg))
			time.Sleep(time.Millisecond)
		}
		wg.Wait()
		counts := map[string]int{}
		for _, g := range got {
			counts[g]++
		}
		assert.Zero(t, counts["1"], "no request changed its rule halfway: %v", counts)
		assert.Positive(t, counts[""], "some requests ran under policy.None")
		assert.Positive(t, counts["2"], "some requests ran under the retry rule")
		st := tr.Stats()
		assert.Equal(t, uint64(requests), st.Total.Requests, "the totals carry on")
		assert.Equal(t, uint64(2*counts["2"]), st.Total.RetryAttempts)
	})
}

// SetPolicy checks what it is given: an invalid config changes nothing,
// nil means policy.Default, and a Transport built with an invalid policy
// is mended.
func TestSetPolicyChecksItsConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bad := retryConfig(1, 503) // maxAttempts 1
		tr, s := newScripted(bad, rt.Step{Status: 503}, rt.Step{})
		_, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.ErrorIs(t, err, policy.ErrInvalid)
		assert.Contains(t, err.Error(), "MaxAttempts")

		err = tr.SetPolicy(bad)
		require.ErrorIs(t, err, policy.ErrInvalid)
		assert.Contains(t, err.Error(), "Rules[0].Retry.MaxAttempts: 1")

		require.NoError(t, tr.SetPolicy(nil)) // policy.Default: 503 is retried
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, 200, resp.StatusCode)
		s.WantAttempts(t, 2)
		assert.Contains(t, tr.Stats().Rules, "methodConfig[0]")

		require.ErrorIs(t, tr.SetPolicy(bad), policy.ErrInvalid)
		resp, err = tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err, "the policy in force is kept")
		readAll(t, resp)
	})
}

// A host's budget carries over a new policy: a host that spent its tokens
// under one policy is still throttled under the next, and a policy with no
// throttle stops gating.
func TestSetPolicyKeepsBudgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := retryConfig(2, 503)
		cfg.Throttle = &policy.Throttle{MaxTokens: 4, TokenRatio: 0.1}
		tr, s := newScripted(cfg, rt.Step{Status: 503})
		get := func() {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			readAll(t, resp)
		}
		get() // 2 failures: 2 tokens left, no more retries
		get() // refused
		require.Equal(t, 3, s.Count())

		next := retryConfig(3, 503)
		next.Throttle = &policy.Throttle{MaxTokens: 4, TokenRatio: 0.1}
		require.NoError(t, tr.SetPolicy(next))
		get()
		assert.Equal(t, 4, s.Count(), "still throttled under the new policy")
		assert.Equal(t, uint64(2), tr.Stats().Total.BudgetRefusals)

		unthrottled := retryConfig(3, 503)
		unthrottled.Throttle = &policy.Throttle{Off: true}
		require.NoError(t, tr.SetPolicy(unthrottled))
		get()
		assert.Equal(t, 7, s.Count(), "no throttle: retried")
	})
}
