package redisfleet

import (
	"testing"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/stretchr/testify/assert"
)

// TestASampledSuccessOnASmallBucketIsNotDropped has a healthy member
// under a throttle whose sampled success (16 refills) is more than the
// bucket holds: clamped to the capacity, it still fills any bucket, so
// nothing of its effect is lost, and Stats.Dropped, which tells an
// operator that reports were lost, stays at zero.
func TestASampledSuccessOnASmallBucketIsNotDropped(t *testing.T) {
	f := idleFleet(t)
	small := &policy.Throttle{MaxTokens: 10, TokenRatio: 1}
	for range successWeight {
		f.Report("h", retryhttp.FleetReport{Budget: retryhttp.FleetSuccess, Throttle: small})
	}
	assert.Equal(t, int64(10_000), f.host("h").pending.Load(), "a full swing to send")
	assert.Zero(t, f.Stats().Dropped, "got a success that fills the bucket counted as lost")
}
