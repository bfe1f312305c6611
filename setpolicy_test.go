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
		assert.Equal(t, uint64(2*counts["2"]), st.Total.ExtraAttempts)
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
		assert.Contains(t, tr.Stats().Rules, "*")

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

// A hold is kept on the rule whose request met it, whatever that rule's
// place in the policy: a SetPolicy that reorders the rules while the hold
// is in force moves nothing, for the Transport and for a fleet's members.
func TestReorderedRulesKeepTheirHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rule := func(path string) policy.Rule {
			return policy.Rule{Name: []policy.Name{{Path: path}}, Retry: &policy.Retry{MaxAttempts: 2,
				InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, BackoffMultiplier: 1, RetryableStatusCodes: []int{503}}}
		}
		items, users := rule("/v1/items"), rule("/v1/users")
		srv := &rt.Server{Choose: func(i int, req *http.Request) rt.Step {
			if i == 1 { // the first answer holds /v1/items for half a minute
				return rt.Step{Status: 429, Header: http.Header{"Retry-After": {"30"}}}
			}
			return rt.Step{}
		}}
		fleet := newMemFleet()
		tr := &retryhttp.Transport{Base: srv, Policy: &policy.Config{Rules: []policy.Rule{items, users}, Hold: &policy.Hold{}}}
		member := &retryhttp.Transport{Base: srv, Fleet: fleet, Policy: &policy.Config{Rules: []policy.Rule{items, users}, Hold: &policy.Hold{}}}
		tr.Fleet = fleet

		// Each request gives itself a second: less than the hold lasts.
		get := func(tr *retryhttp.Transport, path string) error {
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, "GET", "https://api.test"+path, nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				readAll(t, resp)
			}
			return err
		}
		require.NoError(t, get(tr, "/v1/items")) // the 429 comes back: its hold outlasts the deadline
		srv.WantAttempts(t, 1)

		reordered := &policy.Config{Rules: []policy.Rule{users, items}, Hold: &policy.Hold{}}
		require.NoError(t, tr.SetPolicy(reordered))
		require.NoError(t, member.SetPolicy(reordered))
		for _, tr := range []*retryhttp.Transport{tr, member} {
			assert.ErrorIs(t, get(tr, "/v1/items"), retryhttp.ErrHeld, "the hold stays on the rule of /v1/items")
			assert.NoError(t, get(tr, "/v1/users"), "the rule now first is not held")
		}
		srv.WantAttempts(t, 3)
	})
}
