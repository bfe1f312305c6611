package policy_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/policy"
)

// What JSON cannot hold (NaN, Infinity, a leading dot or plus, a single
// quote) and a document nested too deep are syntax errors to
// encoding/json, which gives only an offset: the error names the field
// they lie in and the text there, as every other error does, and still
// wraps the *json.SyntaxError.
func TestParseConfigSyntaxNamesThePlace(t *testing.T) {
	retry := func(fields string) string {
		return `{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3, ` + fields + `}}]}`
	}
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	for _, tc := range []struct {
		name, json, want string
	}{
		{"NaN", retry(`"backoffMultiplier": NaN`), "methodConfig[0].retryPolicy.backoffMultiplier: NaN: "},
		{"Infinity", retry(`"jitter": Infinity`), "methodConfig[0].retryPolicy.jitter: Infinity: "},
		{"-Infinity", retry(`"jitter": -Infinity`), "methodConfig[0].retryPolicy.jitter: -Infinity: "},
		{"leading dot", `{"retryThrottling": {"maxTokens": 10, "tokenRatio": .5}}`, "retryThrottling.tokenRatio: .5: "},
		{"leading plus", `{"admission": {"maxConcurrency": +5}}`, "admission.maxConcurrency: +5: "},
		{"NaN in a list", retry(`"retryableStatusCodes": [503, NaN]`), "methodConfig[0].retryPolicy.retryableStatusCodes[1]: NaN: "},
		{"first element", retry(`"retryableStatusCodes": [NaN]`), "methodConfig[0].retryPolicy.retryableStatusCodes[0]: NaN: "},
		{"single quotes", `{"methodConfig": [{}, {"name": [{"host": 'a'}]}]}`, "methodConfig[1].name[0].host: 'a': "},
		{"a word cut short", `{"hold": {"off": tru}}`, "hold.off: tru: "},
		{"trailing comma", `{"methodConfig": [{"name": [{}],}]}`, "methodConfig[0]: }: "},
		{"at the top", `NaN`, "policy: invalid config: NaN: "},
		{"nested too deep", `{"methodConfig": [{"name": [{}], "x": ` + deep + `}]}`, "methodConfig[0].x[0][0][0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := policy.ParseConfig([]byte(tc.json))
			assert.Nil(t, c)
			require.ErrorIs(t, err, policy.ErrInvalid)
			var se *json.SyntaxError
			require.ErrorAs(t, err, &se, "got %T, want a wrapped *json.SyntaxError", err)
			assert.Contains(t, err.Error(), tc.want)
			assert.LessOrEqual(t, len(err.Error()), 320, "got %d bytes, want the place cut short", len(err.Error()))
		})
	}
}
