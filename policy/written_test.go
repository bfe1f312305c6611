package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An error that ParseConfig finds only once the Config is built (a
// maxBackoff under initialBackoff, a jitter past 1) still shows the value
// as the JSON wrote it, as FieldError promises: "0.05s", not Go's 50ms,
// which the author would look for in the file in vain.
func TestParseConfigShowsValuesAsWritten(t *testing.T) {
	t.Parallel()
	retry := func(fields string) string {
		return `{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2` + fields + `}}]}`
	}
	numeric := func(initial, max string) string {
		return retry(`, "initialBackoff": ` + initial + `, "maxBackoff": ` + max + `, "backoffMultiplier": 2`)
	}
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{"duration in seconds", numeric(`"0.1s"`, `"0.05s"`),
			`policy: methodConfig[0].retryPolicy.maxBackoff: "0.05s": must be at least initialBackoff (100ms)`},
		{"duration with an explicit jitter of 0", numeric(`"0.1s"`, `"0.05s"`)[:len(numeric(`"0.1s"`, `"0.05s"`))-4] + `, "jitter": 0}}]}`,
			`policy: methodConfig[0].retryPolicy.maxBackoff: "0.05s": must be at least initialBackoff (100ms)`},
		{"zero duration without a unit", numeric(`"0"`, `"1s"`),
			`policy: methodConfig[0].retryPolicy.initialBackoff: "0": must be greater than 0`},
		{"number with an exponent", `{"retryThrottling": {"maxTokens": 1e4, "tokenRatio": 0.1}}`,
			`policy: retryThrottling.maxTokens: 1e4: must be in (0, 1000]`},
		{"number with a trailing zero", numeric(`"1s"`, `"1s"`)[:len(numeric(`"1s"`, `"1s"`))-4] + `, "jitter": 1.50}}]}`,
			`policy: methodConfig[0].retryPolicy.jitter: 1.50: must be in [0, 1]`},
		{"null in a list", retry(`, "backoff": {"googleApi": {}}, "retryableStatusCodes": [503, null]`),
			`policy: methodConfig[0].retryPolicy.retryableStatusCodes[1]: null: must be in 100..599`},
		{"null maxAttempts", `{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": null}}]}`,
			`policy: methodConfig[0].hedgingPolicy.maxAttempts: null: must be at least 2`},
		{"table step", retry(`, "backoff": {"table": {"steps": ["1s", "-0.5s"]}}`),
			`policy: methodConfig[0].retryPolicy.backoff.table.steps[1]: "-0.5s": must not be negative`},
		{"exponential max", retry(`, "backoff": {"exponential": {"initial": "1s", "max": "0.5s", "multiplier": 2, "jitter": 0}}`),
			`policy: methodConfig[0].retryPolicy.backoff.exponential.max: "0.5s": must be 0 (no cap) or at least initial (1s)`},
		{"quantile", `{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 2, "hedgingDelayQuantile": 1.0}}]}`,
			`policy: methodConfig[0].hedgingPolicy.hedgingDelayQuantile: 1.0: must be in [0, 1)`},
		// A value that the JSON does not hold as one scalar keeps the
		// package's words.
		{"key left out", `{"retryThrottling": {"tokenRatio": 0.1}}`,
			`policy: retryThrottling.maxTokens: 0: must be in (0, 1000]`},
		{"count of a list", retry(`, "backoff": {"table": {"steps": [` + repeatSteps(101) + `]}}`),
			`policy: methodConfig[0].retryPolicy.backoff.table.steps: 101 steps: must list at most 100 steps`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig([]byte(tt.input))
			require.Error(t, err, "got %+v, want an error", c)
			assert.Equal(t, tt.want, err.Error(), "got %q, want %q", err, tt.want)
		})
	}
}

func repeatSteps(n int) string {
	s := `"1s"`
	for range n - 1 {
		s += `, "1s"`
	}
	return s
}
