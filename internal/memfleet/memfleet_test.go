package memfleet

import (
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/stretchr/testify/assert"
)

// The fleet's bucket is spent at half its capacity, refills by the
// throttle's ratio, and is one per host whoever reports.
func TestSharesABucketPerHost(t *testing.T) {
	th := &policy.Throttle{MaxTokens: 10, TokenRatio: 0.5}
	f := New()
	assert.False(t, f.Look("a.test", "r").Spent, "full before any report")
	for range 4 {
		f.Report("a.test", retryhttp.FleetReport{Rule: "r", Budget: retryhttp.FleetFailure, Throttle: th})
	}
	assert.False(t, f.Look("a.test", "r").Spent, "6 of 10 tokens")
	f.Report("a.test", retryhttp.FleetReport{Rule: "other", Budget: retryhttp.FleetFailure, Throttle: th})
	assert.True(t, f.Look("a.test", "r").Spent, "5 of 10 tokens, whatever the rule")
	assert.False(t, f.Look("b.test", "r").Spent, "another host's bucket")
	f.Report("a.test", retryhttp.FleetReport{Rule: "r", Budget: retryhttp.FleetSuccess, Throttle: th})
	assert.False(t, f.Look("a.test", "r").Spent, "5.5 of 10 tokens")
	f.Report("a.test", retryhttp.FleetReport{Rule: "r", Budget: retryhttp.FleetNoChange, Throttle: th})
	assert.False(t, f.Look("a.test", "r").Spent, "no change")
}

// A hold is kept per host and rule, and the latest end wins.
func TestKeepsTheLatestHold(t *testing.T) {
	f := New()
	now := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Report("a.test", retryhttp.FleetReport{Rule: "r", HoldUntil: now.Add(time.Second), HoldStatus: 429})
	f.Report("a.test", retryhttp.FleetReport{Rule: "r", HoldUntil: now.Add(time.Millisecond), HoldStatus: 503})
	assert.Equal(t, retryhttp.FleetView{HoldUntil: now.Add(time.Second), HoldStatus: 429}, f.Look("a.test", "r"))
	assert.Equal(t, retryhttp.FleetView{}, f.Look("a.test", "other"), "another rule")
	assert.Equal(t, retryhttp.FleetView{}, f.Look("b.test", "r"), "another host")
}
