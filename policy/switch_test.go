package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Config that says nothing of a switch has Default's; one that turns it
// off has none; one that sets it has its own. JSON and Go read alike.
func TestSwitchesInForce(t *testing.T) {
	t.Parallel()
	def := Default()
	own := &Throttle{MaxTokens: 10, TokenRatio: 0.1}
	tests := []struct {
		name     string
		json     string
		goConfig *Config
		throttle *Throttle // in force; nil: off
		hold     *Hold
	}{
		{"silent", `{}`, &Config{}, def.Throttle, def.Hold},
		{"null", `{"retryThrottling": null, "hold": null}`, &Config{}, def.Throttle, def.Hold},
		{"both off", `{"retryThrottling": {"off": true}, "hold": {"off": true}}`,
			&Config{Throttle: &Throttle{Off: true}, Hold: &Hold{Off: true}}, nil, nil},
		{"throttle off", `{"retryThrottling": {"off": true}}`, &Config{Throttle: &Throttle{Off: true}}, nil, def.Hold},
		{"holds off", `{"hold": {"off": true}}`, &Config{Hold: &Hold{Off: true}}, def.Throttle, nil},
		{"a throttle of its own", `{"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}`,
			&Config{Throttle: own}, own, def.Hold},
		{"said on", `{"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1, "off": false}, "hold": {"off": false}}`,
			&Config{Throttle: own, Hold: &Hold{}}, own, &Hold{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parsed, err := ParseConfig([]byte(tt.json))
			require.NoError(t, err, "got %v, want nil", err)
			require.NoError(t, tt.goConfig.Validate(), "the Go config")
			for _, c := range []*Config{parsed, tt.goConfig} {
				in := c.InForce()
				assert.Equal(t, tt.throttle, in.Throttle, "got throttle %+v in force, want %+v", in.Throttle, tt.throttle)
				assert.Equal(t, tt.hold, in.Hold, "got hold %+v in force, want %+v", in.Hold, tt.hold)
			}
		})
	}
}

// InForce's copy is the caller's to read: resolving a switch neither
// edits the Config nor lets an edit of either reach the other.
func TestInForceIsACopy(t *testing.T) {
	t.Parallel()
	c := &Config{Rules: Default().Rules, Throttle: &Throttle{MaxTokens: 10, TokenRatio: 0.5}}
	in := c.InForce()
	assert.Nil(t, c.Hold, "got the Config's Hold set by InForce")
	in.Throttle.MaxTokens = 1
	in.Rules[0].Retry.MaxAttempts = 9
	assert.Equal(t, 10.0, c.Throttle.MaxTokens, "an edit of the copy's throttle reached the Config")
	assert.Equal(t, 3, c.Rules[0].Retry.MaxAttempts, "an edit of the copy's rule reached the Config")
	c.Throttle.TokenRatio = 1
	assert.Equal(t, 0.5, in.Throttle.TokenRatio, "an edit of the Config reached the copy")
	// Default's values are new each time, so one copy's edit is its own.
	a, b := (&Config{}).InForce(), (&Config{}).InForce()
	a.Throttle.MaxTokens = 1
	assert.Equal(t, 100.0, b.Throttle.MaxTokens, "two copies share the default throttle")
	assert.Nil(t, (*Config)(nil).InForce(), "a nil Config: got a copy, want nil")
}

// A switch that is off and set at once is an error naming both, in the
// words its author wrote.
func TestSwitchOffWithOtherFields(t *testing.T) {
	t.Parallel()
	parsed := []struct {
		name, json, want string
	}{
		{"maxTokens", `{"retryThrottling": {"off": true, "maxTokens": 10}}`,
			"policy: retryThrottling.off: true: turns it off, so it must not be set with maxTokens"},
		{"both figures", `{"retryThrottling": {"tokenRatio": 0.1, "off": true, "maxTokens": 10}}`,
			"policy: retryThrottling.off: true: turns it off, so it must not be set with maxTokens, tokenRatio"},
		{"a figure of 0", `{"retryThrottling": {"off": true, "tokenRatio": 0}}`,
			"policy: retryThrottling.off: true: turns it off, so it must not be set with tokenRatio"},
		{"off as a string", `{"retryThrottling": {"off": "true"}}`,
			`policy: retryThrottling.off: "true": must be true or false`},
		{"Off in other case", `{"retryThrottling": {"Off": true}}`,
			"policy: retryThrottling.Off: true: unknown field"},
		{"off false, figures left out", `{"retryThrottling": {"off": false}}`,
			"policy: retryThrottling.maxTokens: 0: must be in (0, 1000]"},
	}
	for _, tt := range parsed {
		t.Run("JSON, "+tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig([]byte(tt.json))
			assert.Nil(t, c, "got %+v, want nil", c)
			require.ErrorIs(t, err, ErrInvalid, "got %v, want ErrInvalid", err)
			assert.Equal(t, tt.want, err.Error(), "got %q, want %q", err, tt.want)
		})
	}
	built := []struct {
		name string
		t    *Throttle
		want string
	}{
		{"MaxTokens", &Throttle{Off: true, MaxTokens: 10},
			"policy: Throttle.Off: true: turns it off, so it must not be set with MaxTokens"},
		{"both figures", &Throttle{Off: true, MaxTokens: 10, TokenRatio: 0.1},
			"policy: Throttle.Off: true: turns it off, so it must not be set with MaxTokens, TokenRatio"},
		{"the zero Throttle", &Throttle{},
			"policy: Throttle.MaxTokens: 0: must be in (0, 1000]"},
	}
	for _, tt := range built {
		t.Run("Go, "+tt.name, func(t *testing.T) {
			t.Parallel()
			err := (&Config{Throttle: tt.t}).Validate()
			require.ErrorIs(t, err, ErrInvalid, "got %v, want ErrInvalid", err)
			assert.Equal(t, tt.want, err.Error(), "got %q, want %q", err, tt.want)
		})
	}
}
