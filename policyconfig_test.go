package retryhttp_test

import (
	"testing"
	"testing/synctest"

	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
