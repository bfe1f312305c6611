package retryhttp

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Each first attempt earns maxExtraLoad of a hedge, never more, so that
// n requests earn at most maxExtraLoad*n + 10 hedges whatever the
// fraction: a fraction between two millionths is rounded down, and one
// that floating point writes a hair below its millionths loses none.
func TestHedgeBudgetEarnsNoMoreThanItsFraction(t *testing.T) {
	for _, tc := range []struct {
		fraction float64
		want     int64 // millionths earned by one request on an empty budget
	}{
		{0.5e-6, 0},
		{1e-6, 1},
		{2.5e-6, 2},
		{0.02, 20_000},
		{0.07, 70_000},
		{1.0 / 3, 333_333},
		{1, 1_000_000},
	} {
		var b hedgeBudget
		assert.Equal(t, tc.want, b.earn(tc.fraction), "earned for %g", tc.fraction)
	}
}
