package redisfleet

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
)

// TestAHugeLevelReadsAsFull has the store answer a budget batch with
// levels a broken or hostile store may give: a level at or above the
// capacity is a full bucket, however large, and never reads as spent;
// one below zero, however far, is spent.
func TestAHugeLevelReadsAsFull(t *testing.T) {
	tests := []struct {
		name  string
		level int64
		spent bool
	}{
		{"half the capacity", 50_000, true},
		{"the capacity", 100_000, false},
		{"above the capacity", 1 << 40, false},
		{"past half the longest int64", math.MaxInt64/2 + 1, false},
		{"the longest int64", math.MaxInt64, false},
		{"below zero", -1, true},
		{"the most negative int64", math.MinInt64, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := idleFleet(t)
			h := f.host("h")
			cmd := redis.NewCmd(context.Background())
			cmd.SetVal(tt.level)
			it := item{h: h, kind: budgetItem, seq: 1, delta: -1000, capacity: 100_000, cmd: cmd}
			f.apply(&it)
			assert.Equal(t, tt.spent, h.spent(f.sinceEpoch(time.Now()), time.Minute.Milliseconds()),
				"got level %d of 100000 read as spent=%v", tt.level, !tt.spent)
		})
	}
}
