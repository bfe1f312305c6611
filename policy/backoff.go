package policy

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff computes the wait before a retry. Implementations hold no state:
// the caller owns the attempt counter, so one value can be shared by any
// number of goroutines and loops. A caller's own Backoff must be
// stateless too: [Config.Clone], and so a Transport that takes a Config,
// copies the package's backoffs but shares a caller's own.
type Backoff interface {
	// Duration returns the wait before retry n; n = 0 is the wait before
	// the first retry. A negative n is taken as 0. The result is never
	// negative and never overflows, whatever n is.
	Duration(n int) time.Duration
}

// Exponential is the backoff of gRPC's retry and connection-backoff designs:
// before retry n it waits min(Initial*Multiplier^n, Max), scaled by a factor
// drawn uniformly from [1-Jitter, 1+Jitter].
//
// A Multiplier below 1 (or NaN) is taken as 1, Max <= 0 means no cap below
// the largest [time.Duration], and Jitter is clamped to [0, 1], NaN taken
// as 0. The zero value always waits 0. Exponential is a comparable value,
// safe for concurrent use.
type Exponential struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	Jitter     float64
}

// Duration implements [Backoff].
func (e Exponential) Duration(n int) time.Duration {
	return exponential(e.Initial, e.Max, e.Multiplier, e.Jitter, n, rand.Float64())
}

// ConnectionBackoff returns gRPC's connection backoff: 1s growing by 1.6
// per failure up to 120s, each wait jittered by ±20%.
func ConnectionBackoff() Exponential {
	return Exponential{Initial: time.Second, Max: 120 * time.Second, Multiplier: 1.6, Jitter: 0.2}
}

// exponential is [Exponential.Duration] with its random value r in [0, 1)
// passed in, so that tests can check the formula exactly.
func exponential(initial, max time.Duration, mult, jitter float64, n int, r float64) time.Duration {
	base := capped(initial, max, mult, n)
	// A NaN jitter would turn every wait into 0, retrying at once in a
	// tight loop; read it as no jitter, as capped reads a NaN multiplier
	// as 1.
	if math.IsNaN(jitter) {
		jitter = 0
	}
	jitter = math.Min(math.Max(jitter, 0), 1)
	return toDuration(base * (1 + jitter*(2*r-1)))
}

// FullJitter is the "full jitter" backoff of the first gRPC retry draft:
// before retry n it waits a duration drawn uniformly from
// [0, min(Initial*Multiplier^n, Max)). It spreads a herd of clients widest,
// at the price of sometimes retrying almost at once.
//
// Multiplier and Max read as in [Exponential]. FullJitter is a comparable
// value, safe for concurrent use.
type FullJitter struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
}

// Duration implements [Backoff].
func (f FullJitter) Duration(n int) time.Duration {
	return fullJitter(f.Initial, f.Max, f.Multiplier, n, rand.Float64())
}

func fullJitter(initial, max time.Duration, mult float64, n int, r float64) time.Duration {
	return toDuration(capped(initial, max, mult, n) * r)
}

// DefaultGoogleAPIMax is the cap [GoogleAPI] uses when its Max is zero.
const DefaultGoogleAPIMax = 32 * time.Second

// GoogleAPI is the exponential backoff that Google's APIs ask their clients
// for: before retry n it waits 2^n seconds plus a random 0 to 1000 ms, capped
// at Max (zero: [DefaultGoogleAPIMax]). Google's guidance retries for
// n = 0..4 and then gives up, which is a [Retry] with MaxAttempts 6.
//
// GoogleAPI is a comparable value, safe for concurrent use.
type GoogleAPI struct {
	Max time.Duration
}

// Duration implements [Backoff].
func (g GoogleAPI) Duration(n int) time.Duration {
	return googleAPI(g.Max, n, rand.Float64())
}

func googleAPI(max time.Duration, n int, r float64) time.Duration {
	if max <= 0 {
		max = DefaultGoogleAPIMax
	}
	// r is in [0, 1); whole milliseconds 0..1000 inclusive, as the guidance
	// states it.
	extra := math.Min(math.Floor(r*1001), 1000) * float64(time.Millisecond)
	d := capped(time.Second, math.MaxInt64, 2, n) + extra
	return toDuration(math.Min(d, float64(max)))
}

// Table is a backoff read from a table: before retry n it waits Steps[n], or
// the last step once n passes the end, scaled by a factor drawn uniformly
// from [0.5, 1.5). A zero step stays zero, so a table can start with an
// immediate retry. An empty table always waits 0.
//
// Table is safe for concurrent use as long as Steps is not modified.
type Table struct {
	Steps []time.Duration
}

// Duration implements [Backoff].
func (t Table) Duration(n int) time.Duration {
	return table(t.Steps, n, rand.Float64())
}

func table(steps []time.Duration, n int, r float64) time.Duration {
	if len(steps) == 0 {
		return 0
	}
	n = min(max(n, 0), len(steps)-1)
	return toDuration(float64(steps[n]) * (0.5 + r))
}

// capped returns min(initial*mult^n, max) as a float64 number of
// nanoseconds. It never overflows: math.Pow saturates at +Inf, which the
// cap then absorbs.
func capped(initial, max time.Duration, mult float64, n int) float64 {
	if initial <= 0 {
		return 0
	}
	if max <= 0 {
		max = math.MaxInt64
	}
	n = max0(n)
	if mult < 1 || math.IsNaN(mult) {
		mult = 1
	}
	v := float64(initial) * math.Pow(mult, float64(n))
	if v > float64(max) || math.IsNaN(v) {
		return float64(max)
	}
	return v
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}

// toDuration converts nanoseconds to a Duration, clamping to
// [0, MaxInt64] so that no input can wrap around to a negative wait.
func toDuration(ns float64) time.Duration {
	switch {
	case ns <= 0 || math.IsNaN(ns):
		return 0
	case ns >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(ns)
}
