package policy

import (
	"errors"
	"math"
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
			"methodConfig[0]", ""},
		{"no names", func(c *Config) { c.Rules[1].Name = nil },
			"methodConfig[1].name", ""},
		{"empty name list", func(c *Config) { c.Rules[0].Name = []Name{} },
			"methodConfig[0].name", ""},
		{"no names, and no policies", func(c *Config) { c.Rules = append(c.Rules, Rule{}) },
			"methodConfig[2].name", ""},
		{"method with space", func(c *Config) { c.Rules[0].Name[0].Method = "GE T" },
			"methodConfig[0].name[0].method", `"GE T"`},
		{"method with slash", func(c *Config) { c.Rules[0].Name = append(c.Rules[0].Name, Name{Method: "GET/1"}) },
			"methodConfig[0].name[1].method", `"GET/1"`},
		{"method in lower case, which no request sends", func(c *Config) { c.Rules[0].Name[0].Method = "get" },
			"methodConfig[0].name[0].method", `"get"`},
		{"relative path", func(c *Config) { c.Rules[1].Name[0].Path = "v3" },
			"methodConfig[1].name[0].path", `"v3"`},
		{"retry maxAttempts 1", func(c *Config) { c.Rules[0].Retry.MaxAttempts = 1 },
			"methodConfig[0].retryPolicy.maxAttempts", "1"},
		{"retry maxAttempts negative", func(c *Config) { c.Rules[0].Retry.MaxAttempts = -3 },
			"methodConfig[0].retryPolicy.maxAttempts", "-3"},
		{"initialBackoff 0", func(c *Config) { c.Rules[0].Retry.InitialBackoff = 0 },
			"methodConfig[0].retryPolicy.initialBackoff", "0s"},
		{"initialBackoff negative", func(c *Config) { c.Rules[0].Retry.InitialBackoff = -time.Second },
			"methodConfig[0].retryPolicy.initialBackoff", "-1s"},
		{"maxBackoff below initialBackoff", func(c *Config) { c.Rules[0].Retry.MaxBackoff = 50 * time.Millisecond },
			"methodConfig[0].retryPolicy.maxBackoff", "50ms"},
		{"multiplier below 1", func(c *Config) { c.Rules[0].Retry.BackoffMultiplier = 0.5 },
			"methodConfig[0].retryPolicy.backoffMultiplier", "0.5"},
		{"multiplier 0", func(c *Config) { c.Rules[0].Retry.BackoffMultiplier = 0 },
			"methodConfig[0].retryPolicy.backoffMultiplier", "0"},
		{"multiplier NaN", func(c *Config) { c.Rules[0].Retry.BackoffMultiplier = nan },
			"methodConfig[0].retryPolicy.backoffMultiplier", "NaN"},
		{"multiplier +Inf", func(c *Config) { c.Rules[0].Retry.BackoffMultiplier = math.Inf(1) },
			"methodConfig[0].retryPolicy.backoffMultiplier", "+Inf"},
		{"jitter negative", func(c *Config) { c.Rules[0].Retry.Jitter = -0.1 },
			"methodConfig[0].retryPolicy.jitter", "-0.1"},
		{"jitter above 1", func(c *Config) { c.Rules[0].Retry.Jitter = 1.5 },
			"methodConfig[0].retryPolicy.jitter", "1.5"},
		{"jitter NaN", func(c *Config) { c.Rules[0].Retry.Jitter = nan },
			"methodConfig[0].retryPolicy.jitter", "NaN"},
		{"retryable status 99", func(c *Config) { c.Rules[0].Retry.RetryableStatusCodes = []int{503, 99} },
			"methodConfig[0].retryPolicy.retryableStatusCodes[1]", "99"},
		{"retryable status 600", func(c *Config) { c.Rules[0].Retry.RetryableStatusCodes = []int{600} },
			"methodConfig[0].retryPolicy.retryableStatusCodes[0]", "600"},
		{"perAttemptTimeout negative", func(c *Config) { c.Rules[0].Retry.PerAttemptTimeout = -time.Millisecond },
			"methodConfig[0].retryPolicy.perAttemptTimeout", "-1ms"},
		{"hedge maxAttempts 0", func(c *Config) { c.Rules[1].Hedge.MaxAttempts = 0 },
			"methodConfig[1].hedgingPolicy.maxAttempts", "0"},
		{"hedgingDelay negative", func(c *Config) { c.Rules[1].Hedge.HedgingDelay = -time.Second },
			"methodConfig[1].hedgingPolicy.hedgingDelay", "-1s"},
		{"quantile 1", func(c *Config) { c.Rules[1].Hedge.HedgingDelayQuantile = 1 },
			"methodConfig[1].hedgingPolicy.hedgingDelayQuantile", "1"},
		{"quantile negative", func(c *Config) { c.Rules[1].Hedge.HedgingDelayQuantile = -0.5 },
			"methodConfig[1].hedgingPolicy.hedgingDelayQuantile", "-0.5"},
		{"quantile NaN", func(c *Config) { c.Rules[1].Hedge.HedgingDelayQuantile = nan },
			"methodConfig[1].hedgingPolicy.hedgingDelayQuantile", "NaN"},
		{"non-fatal status 0", func(c *Config) { c.Rules[1].Hedge.NonFatalStatusCodes = []int{0} },
			"methodConfig[1].hedgingPolicy.nonFatalStatusCodes[0]", "0"},
		{"maxTokens 0", func(c *Config) { c.Throttle.MaxTokens = 0 },
			"retryThrottling.maxTokens", "0"},
		{"maxTokens above 1000", func(c *Config) { c.Throttle.MaxTokens = 1000.5 },
			"retryThrottling.maxTokens", "1000.5"},
		{"maxTokens NaN", func(c *Config) { c.Throttle.MaxTokens = nan },
			"retryThrottling.maxTokens", "NaN"},
		{"tokenRatio 0", func(c *Config) { c.Throttle.TokenRatio = 0 },
			"retryThrottling.tokenRatio", "0"},
		{"tokenRatio above 1", func(c *Config) { c.Throttle.TokenRatio = 1.01 },
			"retryThrottling.tokenRatio", "1.01"},
		{"tokenRatio NaN", func(c *Config) { c.Throttle.TokenRatio = nan },
			"retryThrottling.tokenRatio", "NaN"},
		{"maxServerDelay negative", func(c *Config) { c.MaxServerDelay = -time.Second },
			"maxServerDelay", "-1s"},
		{"first error in document order", func(c *Config) {
			c.MaxServerDelay = -time.Second
			c.Throttle.MaxTokens = 0
			c.Rules[1].Hedge.MaxAttempts = 1
			c.Rules[0].Retry.Jitter = 2
			c.Rules[0].Retry.MaxAttempts = 0
		}, "methodConfig[0].retryPolicy.maxAttempts", "0"},
		{"names before policies", func(c *Config) {
			c.Rules[0].Retry.MaxAttempts = 0
			c.Rules[0].Name[0].Path = "x"
		}, "methodConfig[0].name[0].path", `"x"`},
		{"missing names before policies", func(c *Config) {
			c.Rules[1].Hedge.MaxAttempts = 0
			c.Rules[1].Name = nil
		}, "methodConfig[1].name", ""},
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
		{"bad name", func() *Rule { return &Rule{Name: []Name{{}, {Path: "v3"}}} }, "name[1].path", `"v3"`},
		{"both policies", func() *Rule { return &Rule{Retry: retry(), Hedge: hedge()} }, "", ""},
		{"retry maxAttempts", func() *Rule {
			r := &Rule{Retry: retry()}
			r.Retry.MaxAttempts = 1
			return r
		}, "retryPolicy.maxAttempts", "1"},
		{"retry backoff", func() *Rule {
			return &Rule{Retry: &Retry{MaxAttempts: 2, Backoff: Table{Steps: []time.Duration{-1}}}}
		}, "retryPolicy.backoff.table.steps[0]", "-1ns"},
		{"retry backoff with numeric fields", func() *Rule { return &Rule{Retry: &Retry{MaxAttempts: 2, Backoff: GoogleAPI{}, Jitter: 0.5}} },
			"retryPolicy.backoff", ""},
		{"hedge delay", func() *Rule {
			r := &Rule{Hedge: hedge()}
			r.Hedge.HedgingDelay = -time.Second
			return r
		}, "hedgingPolicy.hedgingDelay", "-1s"},
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
		assert.Equal(t, "methodConfig[0].name[0].host", fe.Field)
	}
	for _, host := range []string{"api.example.com", "API.example.com:8443", "[::1]:80", "127.0.0.1"} {
		c := validConfig()
		c.Rules[0].Name[0].Host = host
		assert.NoError(t, c.Validate(), "host %q", host)
	}
}
