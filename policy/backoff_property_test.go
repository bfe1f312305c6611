package policy

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// draws is the number of random cases per backoff type: enough to reach
// the odd corners below many times, small enough to run in milliseconds.
const draws = 20_000

// The property tests below draw parameters and attempt numbers from a
// fixed seed, so that a failure replays, and check each Duration(n), with
// its own hidden random value, against bounds derived from the type's
// documentation rather than from its code.

func randAttempt(rng *rand.Rand) int {
	switch rng.IntN(8) {
	case 0:
		return -rng.IntN(1000) - 1
	case 1:
		return []int{math.MaxInt32, math.MaxInt, 10_000, 1023, 1024}[rng.IntN(5)]
	}
	return rng.IntN(40)
}

func randDuration(rng *rand.Rand) time.Duration {
	switch rng.IntN(10) {
	case 0:
		return 0
	case 1:
		return -time.Duration(rng.Int64N(int64(time.Hour)))
	case 2:
		return math.MaxInt64 - time.Duration(rng.Int64N(1000))
	}
	return time.Duration(rng.Int64N(int64(10 * time.Minute)))
}

func randFloat(rng *rand.Rand, lo, hi float64) float64 {
	switch rng.IntN(20) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1)
	case 2:
		return math.Inf(-1)
	}
	return lo + rng.Float64()*(hi-lo)
}

// withinBounds fails the test unless lo <= got <= hi.
func withinBounds(t *testing.T, b Backoff, n int, lo, hi time.Duration) {
	t.Helper()
	got := b.Duration(n)
	require.GreaterOrEqual(t, got, lo, "%#v.Duration(%d): got %v, want at least %v", b, n, got, lo)
	require.LessOrEqual(t, got, hi, "%#v.Duration(%d): got %v, want at most %v", b, n, got, hi)
}

// capOf is the cap that Max means: no cap below the largest Duration when
// Max <= 0.
func capOf(max time.Duration) time.Duration {
	if max <= 0 {
		return math.MaxInt64
	}
	return max
}

func TestExponentialBounds(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range draws {
		e := Exponential{
			Initial:    randDuration(rng),
			Max:        randDuration(rng),
			Multiplier: randFloat(rng, 0, 4),
			Jitter:     randFloat(rng, -0.5, 1.5),
		}
		n := randAttempt(rng)
		if e.Initial <= 0 {
			withinBounds(t, e, n, 0, 0)
			continue
		}
		j := e.Jitter
		if math.IsNaN(j) {
			j = 0
		}
		j = min(max(j, 0), 1)
		// Before jitter the wait is at least the smaller of Initial and
		// the cap (the multiplier is at least 1), and at most the cap.
		floor := float64(min(e.Initial, capOf(e.Max)))
		ceiling := float64(capOf(e.Max))
		withinBounds(t, e, n, toDuration(floor*(1-j)), toDuration(ceiling*(1+j)))
	}
}

func TestFullJitterBounds(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for range draws {
		f := FullJitter{
			Initial:    randDuration(rng),
			Max:        randDuration(rng),
			Multiplier: randFloat(rng, 0, 4),
		}
		n := randAttempt(rng)
		hi := time.Duration(0)
		if f.Initial > 0 {
			hi = capOf(f.Max)
		}
		withinBounds(t, f, n, 0, hi)
	}
}

func TestGoogleAPIBounds(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for range draws {
		g := GoogleAPI{Max: randDuration(rng)}
		n := randAttempt(rng)
		limit := g.Max
		if limit <= 0 {
			limit = DefaultGoogleAPIMax
		}
		// 2^n seconds, then up to 1000 ms more, all under the cap. The
		// formula works in float64, exact below 2^53 ns (104 days); above,
		// the bounds are rounded the same way.
		base := toDuration(float64(time.Second) * math.Exp2(float64(max(n, 0))))
		lo := min(base, limit)
		hi := min(base+min(time.Second, math.MaxInt64-base), limit)
		withinBounds(t, g, n, toDuration(float64(lo)), toDuration(float64(hi)))
	}
}

func TestTableBounds(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	for range draws {
		steps := make([]time.Duration, rng.IntN(5))
		for i := range steps {
			steps[i] = randDuration(rng)
		}
		tb := Table{Steps: steps}
		n := randAttempt(rng)
		if len(steps) == 0 {
			withinBounds(t, tb, n, 0, 0)
			continue
		}
		step := float64(steps[min(max(n, 0), len(steps)-1)])
		withinBounds(t, tb, n, toDuration(step*0.5), toDuration(step*1.5))
	}
}
