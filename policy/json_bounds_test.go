package policy_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/policy"
)

// retryJSON is a config of one valid retry rule, with the fields given
// set, or left out where their value is "".
func retryJSON(fields map[string]string) string {
	base := map[string]string{
		"maxAttempts": "3", "initialBackoff": `"1s"`, "maxBackoff": `"2s"`,
		"backoffMultiplier": "2", "retryableStatusCodes": "[503]",
	}
	for k, v := range fields {
		if v == "" {
			delete(base, k)
		} else {
			base[k] = v
		}
	}
	var kv []string
	for _, k := range []string{"maxAttempts", "initialBackoff", "maxBackoff", "backoffMultiplier", "jitter",
		"retryableStatusCodes", "backoff"} {
		if v, ok := base[k]; ok {
			kv = append(kv, `"`+k+`": `+v)
		}
	}
	return `{"methodConfig": [{"name": [{}], "retryPolicy": {` + strings.Join(kv, ", ") + `}}]}`
}

// Each bound the JSON configuration has is refused in JSON's words: an
// error that matches policy.ErrInvalid, a *policy.FieldError naming the
// field as the document spells it, and the value the document gave.
func TestJSONBoundsNameTheFieldAndValue(t *testing.T) {
	hedge := func(fields string) string {
		return `{"methodConfig": [{"name": [{}], "hedgingPolicy": {` + fields + `}}]}`
	}
	const rp = "methodConfig[0].retryPolicy."
	cases := []struct {
		name, json, field, value string
	}{
		{"maxAttempts 1", retryJSON(map[string]string{"maxAttempts": "1"}), rp + "maxAttempts", "1"},
		{"maxAttempts 0", retryJSON(map[string]string{"maxAttempts": "0"}), rp + "maxAttempts", "0"},
		{"hedge maxAttempts 1", hedge(`"maxAttempts": 1`), "methodConfig[0].hedgingPolicy.maxAttempts", "1"},
		{"multiplier below 1", retryJSON(map[string]string{"backoffMultiplier": "0.99"}), rp + "backoffMultiplier", "0.99"},
		{"maxBackoff below initialBackoff", retryJSON(map[string]string{"maxBackoff": `"999ms"`}), rp + "maxBackoff", `"999ms"`},
		{"status 99", retryJSON(map[string]string{"retryableStatusCodes": "[503, 99]"}), rp + "retryableStatusCodes[1]", "99"},
		{"status 600", retryJSON(map[string]string{"retryableStatusCodes": "[600]"}), rp + "retryableStatusCodes[0]", "600"},
		{"non-fatal status 600", hedge(`"maxAttempts": 2, "nonFatalStatusCodes": [503, 600]`),
			"methodConfig[0].hedgingPolicy.nonFatalStatusCodes[1]", "600"},
		{"non-fatal status 99", hedge(`"maxAttempts": 2, "nonFatalStatusCodes": [99]`),
			"methodConfig[0].hedgingPolicy.nonFatalStatusCodes[0]", "99"},
		{"jitter below 0", retryJSON(map[string]string{"jitter": "-0.1"}), rp + "jitter", "-0.1"},
		{"jitter above 1", retryJSON(map[string]string{"jitter": "1.5"}), rp + "jitter", "1.5"},
		{"maxTokens 0", `{"retryThrottling": {"maxTokens": 0, "tokenRatio": 0.1}}`, "retryThrottling.maxTokens", "0"},
		{"maxTokens negative", `{"retryThrottling": {"maxTokens": -1, "tokenRatio": 0.1}}`, "retryThrottling.maxTokens", "-1"},
		{"maxTokens above 1000", `{"retryThrottling": {"maxTokens": 1001, "tokenRatio": 0.1}}`, "retryThrottling.maxTokens", "1001"},
		{"tokenRatio 0", `{"retryThrottling": {"maxTokens": 10, "tokenRatio": 0}}`, "retryThrottling.tokenRatio", "0"},
		{"tokenRatio above 1", `{"retryThrottling": {"maxTokens": 10, "tokenRatio": 1.5}}`, "retryThrottling.tokenRatio", "1.5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := policy.ParseConfig([]byte(tc.json))
			assert.Nil(t, cfg)
			require.ErrorIs(t, err, policy.ErrInvalid)
			var fe *policy.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tc.field, fe.Field)
			assert.Equal(t, tc.value, fe.Value)
			assert.Contains(t, err.Error(), tc.field+": "+tc.value+": ")
		})
	}
}

// A backoff beside the numeric fields it replaces is refused, naming each
// of them that was given.
func TestJSONBackoffBesideItsFields(t *testing.T) {
	for _, tc := range []struct {
		fields map[string]string
		named  []string
	}{
		{map[string]string{"maxBackoff": "", "backoffMultiplier": ""}, []string{"initialBackoff"}},
		{map[string]string{"initialBackoff": "", "jitter": "0.2"}, []string{"maxBackoff", "backoffMultiplier", "jitter"}},
	} {
		tc.fields["backoff"] = `{"googleApi": {}}`
		_, err := policy.ParseConfig([]byte(retryJSON(tc.fields)))
		require.ErrorIs(t, err, policy.ErrInvalid)
		var fe *policy.FieldError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, "methodConfig[0].retryPolicy.backoff", fe.Field)
		for _, name := range tc.named {
			assert.Contains(t, fe.Reason, name)
		}
	}
}

// Each bound is inclusive where the design says so: these values, at the
// edge, are accepted.
func TestJSONBoundsAcceptTheirEdges(t *testing.T) {
	for name, js := range map[string]string{
		"maxAttempts 2":           retryJSON(map[string]string{"maxAttempts": "2"}),
		"Google's six attempts":   retryJSON(map[string]string{"maxAttempts": "6", "initialBackoff": "", "maxBackoff": "", "backoffMultiplier": "", "backoff": `{"googleApi": {}}`}),
		"multiplier 1":            retryJSON(map[string]string{"backoffMultiplier": "1"}),
		"maxBackoff = initial":    retryJSON(map[string]string{"maxBackoff": `"1s"`}),
		"statuses 100 and 599":    retryJSON(map[string]string{"retryableStatusCodes": "[100, 599]"}),
		"jitter 0":                retryJSON(map[string]string{"jitter": "0"}),
		"jitter 1":                retryJSON(map[string]string{"jitter": "1"}),
		"maxTokens 1000, ratio 1": `{"retryThrottling": {"maxTokens": 1000, "tokenRatio": 1}}`,
		"a tiny throttle":         `{"retryThrottling": {"maxTokens": 0.001, "tokenRatio": 0.001}}`,
	} {
		_, err := policy.ParseConfig([]byte(js))
		assert.NoError(t, err, name)
	}
}
