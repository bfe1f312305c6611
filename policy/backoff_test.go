package policy

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestExponentialNaNJitter(t *testing.T) {
	t.Parallel()
	for _, r := range []float64{0, 0.5, 0.999} {
		got := exponential(time.Second, time.Minute, 2, math.NaN(), 3, r)
		assert.Equal(t, 8*time.Second, got, "r=%v: got %v, want 8s", r, got)
	}
}
