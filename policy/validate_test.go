package policy

import (
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validConfig returns a Config that passes Validate, with a retry rule
// first and a hedge rule second, for tests to break one field at a time.
func validConfig() *Config {
	return &Config{
		Rules: []Rule{
			{
				Name: []Name{{Host: "api.example.com", Method: "GET", Path: "/v3/"}},
				Retry: &Retry{
					MaxAttempts:          4,
					InitialBackoff:       100 * time.Millisecond,
					MaxBackoff:           2 * time.Second,
					BackoffMultiplier:    2,
					Jitter:               0.2,
					RetryableStatusCodes: []int{429, 502, 503, 504},
					PerAttemptTimeout:    5 * time.Second,
				},
			},
			{
				Name: []Name{{Method: "GET"}},
				Hedge: &Hedge{
					MaxAttempts:          3,
					HedgingDelay:         50 * time.Millisecond,
					HedgingDelayQuantile: 0.95,
					NonFatalStatusCodes:  []int{502, 503, 504},
				},
			},
		},
		Throttle:       &Throttle{MaxTokens: 10, TokenRatio: 0.1},
		MaxServerDelay: 30 * time.Second,
	}
}

func TestValidateAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(c *Config)
	}{
		{"full config", func(*Config) {}},
		{"empty config", func(c *Config) { *c = Config{} }},
		{"rule matching everything, without policies", func(c *Config) { c.Rules = []Rule{{Name: []Name{{}}}} }},
		{"maxBackoff equal to initialBackoff", func(c *Config) { c.Rules[0].Retry.MaxBackoff = c.Rules[0].Retry.InitialBackoff }},
		{"multiplier 1", func(c *Config) { c.Rules[0].Retry.BackoffMultiplier = 1 }},
		{"jitter 0", func(c *Config) { c.Rules[0].Retry.Jitter = 0 }},
		{"jitter 1", func(c *Config) { c.Rules[0].Retry.Jitter = 1 }},
		{"status 100 and 599", func(c *Config) { c.Rules[0].Retry.RetryableStatusCodes = []int{100, 599} }},
		{"no perAttemptTimeout", func(c *Config) { c.Rules[0].Retry.PerAttemptTimeout = 0 }},
		{"hedgingDelay 0", func(c *Config) { c.Rules[1].Hedge.HedgingDelay = 0 }},
		{"quantile 0", func(c *Config) { c.Rules[1].Hedge.HedgingDelayQuantile = 0 }},
		{"extension method", func(c *Config) { c.Rules[0].Name[0].Method = "PROPFIND" }},
		{"path /", func(c *Config) { c.Rules[0].Name[0].Path = "/" }},
		{"maxTokens 1000", func(c *Config) { c.Throttle.MaxTokens = 1000 }},
		{"tokenRatio 1", func(c *Config) { c.Throttle.TokenRatio = 1 }},
		{"maxServerDelay 0", func(c *Config) { c.MaxServerDelay = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := validConfig()
			tt.mutate(c)
			err := c.Validate()
			assert.NoError(t, err, "got %v, want nil", err)
		})
	}
}

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	tests := []struct {
		name   string
		mutate func(c *Config)
		field  string
		value  string
	}{
		{"both policies", func(c *Config) { c.Rules[0].Hedge = c.Rules[1].Hedge },
			"Rules[0]", ""},
		{"no names", func(c *Config) { c.Rules[1].Name = nil },
			"Rules[1].Name", ""},
		{"empty name list", func(c *Config) { c.Rules[0].Name = []Name{} },
			"Rules[0].Name", ""},
		{"no names, and no policies", func(c *Config) { c.Rules = append(c.Rules, Rule{}) },
			"Rules[2].Name", ""},
		{"method with space", func(c *Config) { c.Rules[0].Name[0].Method = "GE T" },
			"Rules[0].Name[0].Method", `"GE T"`},
		{"method with slash", func(c *Config) { c.Rules[0].Name = append(c.Rules[0].Name, Name{Method: "GET/1"}) },
			"Rules[0].Name[1].Method", `"GET/1"`},
		{"method in lower case, which no request sends", func(c *Config) { c.Rules[0].Name[0].Method = "get" },
			"Rules[0].Name[0].Method", `"get"`},
		{"relative path", func(c *Config) { c.Rules[1].Name[0].Path = "v3" },
			"Rules[1].Name[0].Path", `"v3"`},
		{"retry maxAttempts 1", func(c *Config) { c.Rules[0].Retry.MaxAttempts = 1 },
			"Rules[0].Retry.MaxAttempts", "1"},
		{"retry maxAttempts negative", func(c *Config) { c.Rules[0].Retry.MaxAttempts = -3 },
			"Rules[0].Retry.MaxAttempts", "-3"},
		{"initialBackoff 0", func(c *Config) { c.Rules[0].Retry.InitialBackoff = 0 },
			"Rules[0].Retry.InitialBackoff", "0s"},
		{"initialBackoff negative", func(c *Config) { c.Rules[0].Retry.InitialBackoff = -time.Second },
			"Rules[0].Retry.InitialBackoff", "-1s"},
		{"maxBackoff below initialBackoff", func(c *Config) { c.Rules[0].Retry.MaxBackoff = 50 * time.Millisecond },
			"Rules[0].Retry.MaxBackoff", "50ms"},
		{"multiplier below 1", func(c *Config) { c.Rules[0].Retry.BackoffMultiplier = 0.5 },
			"Rules[0].Retry.BackoffMultiplier", "0.5"},
		{"multiplier 0", func(c *Config) { c.Rules[0].Retry.BackoffMultiplier = 0 },
			"Rules[0].Retry.BackoffMultiplier", "0"},
		{"multiplier NaN", func(c *Config) { c.Rules[0].Retry.BackoffMultiplier = nan },
			"Rules[0].Retry.BackoffMultiplier", "NaN"},
		{"multiplier +Inf", func(c *Config) { c.Rules[0].Retry.BackoffMultiplier = math.Inf(1) },
			"Rules[0].Retry.BackoffMultiplier", "+Inf"},
		{"jitter negative", func(c *Config) { c.Rules[0].Retry.Jitter = -0.1 },
			"Rules[0].Retry.Jitter", "-0.1"},
		{"jitter above 1", func(c *Config) { c.Rules[0].Retry.Jitter = 1.5 },
			"Rules[0].Retry.Jitter", "1.5"},
		{"jitter NaN", func(c *Config) { c.Rules[0].Retry.Jitter = nan },
			"Rules[0].Retry.Jitter", "NaN"},
		{"retryable status 99", func(c *Config) { c.Rules[0].Retry.RetryableStatusCodes = []int{503, 99} },
			"Rules[0].Retry.RetryableStatusCodes[1]", "99"},
		{"retryable status 600", func(c *Config) { c.Rules[0].Retry.RetryableStatusCodes = []int{600} },
			"Rules[0].Retry.RetryableStatusCodes[0]", "600"},
		{"perAttemptTimeout negative", func(c *Config) { c.Rules[0].Retry.PerAttemptTimeout = -time.Millisecond },
			"Rules[0].Retry.PerAttemptTimeout", "-1ms"},
		{"hedge maxAttempts 0", func(c *Config) { c.Rules[1].Hedge.MaxAttempts = 0 },
			"Rules[1].Hedge.MaxAttempts", "0"},
		{"hedgingDelay negative", func(c *Config) { c.Rules[1].Hedge.HedgingDelay = -time.Second },
			"Rules[1].Hedge.HedgingDelay", "-1s"},
		{"quantile 1", func(c *Config) { c.Rules[1].Hedge.HedgingDelayQuantile = 1 },
			"Rules[1].Hedge.HedgingDelayQuantile", "1"},
		{"quantile negative", func(c *Config) { c.Rules[1].Hedge.HedgingDelayQuantile = -0.5 },
			"Rules[1].Hedge.HedgingDelayQuantile", "-0.5"},
		{"quantile NaN", func(c *Config) { c.Rules[1].Hedge.HedgingDelayQuantile = nan },
			"Rules[1].Hedge.HedgingDelayQuantile", "NaN"},
		{"non-fatal status 0", func(c *Config) { c.Rules[1].Hedge.NonFatalStatusCodes = []int{0} },
			"Rules[1].Hedge.NonFatalStatusCodes[0]", "0"},
		{"maxTokens 0", func(c *Config) { c.Throttle.MaxTokens = 0 },
			"Throttle.MaxTokens", "0"},
		{"maxTokens above 1000", func(c *Config) { c.Throttle.MaxTokens = 1000.5 },
			"Throttle.MaxTokens", "1000.5"},
		{"maxTokens NaN", func(c *Config) { c.Throttle.MaxTokens = nan },
			"Throttle.MaxTokens", "NaN"},
		{"tokenRatio 0", func(c *Config) { c.Throttle.TokenRatio = 0 },
			"Throttle.TokenRatio", "0"},
		{"tokenRatio above 1", func(c *Config) { c.Throttle.TokenRatio = 1.01 },
			"Throttle.TokenRatio", "1.01"},
		{"tokenRatio NaN", func(c *Config) { c.Throttle.TokenRatio = nan },
			"Throttle.TokenRatio", "NaN"},
		{"maxServerDelay negative", func(c *Config) { c.MaxServerDelay = -time.Second },
			"MaxServerDelay", "-1s"},
		{"first error in document order", func(c *Config) {
			c.MaxServerDelay = -time.Second
			c.Throttle.MaxTokens = 0
			c.Rules[1].Hedge.MaxAttempts = 1
			c.Rules[0].Retry.Jitter = 2
			c.Rules[0].Retry.MaxAttempts = 0
		}, "Rules[0].Retry.MaxAttempts", "0"},
		{"names before policies", func(c *Config) {
			c.Rules[0].Retry.MaxAttempts = 0
			c.Rules[0].Name[0].Path = "x"
		}, "Rules[0].Name[0].Path", `"x"`},
		{"missing names before policies", func(c *Config) {
			c.Rules[1].Hedge.MaxAttempts = 0
			c.Rules[1].Name = nil
		}, "Rules[1].Name", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := validConfig()
			tt.mutate(c)
			err := c.Validate()
			requireFieldError(t, err, tt.field, tt.value)
		})
	}
}

// requireFieldError checks that err is a *FieldError for field and value
// that matches ErrInvalid and names both in its text.
func requireFieldError(t *testing.T, err error, field, value string) {
	t.Helper()
	require.Error(t, err, "got nil, want an error for %s", field)
	assert.ErrorIs(t, err, ErrInvalid, "got %v, want it to match ErrInvalid", err)
	var fe *FieldError
	require.ErrorAs(t, err, &fe, "got %T, want *FieldError", err)
	assert.Equal(t, field, fe.Field, "got field %q, want %q", fe.Field, field)
	assert.Equal(t, value, fe.Value, "got value %q, want %q", fe.Value, value)
	assert.NotEmpty(t, fe.Reason, "got an empty reason, want one")
	assert.Contains(t, err.Error(), field, "got %q, want it to name %q", err, field)
	assert.Contains(t, err.Error(), value, "got %q, want it to show %q", err, value)
}

func TestValidateNil(t *testing.T) {
	t.Parallel()
	var c *Config
	err := c.Validate()
	require.Error(t, err, "got nil, want an error")
	assert.ErrorIs(t, err, ErrInvalid, "got %v, want ErrInvalid", err)
}

func TestFieldErrorText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  FieldError
		want string
	}{
		{"all parts",
			FieldError{Field: "methodConfig[0].retryPolicy.maxAttempts", Value: "1", Reason: "must be at least 2"},
			"policy: methodConfig[0].retryPolicy.maxAttempts: 1: must be at least 2"},
		{"no value", FieldError{Field: "methodConfig[2]", Reason: "bad"}, "policy: methodConfig[2]: bad"},
		{"no field", FieldError{Reason: "config is nil"}, "policy: config is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.err.Error()
			assert.Equal(t, tt.want, got, "got %q, want %q", got, tt.want)
			assert.True(t, errors.Is(&tt.err, ErrInvalid), "got errors.Is false, want true")
		})
	}
}

func TestIsToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"GET", true}, {"M-SEARCH", true}, {"x!#$%&'*+-.^_`|~9", true},
		{"", false}, {"GE T", false}, {"GET\n", false}, {"G(ET)", false}, {"GÉT", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got := isToken(tt.in)
			assert.Equal(t, tt.want, got, "isToken(%q): got %v, want %v", tt.in, got, tt.want)
		})
	}
}

func TestRuleValidate(t *testing.T) {
	t.Parallel()
	retry := func() *Retry { return validConfig().Rules[0].Retry }
	hedge := func() *Hedge { return validConfig().Rules[1].Hedge }
	accepts := []struct {
		name string
		rule *Rule
	}{
		{"retry without names", &Rule{Retry: retry()}},
		{"hedge without names", &Rule{Hedge: hedge()}},
		{"neither policy", &Rule{}},
		{"with names", &Rule{Name: []Name{{Method: "GET"}}, Retry: retry()}},
		{"retry with a backoff", &Rule{Retry: &Retry{MaxAttempts: 6, Backoff: GoogleAPI{}}}},
	}
	for _, tt := range accepts {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.rule.Validate()
			assert.NoError(t, err, "got %v, want nil", err)
		})
	}
	rejects := []struct {
		name  string
		rule  func() *Rule
		field string
		value string
	}{
		{"bad name", func() *Rule { return &Rule{Name: []Name{{}, {Path: "v3"}}} }, "Name[1].Path", `"v3"`},
		{"both policies", func() *Rule { return &Rule{Retry: retry(), Hedge: hedge()} }, "", ""},
		{"retry maxAttempts", func() *Rule {
			r := &Rule{Retry: retry()}
			r.Retry.MaxAttempts = 1
			return r
		}, "Retry.MaxAttempts", "1"},
		{"retry backoff", func() *Rule {
			return &Rule{Retry: &Retry{MaxAttempts: 2, Backoff: Table{Steps: []time.Duration{-1}}}}
		}, "Retry.Backoff.(policy.Table).Steps[0]", "-1ns"},
		{"retry backoff with numeric fields", func() *Rule { return &Rule{Retry: &Retry{MaxAttempts: 2, Backoff: GoogleAPI{}, Jitter: 0.5}} },
			"Retry.Backoff", ""},
		{"hedge delay", func() *Rule {
			r := &Rule{Hedge: hedge()}
			r.Hedge.HedgingDelay = -time.Second
			return r
		}, "Hedge.HedgingDelay", "-1s"},
	}
	for _, tt := range rejects {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.rule().Validate()
			requireFieldError(t, err, tt.field, tt.value)
		})
	}
}

func TestRuleValidateNil(t *testing.T) {
	t.Parallel()
	var r *Rule
	err := r.Validate()
	require.Error(t, err, "got nil, want an error")
	assert.ErrorIs(t, err, ErrInvalid, "got %v, want ErrInvalid", err)
	assert.Equal(t, "policy: rule is nil", err.Error(), "got %q, want %q", err, "policy: rule is nil")
}

// A host written as a URL could never match a request's host: it is
// refused, naming the field.
func TestNameHostMustBeAHost(t *testing.T) {
	for _, host := range []string{"https://api.example.com", "api.example.com/v3", "api example", "user@api.example.com"} {
		c := validConfig()
		c.Rules[0].Name[0].Host = host
		err := c.Validate()
		var fe *FieldError
		require.ErrorAs(t, err, &fe, "host %q: got %v, want a *FieldError", host, err)
		assert.Equal(t, "Rules[0].Name[0].Host", fe.Field)
	}
	for _, host := range []string{"api.example.com", "API.example.com:8443", "[::1]:80", "127.0.0.1"} {
		c := validConfig()
		c.Rules[0].Name[0].Host = host
		assert.NoError(t, c.Validate(), "host %q", host)
	}
}

// One mistake reads in the words its author wrote: JSON's paths from
// ParseConfig, the Go fields from Validate of a Config built in Go.
func TestErrorsSpeakTheirAuthorsLanguage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		json        string
		goConfig    *Config
		jsonMessage string
		goMessage   string
	}{
		{"a retry with no waits",
			`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3, "retryableStatusCodes": [503]}}]}`,
			&Config{Rules: []Rule{{Name: []Name{{}}, Retry: &Retry{MaxAttempts: 3, RetryableStatusCodes: []int{503}}}}},
			"policy: methodConfig[0].retryPolicy.initialBackoff: 0s: must be greater than 0",
			"policy: Rules[0].Retry.InitialBackoff: 0s: must be greater than 0, or set Backoff"},
		{"a rule with no names",
			`{"methodConfig": [{"hedgingPolicy": {"maxAttempts": 2}}]}`,
			&Config{Rules: []Rule{{Hedge: &Hedge{MaxAttempts: 2}}}},
			"policy: methodConfig[0].name: must list at least one pattern; [{}] matches every request",
			"policy: Rules[0].Name: must list at least one pattern; []Name{{}} matches every request"},
		{"both policies",
			`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2, "backoff": {"googleApi": {}}}, "hedgingPolicy": {"maxAttempts": 2}}]}`,
			&Config{Rules: []Rule{{Name: []Name{{}}, Retry: &Retry{MaxAttempts: 2, Backoff: GoogleAPI{}}, Hedge: &Hedge{MaxAttempts: 2}}}},
			"policy: methodConfig[0]: must not have both retryPolicy and hedgingPolicy",
			"policy: Rules[0]: must not have both Retry and Hedge"},
		{"a backoff beside the numeric fields",
			`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2, "jitter": 0.5, "backoff": {"googleApi": {}}}}]}`,
			&Config{Rules: []Rule{{Name: []Name{{}}, Retry: &Retry{MaxAttempts: 2, Jitter: 0.5, Backoff: GoogleAPI{}}}}},
			"policy: methodConfig[0].retryPolicy.backoff: replaces initialBackoff, maxBackoff, backoffMultiplier and jitter; leave out jitter",
			"policy: Rules[0].Retry.Backoff: replaces InitialBackoff, MaxBackoff, BackoffMultiplier and Jitter; leave out Jitter"},
		{"a table step",
			`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2, "backoff": {"table": {"steps": []}}}}]}`,
			&Config{Rules: []Rule{{Name: []Name{{}}, Retry: &Retry{MaxAttempts: 2, Backoff: Table{Steps: []time.Duration{}}}}}},
			"policy: methodConfig[0].retryPolicy.backoff.table.steps: must list at least one step",
			"policy: Rules[0].Retry.Backoff.(policy.Table).Steps: must list at least one step"},
		{"a throttle",
			`{"retryThrottling": {"maxTokens": 10, "tokenRatio": 2}}`,
			&Config{Throttle: &Throttle{MaxTokens: 10, TokenRatio: 2}},
			"policy: retryThrottling.tokenRatio: 2: must be in (0, 1]",
			"policy: Throttle.TokenRatio: 2: must be in (0, 1]"},
		{"a repeated header",
			`{"serverDelayHeaders": [{"name": "A", "format": "seconds"}, {"name": "a", "format": "seconds"}]}`,
			&Config{DelayHeaders: []DelayHeader{{Name: "A", Format: DelaySeconds}, {Name: "a", Format: DelaySeconds}}},
			`policy: serverDelayHeaders[1].name: "a": repeats serverDelayHeaders[0].name`,
			`policy: DelayHeaders[1].Name: "a": repeats DelayHeaders[0].Name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig([]byte(tt.json))
			require.ErrorIs(t, err, ErrInvalid, "JSON: got %v, want ErrInvalid", err)
			assert.Equal(t, tt.jsonMessage, err.Error(), "JSON: got %q, want %q", err, tt.jsonMessage)
			err = tt.goConfig.Validate()
			require.ErrorIs(t, err, ErrInvalid, "Go: got %v, want ErrInvalid", err)
			assert.Equal(t, tt.goMessage, err.Error(), "Go: got %q, want %q", err, tt.goMessage)
		})
	}
}

// A host with a wildcard reads as a pattern to its author, "*.example.com"
// for every subdomain, but Host is compared as a name: such a rule would
// match no request, silently, and "*" would share its key with Name{}. It
// is refused, naming the field, in Go's words and in JSON's.
func TestNameHostHasNoWildcards(t *testing.T) {
	t.Parallel()
	for _, host := range []string{"*.example.com", "*", "api.*.com", "*:443"} {
		c := validConfig()
		c.Rules[0].Name[0].Host = host
		requireFieldError(t, c.Validate(), "Rules[0].Name[0].Host", strconv.Quote(host))

		_, err := ParseConfig([]byte(`{"methodConfig": [{"name": [{"host": ` + strconv.Quote(host) + `}]}]}`))
		requireFieldError(t, err, "methodConfig[0].name[0].host", strconv.Quote(host))
		assert.Contains(t, err.Error(), "leave host out to match every host", "got %q", err)
	}
}
