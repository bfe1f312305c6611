package policy

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// retryWith returns a config whose one retry rule has the given fields
// after maxAttempts and before retryableStatusCodes.
func retryWith(fields string) string {
	return `{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3, ` + fields +
		`, "retryableStatusCodes": [503]}}]}`
}

func TestParseBackoffForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		backoff string
		want    Backoff
	}{
		{"exponential", `{"exponential": {"initial": "0.1s", "max": "2s", "multiplier": 2, "jitter": 0.2}}`,
			Exponential{Initial: 100 * ms, Max: 2 * s, Multiplier: 2, Jitter: 0.2}},
		{"exponential without jitter", `{"exponential": {"initial": "1s", "max": "1m", "multiplier": 1.5, "jitter": 0}}`,
			Exponential{Initial: s, Max: time.Minute, Multiplier: 1.5}},
		{"exponential without cap", `{"exponential": {"initial": "1s", "max": "0s", "multiplier": 2, "jitter": 1}}`,
			Exponential{Initial: s, Multiplier: 2, Jitter: 1}},
		{"fullJitter", `{"fullJitter": {"initial": "250ms", "max": "10s", "multiplier": 3}}`,
			FullJitter{Initial: 250 * ms, Max: 10 * s, Multiplier: 3}},
		{"googleApi", `{"googleApi": {}}`, GoogleAPI{}},
		{"googleApi with max", `{"googleApi": {"max": "64s"}}`, GoogleAPI{Max: 64 * s}},
		{"googleApi max null", `{"googleApi": {"max": null}}`, GoogleAPI{}},
		{"table", `{"table": {"steps": ["1s", "2s", "5s"]}}`, Table{Steps: []time.Duration{s, 2 * s, 5 * s}}},
		{"table with an immediate step", `{"table": {"steps": ["0s", "0.5s"]}}`, Table{Steps: []time.Duration{0, 500 * ms}}},
		{"other forms null", `{"exponential": null, "googleApi": {}, "table": null}`, GoogleAPI{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig([]byte(retryWith(`"backoff": ` + tt.backoff)))
			require.NoError(t, err, "got %v, want nil", err)
			r := c.Rules[0].Retry
			assert.Equal(t, tt.want, r.Backoff, "got %#v, want %#v", r.Backoff, tt.want)
			assert.Equal(t, tt.want, r.Schedule(), "Schedule: got %#v, want %#v", r.Schedule(), tt.want)
			numeric := []any{r.InitialBackoff, r.MaxBackoff, r.BackoffMultiplier, r.Jitter}
			assert.Equal(t, []any{time.Duration(0), time.Duration(0), 0.0, 0.0}, numeric,
				"got numeric fields %v, want all zero", numeric)
		})
	}
}

func TestParseBackoffRejects(t *testing.T) {
	t.Parallel()
	const p = "methodConfig[0].retryPolicy"
	const b = p + ".backoff"
	tests := []struct {
		name   string
		fields string
		field  string
		value  string
	}{
		{"backoff as array", `"backoff": []`, b, "[]"},
		{"backoff as string", `"backoff": "googleApi"`, b, `"googleApi"`},
		{"no form", `"backoff": {}`, b, "{}"},
		{"only a null form", `"backoff": {"table": null}`, b, `{"table":null}`},
		{"two forms", `"backoff": {"googleApi": {}, "table": {"steps": ["1s"]}}`, b, `{"googleApi":{},"table":{"steps":["1s"]}}`},
		{"unknown form", `"backoff": {"linear": {}}`, b + ".linear", "{}"},
		{"form in other case", `"backoff": {"googleAPI": {}}`, b + ".googleAPI", "{}"},
		{"repeated form", `"backoff": {"googleApi": {}, "googleApi": {}}`, b + ".googleApi", "{}"},
		{"form as array", `"backoff": {"table": ["1s"]}`, b + ".table", `["1s"]`},
		{"with initialBackoff", `"initialBackoff": "1s", "backoff": {"googleApi": {}}`, b, ""},
		{"with jitter 0", `"backoff": {"googleApi": {}}, "jitter": 0`, b, ""},
		{"with multiplier", `"backoffMultiplier": 2, "backoff": {"googleApi": {}}`, b, ""},
		// exponential and fullJitter.
		{"exponential unknown key", `"backoff": {"exponential": {"base": "1s"}}`, b + ".exponential.base", `"1s"`},
		{"exponential without initial", `"backoff": {"exponential": {"max": "1s", "multiplier": 2, "jitter": 0}}`,
			b + ".exponential.initial", ""},
		{"exponential without max", `"backoff": {"exponential": {"initial": "1s", "multiplier": 2, "jitter": 0}}`,
			b + ".exponential.max", ""},
		{"exponential without multiplier", `"backoff": {"exponential": {"initial": "1s", "max": "1s", "jitter": 0}}`,
			b + ".exponential.multiplier", ""},
		{"exponential without jitter", `"backoff": {"exponential": {"initial": "1s", "max": "1s", "multiplier": 2}}`,
			b + ".exponential.jitter", ""},
		{"exponential initial garbage", `"backoff": {"exponential": {"initial": "soon", "max": "1s", "multiplier": 2, "jitter": 0}}`,
			b + ".exponential.initial", `"soon"`},
		{"exponential max as number", `"backoff": {"exponential": {"initial": "1s", "max": 2, "multiplier": 2, "jitter": 0}}`,
			b + ".exponential.max", "2"},
		{"exponential initial 0", `"backoff": {"exponential": {"initial": "0s", "max": "1s", "multiplier": 2, "jitter": 0}}`,
			b + ".exponential.initial", `"0s"`},
		{"exponential max below initial", `"backoff": {"exponential": {"initial": "2s", "max": "1s", "multiplier": 2, "jitter": 0}}`,
			b + ".exponential.max", `"1s"`},
		{"exponential multiplier below 1", `"backoff": {"exponential": {"initial": "1s", "max": "1s", "multiplier": 0.5, "jitter": 0}}`,
			b + ".exponential.multiplier", "0.5"},
		{"exponential jitter above 1", `"backoff": {"exponential": {"initial": "1s", "max": "1s", "multiplier": 1, "jitter": 1.5}}`,
			b + ".exponential.jitter", "1.5"},
		{"fullJitter has no jitter", `"backoff": {"fullJitter": {"initial": "1s", "max": "1s", "multiplier": 1, "jitter": 0}}`,
			b + ".fullJitter.jitter", "0"},
		{"fullJitter without max", `"backoff": {"fullJitter": {"initial": "1s", "multiplier": 1}}`,
			b + ".fullJitter.max", ""},
		{"fullJitter initial negative", `"backoff": {"fullJitter": {"initial": "-1s", "max": "1s", "multiplier": 1}}`,
			b + ".fullJitter.initial", `"-1s"`},
		{"fullJitter multiplier as string", `"backoff": {"fullJitter": {"initial": "1s", "max": "1s", "multiplier": "2"}}`,
			b + ".fullJitter.multiplier", `"2"`},
		// googleApi.
		{"googleApi unknown key", `"backoff": {"googleApi": {"base": "1s"}}`, b + ".googleApi.base", `"1s"`},
		{"googleApi max negative", `"backoff": {"googleApi": {"max": "-32s"}}`, b + ".googleApi.max", `"-32s"`},
		{"googleApi max as number", `"backoff": {"googleApi": {"max": 32}}`, b + ".googleApi.max", "32"},
		// table.
		{"table garbage step", `"backoff": {"table": {"steps": ["1s", "soon", "5s"]}}`, b + ".table.steps[1]", `"soon"`},
		{"table step as number", `"backoff": {"table": {"steps": ["1s", 2]}}`, b + ".table.steps[1]", "2"},
		{"table step null", `"backoff": {"table": {"steps": ["1s", "2s", null]}}`, b + ".table.steps[2]", "null"},
		{"table step as object", `"backoff": {"table": {"steps": [{"d": "1s"}]}}`, b + ".table.steps[0]", `{"d":"1s"}`},
		{"table negative step", `"backoff": {"table": {"steps": ["-1s"]}}`, b + ".table.steps[0]", `"-1s"`},
		{"table steps as string", `"backoff": {"table": {"steps": "1s"}}`, b + ".table.steps", `"1s"`},
		{"table without steps", `"backoff": {"table": {}}`, b + ".table.steps", ""},
		{"table with no steps", `"backoff": {"table": {"steps": []}}`, b + ".table.steps", ""},
		{"table of 101 steps", `"backoff": {"table": {"steps": [` + strings.Repeat(`"1s", `, 100) + `"1s"]}}`,
			b + ".table.steps", "101 steps"},
		{"table unknown key", `"backoff": {"table": {"steps": ["1s"], "jitter": 0}}`, b + ".table.jitter", "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig([]byte(retryWith(tt.fields)))
			assert.Nil(t, c, "got %+v, want nil", c)
			requireFieldError(t, err, tt.field, tt.value)
		})
	}
}

func TestParseBackoffMessages(t *testing.T) {
	t.Parallel()
	const p = "policy: methodConfig[0].retryPolicy.backoff"
	tests := []struct {
		fields string
		want   string
	}{
		{`"initialBackoff": "1s", "maxBackoff": "2s", "backoff": {"googleApi": {}}, "jitter": null`,
			p + ": replaces initialBackoff, maxBackoff, backoffMultiplier and jitter; leave out initialBackoff, maxBackoff"},
		{`"backoff": {"googleApi": {}, "table": {"steps": ["1s"]}}`,
			p + `: {"googleApi":{},"table":{"steps":["1s"]}}: must have exactly one of exponential, fullJitter, googleApi and table, not googleApi and table`},
		{`"backoff": {}`,
			p + ": {}: must have exactly one of exponential, fullJitter, googleApi and table, not none"},
		{`"backoff": {"exponential": {"initial": "1s", "max": "1s", "multiplier": 2}}`,
			p + ".exponential.jitter: must be given (0 for none, 0.2 as gRPC uses)"},
		{`"backoff": {"table": {"steps": ["1s", "2s", "5"]}}`,
			p + `.table.steps[2]: "5": must be a duration such as "0.1s" or "250ms"`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig([]byte(retryWith(tt.fields)))
			require.Error(t, err, "got nil, want %q", tt.want)
			assert.Equal(t, tt.want, err.Error(), "got %q, want %q", err, tt.want)
		})
	}
}

// coreReporting is Google's Core Reporting API schedule as one rule:
// waits of 2^n s plus up to 1000 ms for n = 0..4, then stop.
const coreReporting = `{"methodConfig": [{
  "name": [{"host": "www.googleapis.com", "path": "/analytics/v3/"}],
  "retryPolicy": {"maxAttempts": 6, "backoff": {"googleApi": {}}, "retryableStatusCodes": [500, 503]}
}]}`

func TestParseConfigCoreReporting(t *testing.T) {
	t.Parallel()
	c, err := ParseConfig([]byte(coreReporting))
	require.NoError(t, err, "got %v, want nil", err)
	r := c.Rules[0].Retry
	require.Equal(t, 6, r.MaxAttempts, "got maxAttempts %d, want 6", r.MaxAttempts)
	require.Equal(t, GoogleAPI{}, r.Backoff, "got %#v, want GoogleAPI{}", r.Backoff)
	b := r.Schedule()
	// Six attempts leave five retries, n = 0..4.
	for n := range r.MaxAttempts - 1 {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			t.Parallel()
			lo := time.Duration(1<<n) * time.Second
			hi := lo + time.Second
			mid := lo + 500*time.Millisecond
			var below, above bool
			for range 2000 {
				got := b.Duration(n)
				require.GreaterOrEqual(t, got, lo, "got %v, want at least %v", got, lo)
				require.LessOrEqual(t, got, hi, "got %v, want at most %v", got, hi)
				below = below || got < mid
				above = above || got > mid
			}
			// Waits on both sides of the middle: a random part, so that a
			// fleet of clients does not retry in lockstep.
			assert.True(t, below && above, "got waits only on one side of %v, want both", mid)
		})
	}
}

// A list far past its bound is refused for its count before its entries
// are read one by one, each with a decoder of its own: 100,000 delay
// headers cost 351 MB to read only to be refused, 100,000 steps 76 MB.
// What is left is the reading of the objects around the list, in
// proportion to the input.
func TestLongListsAreCountedFirst(t *testing.T) {
	const n = 100_000
	for _, tc := range []struct {
		name, config, want string
		most               int // bytes allocated per byte of input
	}{
		{"table steps", retryWith(`"backoff": {"table": {"steps": [` + strings.Repeat(`"1s", `, n-1) + `"1s"]}}`),
			"100000 steps: must list at most 100 steps", 100},
		{"delay headers", `{"serverDelayHeaders": [` + strings.Repeat(`{"name": "A", "format": "seconds"}, `, n-1) +
			`{"name": "A", "format": "seconds"}]}`, "100000 headers: must list at most 16 headers", 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ParseConfig([]byte(tc.config))
			runtime.ReadMemStats(&after)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			allocated := after.TotalAlloc - before.TotalAlloc
			assert.Less(t, allocated, uint64(tc.most*len(tc.config)), "got %d MB allocated for %d KB of input",
				allocated>>20, len(tc.config)>>10)
		})
	}
}
