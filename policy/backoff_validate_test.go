package policy

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// backoffFunc is a caller's own Backoff of a kind whose nil value would
// panic when called.
type backoffFunc func(n int) time.Duration

func (f backoffFunc) Duration(n int) time.Duration { return f(n) }

// withBackoff returns validConfig with its retry rule's waits given by b
// and its numeric backoff fields cleared.
func withBackoff(b Backoff) *Config {
	c := validConfig()
	r := c.Rules[0].Retry
	r.Backoff = b
	r.InitialBackoff, r.MaxBackoff, r.BackoffMultiplier, r.Jitter = 0, 0, 0, 0
	return c
}

func TestValidateBackoffAccepts(t *testing.T) {
	t.Parallel()
	exp := Exponential{Initial: time.Second, Max: time.Minute, Multiplier: 2, Jitter: 0.2}
	tests := []struct {
		name string
		b    Backoff
	}{
		{"Exponential", exp},
		{"Exponential pointer", &exp},
		{"Exponential without jitter", Exponential{Initial: time.Second, Max: time.Minute, Multiplier: 2}},
		{"Exponential jitter 1", Exponential{Initial: time.Second, Multiplier: 1, Jitter: 1}},
		{"Exponential without cap", Exponential{Initial: time.Second, Multiplier: 2}},
		{"Exponential max equal to initial", Exponential{Initial: time.Second, Max: time.Second, Multiplier: 1}},
		{"ConnectionBackoff", ConnectionBackoff()},
		{"FullJitter", FullJitter{Initial: time.Second, Max: time.Minute, Multiplier: 2}},
		{"FullJitter pointer", &FullJitter{Initial: time.Nanosecond, Multiplier: 1}},
		{"GoogleAPI", GoogleAPI{}},
		{"GoogleAPI pointer", &GoogleAPI{Max: time.Minute}},
		{"Table", Table{Steps: []time.Duration{0, time.Second, 5 * time.Second}}},
		{"Table pointer", &Table{Steps: []time.Duration{time.Second}}},
		{"Table of 100 steps", Table{Steps: make([]time.Duration, 100)}},
		{"caller's own", constant(time.Second)},
		{"caller's own, negative waits", constant(-time.Second)},
		{"caller's own func", backoffFunc(func(int) time.Duration { return 0 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := withBackoff(tt.b).Validate()
			assert.NoError(t, err, "got %v, want nil", err)
		})
	}
}

func TestValidateBackoffRejects(t *testing.T) {
	t.Parallel()
	const p = "Rules[0].Retry.Backoff"
	nan := math.NaN()
	tests := []struct {
		name  string
		b     Backoff
		field string
		value string
	}{
		{"nil Exponential pointer", (*Exponential)(nil), p, "(*policy.Exponential)(nil)"},
		{"nil Table pointer", (*Table)(nil), p, "(*policy.Table)(nil)"},
		{"nil func", backoffFunc(nil), p, "(policy.backoffFunc)(nil)"},
		{"Exponential initial 0", Exponential{Max: time.Second, Multiplier: 2}, p + ".(policy.Exponential).Initial", "0s"},
		{"Exponential initial negative", Exponential{Initial: -time.Second, Multiplier: 2}, p + ".(policy.Exponential).Initial", "-1s"},
		{"Exponential max below initial", Exponential{Initial: time.Second, Max: time.Millisecond, Multiplier: 2},
			p + ".(policy.Exponential).Max", "1ms"},
		{"Exponential max negative", Exponential{Initial: time.Second, Max: -time.Second, Multiplier: 2},
			p + ".(policy.Exponential).Max", "-1s"},
		{"Exponential multiplier 0", Exponential{Initial: time.Second}, p + ".(policy.Exponential).Multiplier", "0"},
		{"Exponential multiplier below 1", Exponential{Initial: time.Second, Multiplier: 0.9}, p + ".(policy.Exponential).Multiplier", "0.9"},
		{"Exponential multiplier NaN", Exponential{Initial: time.Second, Multiplier: nan}, p + ".(policy.Exponential).Multiplier", "NaN"},
		{"Exponential multiplier +Inf", Exponential{Initial: time.Second, Multiplier: math.Inf(1)},
			p + ".(policy.Exponential).Multiplier", "+Inf"},
		{"Exponential jitter negative", Exponential{Initial: time.Second, Multiplier: 1, Jitter: -0.1},
			p + ".(policy.Exponential).Jitter", "-0.1"},
		{"Exponential jitter above 1", Exponential{Initial: time.Second, Multiplier: 1, Jitter: 1.5},
			p + ".(policy.Exponential).Jitter", "1.5"},
		{"Exponential jitter NaN", Exponential{Initial: time.Second, Multiplier: 1, Jitter: nan},
			p + ".(policy.Exponential).Jitter", "NaN"},
		{"Exponential pointer checked", &Exponential{Initial: time.Second}, p + ".(*policy.Exponential).Multiplier", "0"},
		{"FullJitter initial 0", FullJitter{Multiplier: 2}, p + ".(policy.FullJitter).Initial", "0s"},
		{"FullJitter max below initial", FullJitter{Initial: time.Minute, Max: time.Second, Multiplier: 2},
			p + ".(policy.FullJitter).Max", "1s"},
		{"FullJitter multiplier NaN", FullJitter{Initial: time.Second, Multiplier: nan}, p + ".(policy.FullJitter).Multiplier", "NaN"},
		{"FullJitter pointer checked", &FullJitter{Multiplier: 2}, p + ".(*policy.FullJitter).Initial", "0s"},
		{"GoogleAPI max negative", GoogleAPI{Max: -time.Second}, p + ".(policy.GoogleAPI).Max", "-1s"},
		{"GoogleAPI pointer checked", &GoogleAPI{Max: -1}, p + ".(*policy.GoogleAPI).Max", "-1ns"},
		{"Table empty", Table{}, p + ".(policy.Table).Steps", ""},
		{"Table of 101 steps", Table{Steps: make([]time.Duration, 101)}, p + ".(policy.Table).Steps", "101 steps"},
		{"Table negative step", Table{Steps: []time.Duration{time.Second, -time.Second}}, p + ".(policy.Table).Steps[1]", "-1s"},
		{"Table pointer checked", &Table{}, p + ".(*policy.Table).Steps", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := withBackoff(tt.b).Validate()
			requireFieldError(t, err, tt.field, tt.value)
		})
	}
}

func TestValidateBackoffWithNumericFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(r *Retry)
		want   string
	}{
		{"initialBackoff", func(r *Retry) { r.InitialBackoff = time.Second }, "leave out InitialBackoff"},
		{"maxBackoff", func(r *Retry) { r.MaxBackoff = time.Second }, "leave out MaxBackoff"},
		{"backoffMultiplier", func(r *Retry) { r.BackoffMultiplier = 2 }, "leave out BackoffMultiplier"},
		{"jitter", func(r *Retry) { r.Jitter = DefaultJitter }, "leave out Jitter"},
		{"negative jitter", func(r *Retry) { r.Jitter = -1 }, "leave out Jitter"},
		{"NaN multiplier", func(r *Retry) { r.BackoffMultiplier = math.NaN() }, "leave out BackoffMultiplier"},
		{"all four", func(r *Retry) {
			r.InitialBackoff, r.MaxBackoff, r.BackoffMultiplier, r.Jitter = 1, 2, 3, 0.5
		}, "leave out InitialBackoff, MaxBackoff, BackoffMultiplier, Jitter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := withBackoff(GoogleAPI{})
			tt.mutate(c.Rules[0].Retry)
			err := c.Validate()
			requireFieldError(t, err, "Rules[0].Retry.Backoff", "")
			assert.ErrorContains(t, err, tt.want, "got %v, want it to say %q", err, tt.want)
		})
	}
}

// TestGrowthMessages pins the whole message of each limit that a Retry's
// numeric fields, an Exponential and a FullJitter share: one check serves
// all three, each under its own field names, and only the package's
// backoffs may have a max of 0 for no cap.
func TestGrowthMessages(t *testing.T) {
	t.Parallel()
	const p = "policy: Rules[0].Retry."
	retry := func(initial, max time.Duration, mult, jitter float64) *Config {
		c := validConfig()
		r := c.Rules[0].Retry
		r.InitialBackoff, r.MaxBackoff, r.BackoffMultiplier, r.Jitter = initial, max, mult, jitter
		return c
	}
	s := time.Second
	tests := []struct {
		name string
		c    *Config
		want string
	}{
		{"retry initial", retry(0, s, 2, 0.2), p + "InitialBackoff: 0s: must be greater than 0, or set Backoff"},
		{"retry max below initial", retry(s, s/2, 2, 0.2), p + "MaxBackoff: 500ms: must be at least InitialBackoff (1s)"},
		{"retry max 0 is no cap only for backoffs", retry(s, 0, 2, 0.2), p + "MaxBackoff: 0s: must be at least InitialBackoff (1s)"},
		{"retry multiplier", retry(s, s, 0.5, 0.2), p + "BackoffMultiplier: 0.5: must be at least 1 and finite"},
		{"retry multiplier infinite", retry(s, s, math.Inf(1), 0.2), p + "BackoffMultiplier: +Inf: must be at least 1 and finite"},
		{"retry jitter", retry(s, s, 1, 1.5), p + "Jitter: 1.5: must be in [0, 1]"},
		{"exponential initial", withBackoff(Exponential{Initial: -s, Multiplier: 2}),
			p + "Backoff.(policy.Exponential).Initial: -1s: must be greater than 0"},
		{"exponential max", withBackoff(Exponential{Initial: s, Max: s / 2, Multiplier: 2}),
			p + "Backoff.(policy.Exponential).Max: 500ms: must be 0 (no cap) or at least Initial (1s)"},
		{"exponential multiplier", withBackoff(&Exponential{Initial: s, Multiplier: math.NaN()}),
			p + "Backoff.(*policy.Exponential).Multiplier: NaN: must be at least 1 and finite"},
		{"exponential jitter", withBackoff(Exponential{Initial: s, Multiplier: 1, Jitter: -0.1}),
			p + "Backoff.(policy.Exponential).Jitter: -0.1: must be in [0, 1]"},
		{"fullJitter initial", withBackoff(FullJitter{Multiplier: 2}),
			p + "Backoff.(policy.FullJitter).Initial: 0s: must be greater than 0"},
		{"fullJitter max", withBackoff(&FullJitter{Initial: s, Max: s / 2, Multiplier: 2}),
			p + "Backoff.(*policy.FullJitter).Max: 500ms: must be 0 (no cap) or at least Initial (1s)"},
		{"fullJitter multiplier", withBackoff(FullJitter{Initial: s, Multiplier: 0.5}),
			p + "Backoff.(policy.FullJitter).Multiplier: 0.5: must be at least 1 and finite"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.c.Validate()
			require.Error(t, err, "got nil, want %q", tt.want)
			assert.Equal(t, tt.want, err.Error(), "got %q, want %q", err, tt.want)
		})
	}
}
