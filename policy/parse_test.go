package policy

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// designExample is the configuration shown in DESIGN.md and the package
// documentation.
const designExample = `{
  "methodConfig": [
    {
      "name": [{"host": "api.example.com", "method": "GET", "path": "/v3/"}],
      "retryPolicy": {
        "maxAttempts": 4,
        "initialBackoff": "0.1s",
        "maxBackoff": "2s",
        "backoffMultiplier": 2,
        "jitter": 0.2,
        "retryableStatusCodes": [429, 502, 503, 504],
        "perAttemptTimeout": "5s",
        "retryNonIdempotent": false
      }
    },
    {
      "name": [{"method": "GET"}],
      "hedgingPolicy": {
        "maxAttempts": 3,
        "hedgingDelay": "0.05s",
        "hedgingDelayQuantile": 0.95,
        "nonFatalStatusCodes": [502, 503, 504]
      }
    }
  ],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
}`

func TestParseConfigDesignExample(t *testing.T) {
	t.Parallel()
	want := validConfig() // the same rules, checked there field by field
	want.MaxServerDelay = 0
	got, err := ParseConfig([]byte(designExample))
	require.NoError(t, err, "got %v, want nil", err)
	assert.Equal(t, want, got, "got %+v, want %+v", got, want)
}

func TestParseConfigValues(t *testing.T) {
	t.Parallel()
	retry := func(fields string) string {
		return `{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s",
			"maxBackoff": "1s", "backoffMultiplier": 1` + fields + `}}]}`
	}
	tests := []struct {
		name  string
		input string
		check func(t *testing.T, c *Config)
	}{
		{"jitter left out is DefaultJitter", retry(``), func(t *testing.T, c *Config) {
			assert.Equal(t, DefaultJitter, c.Rules[0].Retry.Jitter, "got %v, want %v", c.Rules[0].Retry.Jitter, DefaultJitter)
		}},
		{"jitter null is DefaultJitter", retry(`, "jitter": null`), func(t *testing.T, c *Config) {
			assert.Equal(t, DefaultJitter, c.Rules[0].Retry.Jitter, "got %v, want %v", c.Rules[0].Retry.Jitter, DefaultJitter)
		}},
		{"jitter 0 is none", retry(`, "jitter": 0`), func(t *testing.T, c *Config) {
			r := c.Rules[0].Retry
			assert.Equal(t, Exponential{Initial: time.Second, Max: time.Second, Multiplier: 1}, r.Backoff,
				"got %+v, want the fields as an Exponential without jitter", r.Backoff)
			assert.Zero(t, r.Jitter)
			assert.Zero(t, r.InitialBackoff, "the fields give way to Backoff")
		}},
		{"jitter -0 is none", retry(`, "jitter": -0e5`), func(t *testing.T, c *Config) {
			assert.Equal(t, Exponential{Initial: time.Second, Max: time.Second, Multiplier: 1}, c.Rules[0].Retry.Backoff)
		}},
		{"jitter 1", retry(`, "jitter": 1`), func(t *testing.T, c *Config) {
			assert.Equal(t, 1.0, c.Rules[0].Retry.Jitter, "got %v, want 1", c.Rules[0].Retry.Jitter)
		}},
		{"retryNonIdempotent", retry(`, "retryNonIdempotent": true`), func(t *testing.T, c *Config) {
			assert.True(t, c.Rules[0].Retry.RetryNonIdempotent, "got false, want true")
		}},
		{"maxServerDelay", `{"maxServerDelay": "90s"}`, func(t *testing.T, c *Config) {
			assert.Equal(t, 90*time.Second, c.MaxServerDelay, "got %v, want 90s", c.MaxServerDelay)
		}},
		{"empty object", `{}`, func(t *testing.T, c *Config) {
			assert.Equal(t, &Config{}, c, "got %+v, want the zero Config", c)
		}},
		{"whitespace around the object", " \n\t{}\n ", func(t *testing.T, c *Config) {
			assert.Equal(t, &Config{}, c, "got %+v, want the zero Config", c)
		}},
		{"nulls read as left out", `{"methodConfig": [{"name": [{"host": null}], "retryPolicy": null, "hedgingPolicy": null}],
			"retryThrottling": null, "maxServerDelay": null}`, func(t *testing.T, c *Config) {
			want := &Config{Rules: []Rule{{Name: []Name{{}}}}}
			assert.Equal(t, want, c, "got %+v, want %+v", c, want)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig([]byte(tt.input))
			require.NoError(t, err, "got %v, want nil", err)
			tt.check(t, c)
		})
	}
}

func TestParseConfigDurations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
	}{
		{`"0.1s"`, 100 * time.Millisecond},
		{`"250ms"`, 250 * time.Millisecond},
		{`"1.5s"`, 1500 * time.Millisecond},
		{`"2s"`, 2 * time.Second},
		{`"1m30s"`, 90 * time.Second},
		{`"0.000000001s"`, time.Nanosecond},
		{`"3.000000001s"`, 3*time.Second + time.Nanosecond},
		{`"0"`, 0},
		{`"0s"`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig([]byte(`{"maxServerDelay": ` + tt.in + `}`))
			require.NoError(t, err, "got %v, want nil", err)
			assert.Equal(t, tt.want, c.MaxServerDelay, "got %v, want %v", c.MaxServerDelay, tt.want)
		})
	}
}

func TestParseConfigRejects(t *testing.T) {
	t.Parallel()
	rule := func(fields string) string {
		return `{"methodConfig": [{"name": [{}]` + fields + `}]}`
	}
	retry := func(fields string) string {
		return rule(`, "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s",
			"backoffMultiplier": 1` + fields + `}`)
	}
	hedge := func(fields string) string {
		return rule(`, "hedgingPolicy": {"maxAttempts": 2` + fields + `}`)
	}
	tests := []struct {
		name  string
		input string
		field string
		value string
	}{
		// Unknown and repeated keys, at every level.
		{"unknown top-level key", `{"methodConfig": [], "retryPolicy": {}}`, "retryPolicy", "{}"},
		{"unknown rule key", rule(`, "timeout": "1s"`), "methodConfig[0].timeout", `"1s"`},
		{"unknown name key", `{"methodConfig": [{}, {"name": [{}, {"service": "x"}]}]}`,
			"methodConfig[1].name[1].service", `"x"`},
		{"unknown retry key", retry(`, "maxRetries": 3`), "methodConfig[0].retryPolicy.maxRetries", "3"},
		{"unknown hedge key", hedge(`, "delay": "1s"`), "methodConfig[0].hedgingPolicy.delay", `"1s"`},
		{"unknown throttle key", `{"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1, "burst": 2}}`,
			"retryThrottling.burst", "2"},
		{"key in other case", retry(`, "Jitter": 0.1`), "methodConfig[0].retryPolicy.Jitter", "0.1"},
		{"repeated key", retry(`, "maxAttempts": 3`), "methodConfig[0].retryPolicy.maxAttempts", "3"},
		{"fields before jitter", rule(`, "retryPolicy": {"jitter": 0, "maxAttempts": 2, "initialBackoff": "soon"}`),
			"methodConfig[0].retryPolicy.initialBackoff", `"soon"`},
		{"jitter 0 still checks the fields", rule(`, "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1ms",
			"backoffMultiplier": 1, "jitter": 0}`),
			"methodConfig[0].retryPolicy.maxBackoff", `"1ms"`},
		// Durations.
		{"duration as number", retry(`, "perAttemptTimeout": 0.1`), "methodConfig[0].retryPolicy.perAttemptTimeout", "0.1"},
		{"negative duration", retry(`, "perAttemptTimeout": "-1s"`), "methodConfig[0].retryPolicy.perAttemptTimeout", `"-1s"`},
		{"garbage duration", hedge(`, "hedgingDelay": "soon"`), "methodConfig[0].hedgingPolicy.hedgingDelay", `"soon"`},
		{"empty duration", `{"maxServerDelay": ""}`, "maxServerDelay", `""`},
		{"duration without unit", `{"maxServerDelay": "5"}`, "maxServerDelay", `"5"`},
		{"negative maxServerDelay", `{"maxServerDelay": "-2ms"}`, "maxServerDelay", `"-2ms"`},
		{"overflowing duration", `{"maxServerDelay": "3000000h"}`, "maxServerDelay", `"3000000h"`},
		// Other JSON types.
		{"maxAttempts as string", hedge(`, "maxAttempts": "3"`), "methodConfig[0].hedgingPolicy.maxAttempts", `"3"`},
		{"maxAttempts fractional", retry(`, "retryNonIdempotent": false, "maxAttempts": 2.5`),
			"methodConfig[0].retryPolicy.maxAttempts", "2.5"},
		{"maxAttempts too large", hedge(`, "maxAttempts": 1e30`), "methodConfig[0].hedgingPolicy.maxAttempts", "1e30"},
		{"status code as string", retry(`, "retryableStatusCodes": [503, "504"]`),
			"methodConfig[0].retryPolicy.retryableStatusCodes", `[503,"504"]`},
		{"boolean as string", retry(`, "retryNonIdempotent": "yes"`),
			"methodConfig[0].retryPolicy.retryNonIdempotent", `"yes"`},
		{"methodConfig as object", `{"methodConfig": {}}`, "methodConfig", "{}"},
		{"rule as number", `{"methodConfig": [5]}`, "methodConfig[0]", "5"},
		{"name as string", rule(`, "name": "x"`), "methodConfig[0].name", `"x"`},
		{"name entry as array", `{"methodConfig": [{"name": [[]]}]}`, "methodConfig[0].name[0]", "[]"},
		{"host as number", `{"methodConfig": [{"name": [{"host": 1}]}]}`, "methodConfig[0].name[0].host", "1"},
		{"retryPolicy as array", rule(`, "retryPolicy": []`), "methodConfig[0].retryPolicy", "[]"},
		{"retryThrottling as number", `{"retryThrottling": 5}`, "retryThrottling", "5"},
		{"top level as array", `[]`, "", "[]"},
		{"top level null", `null`, "", "null"},
		// Values that Validate refuses come back from ParseConfig.
		{"no name", `{"methodConfig": [{"retryPolicy": {"maxAttempts": 1}}]}`, "methodConfig[0].name", ""},
		{"name null", `{"methodConfig": [{"name": null}]}`, "methodConfig[0].name", ""},
		{"empty name list", `{"methodConfig": [{"name": [{}]}, {"name": []}]}`, "methodConfig[1].name", ""},
		{"maxAttempts 1", retry(`, "maxAttempts": 1`), "methodConfig[0].retryPolicy.maxAttempts", "1"},
		{"both policies", rule(`, "retryPolicy": {}, "hedgingPolicy": {}`), "methodConfig[0]", ""},
		{"throttle left empty", `{"retryThrottling": {}}`, "retryThrottling.maxTokens", "0"},
		{"bad method", `{"methodConfig": [{"name": [{"method": "get it"}]}]}`,
			"methodConfig[0].name[0].method", `"get it"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig([]byte(tt.input))
			assert.Nil(t, c, "got %+v, want nil", c)
			requireFieldError(t, err, tt.field, tt.value)
		})
	}
}

func TestParseConfigMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		input string
		want  string
	}{
		{`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 1}}]}`,
			"policy: methodConfig[0].retryPolicy.maxAttempts: 1: must be at least 2"},
		{`{"methodConfig": [{"retryPolicy": {"maxAttempts": 1}}]}`,
			"policy: methodConfig[0].name: must list at least one pattern; [{}] matches every request"},
		{`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2, "jitter": 0}}]}`,
			`policy: methodConfig[0].retryPolicy.initialBackoff: 0s: must be greater than 0`},
		{`{"maxServerDelay": 60}`,
			`policy: maxServerDelay: 60: must be a duration string such as "0.1s"`},
		{`{"maxServerDelay": "-1s"}`,
			`policy: maxServerDelay: "-1s": must not be negative`},
		{`{"methodConfig": [{"retryPolicy": {"retryableStatusCodes": 503}}]}`,
			"policy: methodConfig[0].retryPolicy.retryableStatusCodes: 503: must be an array of integers"},
		{`{"methodConfig": [{"hedgingPolicy": {"maxAttempts": 2}, "x": {"a": 1, "b": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]}}]}`,
			`policy: methodConfig[0].x: {"a":1,"b":[1,2,3,4,5,6,7,8,9,10,11]}: unknown field`},
		// 1 + 2*40 + 1 bytes: the 32nd "é" would straddle byte 64, so
		// the excerpt keeps 31.
		{`{"methodConfig": [{"x": "` + strings.Repeat("é", 40) + `"}]}`,
			`policy: methodConfig[0].x: "` + strings.Repeat("é", 31) + `...: unknown field`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig([]byte(tt.input))
			require.Error(t, err, "got nil, want %q", tt.want)
			assert.Equal(t, tt.want, err.Error(), "got %q, want %q", err, tt.want)
		})
	}
}

func TestParseConfigSyntax(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
	}{
		{"empty", ``},
		{"only whitespace", " \n"},
		{"truncated", `{"methodConfig": [`},
		{"bad token", `{"methodConfig": [}]}`},
		{"trailing object", `{} {}`},
		{"trailing garbage", `{}x`},
		{"trailing brace", `{}}`},
		{"trailing comma", `{"maxServerDelay": "1s",}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig([]byte(tt.input))
			assert.Nil(t, c, "got %+v, want nil", c)
			require.Error(t, err, "got nil, want an error")
			assert.ErrorIs(t, err, ErrInvalid, "got %v, want it to match ErrInvalid", err)
			assert.True(t, strings.HasPrefix(err.Error(), "policy: "), "got %q, want the prefix \"policy: \"", err)
		})
	}
}

func TestParseConfigSyntaxErrorWrapped(t *testing.T) {
	t.Parallel()
	_, err := ParseConfig([]byte(`{"methodConfig": x}`))
	var se *json.SyntaxError
	require.ErrorAs(t, err, &se, "got %T, want a wrapped *json.SyntaxError", err)
	assert.Equal(t, int64(18), se.Offset, "got offset %d, want 18", se.Offset)
}

func TestParseConfigTrailingOffset(t *testing.T) {
	t.Parallel()
	_, err := ParseConfig([]byte("{}\n {}"))
	require.Error(t, err, "got nil, want an error")
	want := "policy: data after the end of the JSON value at offset 2"
	assert.Equal(t, want, err.Error(), "got %q, want %q", err, want)
}

// TestPackageDocExample parses the JSON shown in the package documentation,
// so that the documentation cannot drift from what ParseConfig accepts.
func TestPackageDocExample(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err, "got %v, want doc.go", err)
	var doc strings.Builder
	for line := range strings.Lines(string(src)) {
		if code, ok := strings.CutPrefix(line, "//\t"); ok {
			doc.WriteString(code)
		}
	}
	require.NotEmpty(t, doc.String(), "got no example, want the JSON block of doc.go")
	got, err := ParseConfig([]byte(doc.String()))
	require.NoError(t, err, "got %v, want nil", err)
	want, err := ParseConfig([]byte(designExample))
	require.NoError(t, err, "got %v, want nil", err)
	google, err := ParseConfig([]byte(coreReporting))
	require.NoError(t, err, "got %v, want nil", err)
	want.Rules = append(google.Rules, want.Rules...)
	want.MaxServerDelay = 60 * time.Second
	want.Hold = &Hold{}
	want.Rules[2].Hedge.MaxExtraLoad = 0.02
	want.DelayHeaders = []DelayHeader{{Name: "X-RateLimit-Reset", Format: DelayUnixSeconds, Remaining: "X-RateLimit-Remaining"}}
	assert.Equal(t, want, got, "got %+v, want %+v", got, want)
}

// JSON is UTF-8. encoding/json reads a byte that is not as U+FFFD, so a
// path written in Latin-1, "/café" as "/caf\xe9", would become a
// pattern that no request matches, and an error would show a value that
// was never written: the input is refused where it stops being UTF-8.
func TestParseConfigRefusesInvalidUTF8(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{"Latin-1 in a path", "{\"methodConfig\": [{\"name\": [{\"path\": \"/caf\xe9\"}]}]}",
			"policy: input is not valid UTF-8 at offset 42"},
		{"a lone continuation byte in a key", "{\"hold\": {}, \"x\x80\": 1}",
			"policy: input is not valid UTF-8 at offset 15"},
		{"a truncated sequence at the end", "{}\xe2\x82", "policy: input is not valid UTF-8 at offset 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig([]byte(tt.input))
			assert.Nil(t, c, "got %+v, want nil", c)
			require.Error(t, err, "got nil, want an error")
			assert.ErrorIs(t, err, ErrInvalid, "got %v, want it to match ErrInvalid", err)
			assert.Equal(t, tt.want, err.Error(), "got %q, want %q", err, tt.want)
		})
	}
	c, err := ParseConfig([]byte(`{"methodConfig": [{"name": [{"path": "/café/\u00e9"}]}]}`))
	require.NoError(t, err, "got %v, want UTF-8 and escapes read", err)
	assert.Equal(t, "/café/é", c.Rules[0].Name[0].Path)
}
