package redisfleet

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/stretchr/testify/assert"
)

// idleFleet returns a Fleet whose background work is not started, over
// a client that never dials: what Report and Look do on their own.
func idleFleet(t testing.TB) *Fleet { return idleFleetWith(t, Options{}) }

// idleFleetWith is idleFleet with opts.
func idleFleetWith(t testing.TB, opts Options) *Fleet {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = c.Close() })
	return newFleet(c, opts)
}

var throttle = &policy.Throttle{MaxTokens: 100, TokenRatio: 0.25}

func TestRequestPathDoesNotAllocate(t *testing.T) {
	const host, rule = "api.example.com:443", "methodConfig[0]"
	f := idleFleet(t)
	hold := retryhttp.FleetReport{Rule: rule, Budget: retryhttp.FleetFailure, Throttle: throttle,
		HoldUntil: time.Now().Add(time.Hour), HoldStatus: 429}
	f.Report(host, hold) // the host met, and held
	tests := []struct {
		name string
		call func()
	}{
		{"Report a failure", func() {
			f.Report(host, retryhttp.FleetReport{Rule: rule, Budget: retryhttp.FleetFailure, Throttle: throttle})
		}},
		{"Report a success", func() {
			f.Report(host, retryhttp.FleetReport{Rule: rule, Budget: retryhttp.FleetSuccess, Throttle: throttle})
		}},
		{"Report without a throttle", func() { f.Report(host, retryhttp.FleetReport{Rule: rule}) }},
		{"Report a hold already known", func() { f.Report(host, hold) }},
		{"Look under a hold", func() {
			if f.Look(host, rule).HoldUntil.IsZero() {
				t.Error("got no hold, want the one reported")
			}
		}},
		{"Look at a rule not held", func() { f.Look(host, "none") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := testing.AllocsPerRun(1000, tt.call)
			assert.Zero(t, got, "got %v allocations a call, want 0", got)
		})
	}
}

func BenchmarkReport(b *testing.B) {
	f := idleFleet(b)
	r := retryhttp.FleetReport{Rule: "methodConfig[0]", Budget: retryhttp.FleetSuccess, Throttle: throttle}
	f.Report("api.example.com", r)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			f.Report("api.example.com", r)
		}
	})
}

func BenchmarkLook(b *testing.B) {
	f := idleFleet(b)
	f.Look("api.example.com", "methodConfig[0]")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			f.Look("api.example.com", "methodConfig[0]")
		}
	})
}
