package redisfleet

import (
	"fmt"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/stretchr/testify/assert"
)

func TestHostsAreBounded(t *testing.T) {
	f := idleFleetWith(t, Options{MaxHosts: 8})
	busy := retryhttp.FleetReport{Budget: retryhttp.FleetFailure, Throttle: throttle}
	f.Report("busy.example.com", busy) // a delta to send: kept over idle hosts
	for i := range 100 {
		f.Look(fmt.Sprintf("h%d.example.com", i), "r")
		assert.LessOrEqual(t, f.Stats().Hosts, 8, "got %d hosts after %d, want at most 8", f.Stats().Hosts, i+1)
	}
	assert.NotNil(t, f.tracked("busy.example.com"), "got the host with a delta to send evicted before idle ones")
	assert.NotNil(t, f.tracked("h99.example.com"), "got the newest host evicted")
	assert.Zero(t, f.Stats().Dropped, "got reports dropped while idle hosts could go")
}

func TestEvictingABusyHostCountsItsReports(t *testing.T) {
	f := idleFleetWith(t, Options{MaxHosts: 2})
	busy := retryhttp.FleetReport{Budget: retryhttp.FleetFailure, Throttle: throttle}
	for i := range 10 {
		f.Report(fmt.Sprintf("h%d.example.com", i), busy)
	}
	assert.LessOrEqual(t, f.Stats().Hosts, 2)
	assert.Equal(t, uint64(8), f.Stats().Dropped, "got %d dropped, want one per busy host evicted", f.Stats().Dropped)
}

func TestAHeldHostIsNotQuiet(t *testing.T) {
	f := idleFleetWith(t, Options{MaxHosts: 2})
	f.Report("held.example.com", retryhttp.FleetReport{Rule: "r", HoldUntil: time.Now().Add(time.Hour), HoldStatus: 429})
	for i := range 10 {
		f.Look(fmt.Sprintf("h%d.example.com", i), "r")
	}
	assert.NotNil(t, f.tracked("held.example.com"), "got a held host evicted before idle ones")
}
