package redisfleet

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/stretchr/testify/assert"
)

// TestAHoldMetIsSentOrCounted has the holds channel carry holds on other
// rules of a host the member tracks, as many as the bound on a host's
// holds, ending far ahead (a broken or hostile publisher, or a fleet of
// many rules): a hold the member then meets itself must still go to the
// store, or, if the bound keeps it out, be counted in Stats.Dropped, not
// vanish.
func TestAHoldMetIsSentOrCounted(t *testing.T) {
	f := idleFleet(t)
	f.host("h") // met
	for i := range maxHolds {
		f.receive(&redis.Message{Channel: f.channel, Payload: holdMessage(math.MaxInt64, 429, "h", fmt.Sprintf("junk%d", i))})
	}
	end := time.Now().Add(time.Hour)
	f.Report("h", retryhttp.FleetReport{Rule: "r", Budget: retryhttp.FleetFailure, Throttle: throttle,
		HoldUntil: end, HoldStatus: 429})

	unsent := f.host("h").unsent(nil, time.Now().UnixMilli())
	assert.True(t, len(unsent) == 1 || f.Stats().Dropped > 0,
		"got the member's own hold neither to send (%d unsent) nor counted as dropped (%d)", len(unsent), f.Stats().Dropped)
}
