package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefault(t *testing.T) {
	t.Parallel()
	want := &Config{
		Rules: []Rule{{
			Name: []Name{{}},
			Retry: &Retry{
				MaxAttempts:          3,
				InitialBackoff:       100 * time.Millisecond,
				MaxBackoff:           2 * time.Second,
				BackoffMultiplier:    2,
				Jitter:               0.2,
				RetryableStatusCodes: []int{429, 502, 503, 504},
			},
		}},
		Throttle: &Throttle{MaxTokens: 100, TokenRatio: 0.25},
		Hold:     &Hold{},
		Pace:     &Pace{},
	}
	got := Default()
	assert.Equal(t, want, got, "got %+v, want %+v", got, want)
	err := got.Validate()
	assert.NoError(t, err, "got %v, want nil", err)
}

func TestDefaultIsFresh(t *testing.T) {
	t.Parallel()
	a := Default()
	a.Rules[0].Retry.RetryableStatusCodes[0] = 500
	a.Rules[0].Name[0].Host = "changed.example"
	a.Throttle.MaxTokens = 1
	b := Default()
	assert.Equal(t, 429, b.Rules[0].Retry.RetryableStatusCodes[0], "got %d, want 429", b.Rules[0].Retry.RetryableStatusCodes[0])
	assert.Empty(t, b.Rules[0].Name[0].Host, "got %q, want empty", b.Rules[0].Name[0].Host)
	assert.Equal(t, 100.0, b.Throttle.MaxTokens, "got %v, want 100", b.Throttle.MaxTokens)
}

// throttleRun sends requests through one gRPC (A6) token bucket, as the
// transport does: attempt k, counted over the whole run from 0, fails when
// fails(k); a failure takes a token, any other answer adds tokenRatio, and
// no retry starts while the bucket holds maxTokens/2 or less. It returns
// the attempts sent and the retries refused by the bucket.
func throttleRun(th Throttle, maxAttempts, requests int, fails func(k int) bool) (attempts, refused int) {
	tokens := th.MaxTokens
	for range requests {
		for a := 1; ; a++ {
			k := attempts
			attempts++
			if !fails(k) {
				tokens = min(tokens+th.TokenRatio, th.MaxTokens)
				break
			}
			tokens = max(tokens-1, 0)
			if a == maxAttempts {
				break
			}
			if tokens <= th.MaxTokens/2 {
				refused++
				break
			}
		}
	}
	return attempts, refused
}

// TestDefaultThrottleClaims checks the numbers in Default's documentation.
func TestDefaultThrottleClaims(t *testing.T) {
	t.Parallel()
	c := Default()
	th, maxAttempts := *c.Throttle, c.Rules[0].Retry.MaxAttempts

	t.Run("outage", func(t *testing.T) {
		t.Parallel()
		const requests = 2000
		attempts, _ := throttleRun(th, maxAttempts, requests, func(int) bool { return true })
		assert.LessOrEqual(t, attempts-requests, 50, "got %d extra attempts, want at most 50", attempts-requests)
		perRequest := float64(attempts) / requests
		assert.LessOrEqual(t, perRequest, 1.025, "got %v attempts per request, want at most 1.025", perRequest)
	})

	t.Run("drift is zero at 20% failures", func(t *testing.T) {
		t.Parallel()
		drift := func(p, ratio float64) float64 { return -p + (1-p)*ratio }
		got := drift(0.2, th.TokenRatio)
		assert.InDelta(t, 0, got, 1e-12, "got drift %v at p=0.2, want 0", got)
		got = drift(0.1, th.TokenRatio)
		assert.Positive(t, got, "got drift %v at p=0.1, want > 0", got)
		got = drift(0.1/1.1, 0.1)
		assert.InDelta(t, 0, got, 1e-12, "got drift %v at p=1/11 with ratio 0.1, want 0", got)
	})

	// One attempt in ten fails with 503; its retry succeeds.
	tenPercent := func(k int) bool { return k%10 == 9 }
	t.Run("10% failures keep retrying", func(t *testing.T) {
		t.Parallel()
		_, refused := throttleRun(th, maxAttempts, 20000, tenPercent)
		assert.Zero(t, refused, "got %d refused retries, want 0", refused)
	})
	t.Run("ratio 0.1 stops retrying at 10% failures", func(t *testing.T) {
		t.Parallel()
		grpc := Throttle{MaxTokens: th.MaxTokens, TokenRatio: 0.1}
		_, refused := throttleRun(grpc, maxAttempts, 20000, tenPercent)
		require.Positive(t, refused, "got %d refused retries, want some", refused)
	})
}

func TestNone(t *testing.T) {
	t.Parallel()
	c := None()
	require.NotNil(t, c, "got nil, want a Config")
	want := &Config{Throttle: &Throttle{Off: true}, Hold: &Hold{Off: true}, Pace: &Pace{Off: true}}
	assert.Equal(t, want, c, "got %+v, want a Config with no rules, its throttle, holds and pace off", c)
	in := c.InForce()
	assert.Nil(t, in.Throttle, "in force: got throttle %+v, want none", in.Throttle)
	assert.Nil(t, in.Hold, "in force: got hold %+v, want none", in.Hold)
	assert.Nil(t, in.Pace, "in force: got pace %+v, want none", in.Pace)
	err := c.Validate()
	assert.NoError(t, err, "got %v, want nil", err)
	for _, target := range []string{"https://api.example.com/v3/x", "http://[::1]:8080/", "http://a.example"} {
		for _, method := range []string{"GET", "POST", "DELETE"} {
			rule, index := c.Match(newRequest(t, method, target))
			assert.Nil(t, rule, "%s %s: got rule %+v, want none", method, target, rule)
			assert.Equal(t, -1, index, "%s %s: got index %d, want -1", method, target, index)
		}
	}
	c.Rules = append(c.Rules, Default().Rules...)
	c.Throttle.MaxTokens, c.Throttle.TokenRatio, c.Throttle.Off = 1, 1, false
	c.Hold.Off = false
	again := None()
	assert.Empty(t, again.Rules, "got %d rules after changing an earlier None, want 0", len(again.Rules))
	assert.Equal(t, want, again, "got %+v after changing an earlier None, want %+v", again, want)
}
