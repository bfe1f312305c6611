package redisfleet

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/stretchr/testify/assert"
)

// TestBatchSentAgainAsItWas checks the member's half of counting a
// budget batch once: a batch the store did not answer goes again with
// its number and delta, the deltas reported since waiting behind it; an
// answered batch lets the next one go, numbered higher.
func TestBatchSentAgainAsItWas(t *testing.T) {
	f := idleFleet(t)
	var b batch
	budget := func() item {
		t.Helper()
		b.seq++
		f.collect(&b)
		for _, it := range b.items {
			if it.kind == budgetItem {
				return it
			}
		}
		t.Fatal("got no budget batch")
		return item{}
	}
	fail := retryhttp.FleetReport{Budget: retryhttp.FleetFailure, Throttle: throttle}
	f.Report("h", fail)
	f.Report("h", fail)
	f.Report("h", fail)
	h := f.host("h")
	first := budget()
	assert.Equal(t, item{h: h, kind: budgetItem, seq: 1, delta: -3000, capacity: 100_000}, first)

	f.Report("h", fail) // reported while the first batch is unanswered
	f.keep(&first)
	again := budget()
	assert.Equal(t, first, again, "got the unanswered batch changed")

	ok := again
	ok.cmd = redis.NewCmd(context.Background())
	ok.cmd.(*redis.Cmd).SetVal(int64(96_000))
	select { // the wake-ups of the reports, spent by the round trips
	case <-f.urgent:
	default:
	}
	f.apply(&ok)
	assert.Zero(t, h.inflight.Load(), "got the answered batch still in flight")
	assert.Len(t, f.urgent, 1, "got the deltas that waited behind the batch not due")
	assert.False(t, h.spent(f.sinceEpoch(time.Now()), time.Minute.Milliseconds()), "got 96 tokens read as spent")
	next := budget()
	assert.Equal(t, item{h: h, kind: budgetItem, seq: 3, delta: -1000, capacity: 100_000}, next)
}

func TestAHostWithABatchInFlightIsNotQuiet(t *testing.T) {
	f := idleFleet(t)
	h := f.host("h")
	assert.True(t, h.quiet(time.Now().UnixMilli()))
	h.inflight.Store(-1000)
	assert.False(t, h.quiet(time.Now().UnixMilli()), "got a host whose batch the store has not answered evictable without loss")
}
