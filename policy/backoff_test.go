package policy

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

var (
	_ Backoff = Exponential{}
	_ Backoff = FullJitter{}
	_ Backoff = GoogleAPI{}
	_ Backoff = Table{}
)

// rMax is the largest random value rand.Float64 can return.
var rMax = math.Nextafter(1, 0)

const (
	ms = time.Millisecond
	s  = time.Second
)

func TestExponentialFormula(t *testing.T) {
	t.Parallel()
	type args struct {
		initial, max time.Duration
		mult, jitter float64
		n            int
		r            float64
	}
	// The retry policy of DESIGN.md: 100ms doubling up to 2s, ±20%.
	design := func(n int, r float64) args { return args{100 * ms, 2 * s, 2, 0.2, n, r} }
	tests := []struct {
		name string
		args args
		want time.Duration
	}{
		{"n=0 middle", design(0, 0.5), 100 * ms},
		{"n=0 lowest", design(0, 0), 80 * ms},
		{"n=0 highest", design(0, rMax), 120 * ms},
		{"n=0 quarter", design(0, 0.25), 90 * ms},
		{"n=1", design(1, 0.5), 200 * ms},
		{"n=3", design(3, 0.5), 800 * ms},
		{"n=4", design(4, 0.5), 1600 * ms},
		{"n=4 lowest", design(4, 0), 1280 * ms},
		{"n=4 highest", design(4, rMax), 1920 * ms},
		{"n=5 capped", design(5, 0.5), 2 * s},
		{"capped lowest", design(5, 0), 1600 * ms},
		{"capped highest jitters past the cap", design(5, rMax), 2400 * ms},
		{"n negative is 0", design(-7, 0.5), 100 * ms},
		{"n=10_000", design(10_000, 0.5), 2 * s},
		{"n=MaxInt32", design(math.MaxInt32, 0.5), 2 * s},
		{"n=MaxInt", design(math.MaxInt, 0.5), 2 * s},
		{"multiplier below 1 is 1", args{100 * ms, 2 * s, 0.5, 0, 5, 0.5}, 100 * ms},
		{"multiplier 0 is 1", args{100 * ms, 2 * s, 0, 0, 5, 0.5}, 100 * ms},
		{"multiplier NaN is 1", args{100 * ms, 2 * s, math.NaN(), 0, 5, 0.5}, 100 * ms},
		{"multiplier +Inf, n=0", args{100 * ms, 2 * s, math.Inf(1), 0, 0, 0.5}, 100 * ms},
		{"multiplier +Inf, n=1", args{100 * ms, 2 * s, math.Inf(1), 0, 1, 0.5}, 2 * s},
		{"multiplier 1.5", args{s, time.Hour, 1.5, 0, 2, 0.5}, 2250 * ms},
		{"jitter 0", args{s, time.Hour, 2, 0, 1, 0}, 2 * s},
		{"jitter 1 lowest", args{s, time.Hour, 2, 1, 1, 0}, 0},
		{"jitter 1 highest", args{s, time.Hour, 2, 1, 1, 0.75}, 3 * s},
		{"jitter above 1 is 1", args{s, time.Hour, 2, 7, 1, 0}, 0},
		{"jitter negative is 0", args{s, time.Hour, 2, -1, 1, 0}, 2 * s},
		{"jitter NaN is 0", args{s, time.Hour, 2, math.NaN(), 3, 0}, 8 * s},
		{"jitter +Inf is 1", args{s, time.Hour, 2, math.Inf(1), 1, 0.75}, 3 * s},
		{"initial 0", args{0, time.Hour, 2, 0.2, 3, 0.5}, 0},
		{"initial negative", args{-s, time.Hour, 2, 0.2, 3, 0.5}, 0},
		{"max below initial", args{s, 500 * ms, 2, 0, 0, 0.5}, 500 * ms},
		{"no cap, n=62", args{1, 0, 2, 0, 62, 0.5}, 1 << 62},
		{"no cap, overflow saturates", args{s, 0, 2, 0, 10_000, 0.5}, math.MaxInt64},
		{"no cap, overflow lowest", args{s, 0, 2, 0.2, math.MaxInt32, 0}, 7378697629483821056},
		{"no cap, jitter past the largest Duration", args{s, -1, 2, 0.2, 10_000, rMax}, math.MaxInt64},
		{"zero value", args{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := tt.args
			got := exponential(a.initial, a.max, a.mult, a.jitter, a.n, a.r)
			assert.Equal(t, tt.want, got, "got %v, want %v", got, tt.want)
		})
	}
}

func TestConnectionBackoff(t *testing.T) {
	t.Parallel()
	c := ConnectionBackoff()
	want := Exponential{Initial: s, Max: 120 * s, Multiplier: 1.6, Jitter: 0.2}
	assert.Equal(t, want, c, "got %+v, want %+v", c, want)

	tests := []struct {
		n    int
		r    float64
		want time.Duration
	}{
		{0, 0.5, s},
		{0, 0, 800 * ms},
		{0, rMax, 1200 * ms},
		{1, 0.5, 1600 * ms},
		{2, 0.5, 2560 * ms},
		{3, 0.5, 4096 * ms},
		{4, 0.5, 6553600 * time.Microsecond},
		{10, 0.5, 109951162777},
		{11, 0.5, 120 * s},
		{11, 0, 96 * s},
		{11, rMax, 144 * s},
		{math.MaxInt32, 0.5, 120 * s},
	}
	for _, tt := range tests {
		t.Run(tt.want.String(), func(t *testing.T) {
			t.Parallel()
			got := exponential(c.Initial, c.Max, c.Multiplier, c.Jitter, tt.n, tt.r)
			assert.Equal(t, tt.want, got, "n=%d r=%v: got %v, want %v", tt.n, tt.r, got, tt.want)
		})
	}
}

func TestFullJitterFormula(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		initial, max time.Duration
		mult         float64
		n            int
		r            float64
		want         time.Duration
	}{
		{"r=0 waits 0", 100 * ms, 2 * s, 2, 3, 0, 0},
		{"n=0 middle", 100 * ms, 2 * s, 2, 0, 0.5, 50 * ms},
		{"n=2 middle", 100 * ms, 2 * s, 2, 2, 0.5, 200 * ms},
		{"n=2 quarter", 100 * ms, 2 * s, 2, 2, 0.25, 100 * ms},
		{"capped middle", 100 * ms, 2 * s, 2, 10, 0.5, s},
		{"capped highest stays below the cap", 100 * ms, 2 * s, 2, 10, rMax, 2*s - 1},
		{"n negative is 0", 100 * ms, 2 * s, 2, -1, 0.5, 50 * ms},
		{"n=MaxInt32", 100 * ms, 2 * s, 2, math.MaxInt32, 0.5, s},
		{"multiplier below 1 is 1", 100 * ms, 2 * s, 0.1, 4, 0.5, 50 * ms},
		{"no cap, overflow", s, 0, 2, 10_000, 0.5, 1 << 62},
		{"initial 0", 0, 2 * s, 2, 1, 0.5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := fullJitter(tt.initial, tt.max, tt.mult, tt.n, tt.r)
			assert.Equal(t, tt.want, got, "got %v, want %v", got, tt.want)
		})
	}
}

func TestGoogleAPIFormula(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		max  time.Duration
		n    int
		r    float64
		want time.Duration
	}{
		{"n=0 no extra", 0, 0, 0, 1 * s},
		{"n=1 no extra", 0, 1, 0, 2 * s},
		{"n=2 no extra", 0, 2, 0, 4 * s},
		{"n=3 no extra", 0, 3, 0, 8 * s},
		{"n=4 no extra", 0, 4, 0, 16 * s},
		{"n=0 full extra", 0, 0, rMax, 2 * s},
		{"n=4 full extra", 0, 4, rMax, 17 * s},
		{"n=2 half extra", 0, 2, 0.5, 4500 * ms},
		{"extra is whole ms", 0, 1, 0.999, 2999 * ms},
		{"extra 0 just below 1/1001", 0, 1, math.Nextafter(1.0/1001, 0), 2 * s},
		{"extra 1ms at 1/1001", 0, 1, 1.0 / 1001, 2001 * ms},
		{"n=5 reaches the default cap", 0, 5, 0, DefaultGoogleAPIMax},
		{"n=5 extra cut by the cap", 0, 5, rMax, DefaultGoogleAPIMax},
		{"n negative is 0", 0, -3, 0, 1 * s},
		{"n=10_000", 0, 10_000, 0.5, DefaultGoogleAPIMax},
		{"n=MaxInt32", 0, math.MaxInt32, 0.5, DefaultGoogleAPIMax},
		{"custom cap below", 10 * s, 3, 0.5, 8500 * ms},
		{"custom cap reached", 10 * s, 4, 0, 10 * s},
		{"custom cap cuts the extra", 8200 * ms, 3, rMax, 8200 * ms},
		{"negative cap is the default", -s, 6, 0, DefaultGoogleAPIMax},
		{"large cap", time.Hour, 10, 0, 1024 * s},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := googleAPI(tt.max, tt.n, tt.r)
			assert.Equal(t, tt.want, got, "got %v, want %v", got, tt.want)
		})
	}
}

func TestTableFormula(t *testing.T) {
	t.Parallel()
	steps := []time.Duration{0, s, 4 * s}
	tests := []struct {
		name  string
		steps []time.Duration
		n     int
		r     float64
		want  time.Duration
	}{
		{"zero step stays zero", steps, 0, rMax, 0},
		{"lowest", steps, 1, 0, 500 * ms},
		{"middle", steps, 1, 0.5, s},
		{"highest", steps, 1, rMax, 1500 * ms},
		{"last step", steps, 2, 0.5, 4 * s},
		{"saturates past the end", steps, 3, 0.5, 4 * s},
		{"saturates at MaxInt", steps, math.MaxInt, 0.25, 3 * s},
		{"n negative is 0", steps, -1, 0.5, 0},
		{"empty table", []time.Duration{}, 2, 0.5, 0},
		{"nil table", nil, 0, 0.5, 0},
		{"negative step waits 0", []time.Duration{-s}, 0, 0.5, 0},
		{"largest step saturates", []time.Duration{math.MaxInt64}, 0, rMax, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := table(tt.steps, tt.n, tt.r)
			assert.Equal(t, tt.want, got, "got %v, want %v", got, tt.want)
		})
	}
}

func TestToDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ns   float64
		want time.Duration
	}{
		{"zero", 0, 0},
		{"fraction truncates", 1.9, 1},
		{"negative", -5, 0},
		{"NaN", math.NaN(), 0},
		{"-Inf", math.Inf(-1), 0},
		{"+Inf", math.Inf(1), math.MaxInt64},
		{"2^63", math.Exp2(63), math.MaxInt64},
		{"just below 2^63", math.Nextafter(math.Exp2(63), 0), math.MaxInt64 - 1023},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := toDuration(tt.ns)
			assert.Equal(t, tt.want, got, "got %d, want %d", got, tt.want)
		})
	}
}
