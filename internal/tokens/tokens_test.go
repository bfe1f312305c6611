package tokens

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp/policy"
)

func TestToMilli(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		tokens float64
		want   int64
	}{
		{"whole", 10, 10_000},
		{"a thousandth", 0.001, 1},
		{"rounds down", 0.12345, 123},
		{"rounds half away from zero", 0.1235, 124},
		{"rounds up to a thousandth", 0.0006, 1},
		{"below a thousandth is one", 0.0004, 1},
		{"zero is one", 0, 1},
		{"negative is one", -5, 1},
		{"negative infinity is one", math.Inf(-1), 1},
		{"NaN is one", math.NaN(), 1},
		{"the largest", 1000, Max},
		{"above the largest is the largest", 1000.5, Max},
		{"far above", 1e300, Max},
		{"infinity is the largest", math.Inf(1), Max},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ToMilli(tt.tokens)
			assert.Equal(t, tt.want, got, "got ToMilli(%v) = %d, want %d", tt.tokens, got, tt.want)
		})
	}
}

func TestLimitsOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		throttle            *policy.Throttle
		wantCap, wantRefill int64
	}{
		{nil, 0, 0},
		{&policy.Throttle{MaxTokens: 100, TokenRatio: 0.25}, 100_000, 250},
		{&policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, 10_000, 100},
		{&policy.Throttle{MaxTokens: 5000, TokenRatio: 0.0001}, Max, 1},
		{&policy.Throttle{MaxTokens: 0.0004, TokenRatio: 1}, 1, 1},
		{&policy.Throttle{MaxTokens: 2, TokenRatio: 3}, 2000, 2000},
		{&policy.Throttle{MaxTokens: 1000, TokenRatio: 1000}, Max, Max},
		{&policy.Throttle{MaxTokens: -1, TokenRatio: -1}, 1, 1},
		{&policy.Throttle{MaxTokens: math.NaN(), TokenRatio: math.NaN()}, 1, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.throttle), func(t *testing.T) {
			t.Parallel()
			l := LimitsOf(tt.throttle)
			assert.Equal(t, tt.wantCap, l.Capacity(), "got capacity %d, want %d", l.Capacity(), tt.wantCap)
			assert.Equal(t, tt.wantRefill, l.Refill(), "got refill %d, want %d", l.Refill(), tt.wantRefill)
			assert.Equal(t, tt.throttle == nil, l == 0, "got limits %#x for %v", uint64(l), tt.throttle)
		})
	}
}
