package policy_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/policy"
)

// spreadDraws is the number of waits drawn per case below. Each quarter of
// a uniform range then holds 5000 ± 61 (one standard deviation) of them,
// so the bounds checked (16% to 34%) are more than 25 deviations away:
// these checks do not flake, and a wait that is not drawn uniformly over
// its documented range fails them.
const spreadDraws = 20_000

// TestBackoffDrawsFillTheirRange checks, through Duration alone, that each
// backoff's random part covers its documented range uniformly: every draw
// within [lo, hi], each quarter of the range holding about a quarter of
// the draws, and both ends reached. A wait fixed at the middle of the
// range, or drawn from a part of it, fails. The attempt numbers include
// ones far past the cap, and negative ones, read as 0.
func TestBackoffDrawsFillTheirRange(t *testing.T) {
	t.Parallel()
	const s, ms = time.Second, time.Millisecond
	design := policy.Exponential{Initial: 100 * ms, Max: 2 * s, Multiplier: 2, Jitter: 0.2}
	tests := []struct {
		name   string
		b      policy.Backoff
		n      int
		lo, hi time.Duration
	}{
		{"Exponential n=0", design, 0, 80 * ms, 120 * ms},
		{"Exponential n negative", design, -5, 80 * ms, 120 * ms},
		{"Exponential n=3", design, 3, 640 * ms, 960 * ms},
		{"Exponential capped", design, 10, 1600 * ms, 2400 * ms},
		{"Exponential n=MaxInt saturates at Max", design, math.MaxInt, 1600 * ms, 2400 * ms},
		{"Exponential n=MinInt", design, math.MinInt, 80 * ms, 120 * ms},
		{"Exponential multiplier 1, jitter 1", policy.Exponential{Initial: s, Multiplier: 1, Jitter: 1}, 1 << 40, 0, 2 * s},
		{"ConnectionBackoff n=0", policy.ConnectionBackoff(), 0, 800 * ms, 1200 * ms},
		{"ConnectionBackoff n=1", policy.ConnectionBackoff(), 1, 1280 * ms, 1920 * ms},
		{"ConnectionBackoff at its 120 s cap", policy.ConnectionBackoff(), 1000, 96 * s, 144 * s},
		{"FullJitter n=0", policy.FullJitter{Initial: 100 * ms, Max: s, Multiplier: 2}, 0, 0, 100 * ms},
		{"FullJitter n=2", policy.FullJitter{Initial: 100 * ms, Max: s, Multiplier: 2}, 2, 0, 400 * ms},
		{"FullJitter capped", policy.FullJitter{Initial: 100 * ms, Max: s, Multiplier: 2}, math.MaxInt, 0, s},
		{"GoogleAPI n=0", policy.GoogleAPI{}, 0, s, 2 * s},
		{"GoogleAPI n=4", policy.GoogleAPI{}, 4, 16 * s, 17 * s},
		{"GoogleAPI n negative", policy.GoogleAPI{}, -1, s, 2 * s},
		{"Table first step", policy.Table{Steps: []time.Duration{s, 2 * s, 5 * s}}, 0, 500 * ms, 1500 * ms},
		{"Table past its end repeats the last step", policy.Table{Steps: []time.Duration{s, 2 * s, 5 * s}}, math.MaxInt, 2500 * ms, 7500 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var quarters [4]int
			lo, hi := time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
			width := tt.hi - tt.lo
			for range spreadDraws {
				d := tt.b.Duration(tt.n)
				require.GreaterOrEqual(t, d, tt.lo, "Duration(%d): got %v, want at least %v", tt.n, d, tt.lo)
				require.LessOrEqual(t, d, tt.hi, "Duration(%d): got %v, want at most %v", tt.n, d, tt.hi)
				quarters[min(int(4*float64(d-tt.lo)/float64(width)), 3)]++
				lo, hi = min(lo, d), max(hi, d)
			}
			for q, got := range quarters {
				share := float64(got) / spreadDraws
				assert.True(t, share > 0.16 && share < 0.34, "quarter %d of [%v, %v]: got %.1f%% of the draws, want about 25%%",
					q, tt.lo, tt.hi, 100*share)
			}
			// Both ends are reached to within a hundredth of the range.
			assert.Less(t, lo-tt.lo, width/100, "got the least draw %v, want one near %v", lo, tt.lo)
			assert.Less(t, tt.hi-hi, width/100, "got the largest draw %v, want one near %v", hi, tt.hi)
		})
	}
}

// TestBackoffDurationNeverFails calls Duration with hostile attempt numbers
// on backoffs at the edges of what they accept: the wait is never
// negative, never above the cap the type documents, and the same bounds
// hold for every n past the point where the cap is reached.
func TestBackoffDurationNeverFails(t *testing.T) {
	t.Parallel()
	const s, ms = time.Second, time.Millisecond
	largest := time.Duration(math.MaxInt64)
	tests := []struct {
		name   string
		b      policy.Backoff
		lo, hi time.Duration // for every n at or past 64
		most   time.Duration // for every n; hi when zero
	}{
		{"GoogleAPI max below a second", policy.GoogleAPI{Max: 500 * ms}, 500 * ms, 500 * ms, 0},
		{"GoogleAPI max 1ns", policy.GoogleAPI{Max: 1}, 1, 1, 0},
		{"GoogleAPI max exactly a second", policy.GoogleAPI{Max: s}, s, s, 0},
		{"GoogleAPI default max", policy.GoogleAPI{}, policy.DefaultGoogleAPIMax, policy.DefaultGoogleAPIMax, 0},
		{"GoogleAPI largest max", policy.GoogleAPI{Max: largest}, largest, largest, 0},
		{"Exponential without a cap", policy.Exponential{Initial: s, Multiplier: 2, Jitter: 0.2}, time.Duration(0.8 * float64(largest)), largest, 0},
		{"Exponential largest initial", policy.Exponential{Initial: largest, Multiplier: 1e300, Jitter: 1}, 0, largest, 0},
		{"Exponential huge multiplier", policy.Exponential{Initial: 1, Max: time.Hour, Multiplier: math.MaxFloat64}, time.Hour, time.Hour, 0},
		{"FullJitter without a cap", policy.FullJitter{Initial: s, Multiplier: 10}, 0, largest, 0},
		{"Table with one zero step", policy.Table{Steps: []time.Duration{0}}, 0, 0, 0},
		{"Table ending in a zero step", policy.Table{Steps: []time.Duration{s, 0}}, 0, 0, 1500 * ms},
		{"Table with no steps", policy.Table{}, 0, 0, 0},
		{"Table of the largest step", policy.Table{Steps: []time.Duration{largest}}, largest / 2, largest, 0},
	}
	attempts := []int{64, 65, 1023, 1024, 1 << 20, math.MaxInt32, math.MaxInt - 1, math.MaxInt}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			most := tt.most
			if most == 0 {
				most = tt.hi
			}
			for _, n := range []int{math.MinInt, -1, 0, 1, 2, 62, 63} {
				d := tt.b.Duration(n)
				assert.GreaterOrEqual(t, d, time.Duration(0), "Duration(%d): got %v", n, d)
				assert.LessOrEqual(t, d, most, "Duration(%d): got %v, want at most %v", n, d, most)
			}
			for _, n := range attempts {
				for range 100 {
					d := tt.b.Duration(n)
					require.GreaterOrEqual(t, d, tt.lo, "Duration(%d): got %v, want at least %v", n, d, tt.lo)
					require.LessOrEqual(t, d, tt.hi, "Duration(%d): got %v, want at most %v", n, d, tt.hi)
				}
			}
		})
	}
}

// retryWith is a one-rule JSON config whose retryPolicy has the given
// backoff.
func retryWith(backoff string) string {
	return `{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3, "backoff": ` + backoff +
		`, "retryableStatusCodes": [503]}}]}`
}

// TestBackoffJSONHostileValues reads backoffs whose values are at or past
// the edges of a duration and a float64: each is refused with an error
// that matches ErrInvalid and names the field, or read into a backoff
// whose waits stay in range.
func TestBackoffJSONHostileValues(t *testing.T) {
	t.Parallel()
	const p = "methodConfig[0].retryPolicy.backoff."
	exp := func(initial, max, mult, jitter string) string {
		return fmt.Sprintf(`{"exponential": {"initial": %s, "max": %s, "multiplier": %s, "jitter": %s}}`, initial, max, mult, jitter)
	}
	tests := []struct {
		name    string
		backoff string
		field   string // "" when the config is valid
	}{
		{"initial past the largest duration", exp(`"2562048h"`, `"0s"`, "2", "0"), p + "exponential.initial"},
		{"initial of 20 digits", exp(`"99999999999999999999ns"`, `"0s"`, "2", "0"), p + "exponential.initial"},
		{"initial NaN", exp(`"NaN"`, `"0s"`, "2", "0"), p + "exponential.initial"},
		{"initial Inf", exp(`"Inf"`, `"0s"`, "2", "0"), p + "exponential.initial"},
		{"initial as exponent", exp(`"1e3s"`, `"0s"`, "2", "0"), p + "exponential.initial"},
		{"initial with spaces", exp(`" 1s"`, `"0s"`, "2", "0"), p + "exponential.initial"},
		{"max negative", exp(`"1s"`, `"-1s"`, "2", "0"), p + "exponential.max"},
		{"multiplier past float64", exp(`"1s"`, `"0s"`, "1e309", "0"), p + "exponential.multiplier"},
		{"multiplier below 1", exp(`"1s"`, `"0s"`, "0.999999", "0"), p + "exponential.multiplier"},
		{"multiplier negative", exp(`"1s"`, `"0s"`, "-2", "0"), p + "exponential.multiplier"},
		{"jitter past 1", exp(`"1s"`, `"0s"`, "1", "1.0000001"), p + "exponential.jitter"},
		{"jitter negative", exp(`"1s"`, `"0s"`, "1", "-1e-300"), p + "exponential.jitter"},
		{"jitter past float64", exp(`"1s"`, `"0s"`, "1", "-1e309"), p + "exponential.jitter"},
		{"table step past the largest duration", `{"table": {"steps": ["1s", "9223372036854775808ns"]}}`, p + "table.steps[1]"},
		{"table step negative zero is zero", `{"table": {"steps": ["-0s"]}}`, ""},
		{"table of one zero step", `{"table": {"steps": ["0s"]}}`, ""},
		{"table step the largest duration", `{"table": {"steps": ["2562047h47m16.854775807s"]}}`, ""},
		{"googleApi max past the largest duration", `{"googleApi": {"max": "3000000h"}}`, p + "googleApi.max"},
		{"googleApi max below a second", `{"googleApi": {"max": "1ns"}}`, ""},
		{"exponential largest, multiplier huge, jitter 1",
			exp(`"2562047h47m16.854775807s"`, `"0s"`, "1.7976931348623157e308", "1"), ""},
		{"exponential multiplier 1, jitter 1", exp(`"1ns"`, `"1ns"`, "1", "1"), ""},
		{"exponential jitter underflows to 0", exp(`"1s"`, `"1s"`, "1", "1e-400"), ""},
		{"fullJitter multiplier past float64", `{"fullJitter": {"initial": "1s", "max": "0s", "multiplier": 1e400}}`,
			p + "fullJitter.multiplier"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := policy.ParseConfig([]byte(retryWith(tt.backoff)))
			if tt.field != "" {
				require.ErrorIs(t, err, policy.ErrInvalid, "got %v, want an error naming %s", err, tt.field)
				assert.Contains(t, err.Error(), "policy: "+tt.field+":", "got %q, want it to name %s", err, tt.field)
				assert.Nil(t, c)
				return
			}
			require.NoError(t, err)
			b := c.Rules[0].Retry.Schedule()
			for _, n := range []int{math.MinInt, -1, 0, 1, 62, 63, 64, math.MaxInt} {
				for range 50 {
					d := b.Duration(n)
					require.GreaterOrEqual(t, d, time.Duration(0), "Duration(%d): got %v", n, d)
				}
			}
		})
	}
}
