package policy

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateMaxExtraLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		x    float64
		want string // the whole message; "" for valid
	}{
		{"no cap", 0, ""},
		{"2%", 0.02, ""},
		{"smallest", math.SmallestNonzeroFloat64, ""},
		{"all", 1, ""},
		{"negative", -0.01, "policy: Rules[1].Hedge.MaxExtraLoad: -0.01: must be in [0, 1] (0 for no cap)"},
		{"negative zero", math.Copysign(0, -1), ""},
		{"above 1", 1.01, "policy: Rules[1].Hedge.MaxExtraLoad: 1.01: must be in [0, 1] (0 for no cap)"},
		{"percent", 2, "policy: Rules[1].Hedge.MaxExtraLoad: 2: must be in [0, 1] (0 for no cap)"},
		{"NaN", math.NaN(), "policy: Rules[1].Hedge.MaxExtraLoad: NaN: must be in [0, 1] (0 for no cap)"},
		{"+Inf", math.Inf(1), "policy: Rules[1].Hedge.MaxExtraLoad: +Inf: must be in [0, 1] (0 for no cap)"},
		{"-Inf", math.Inf(-1), "policy: Rules[1].Hedge.MaxExtraLoad: -Inf: must be in [0, 1] (0 for no cap)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := validConfig()
			c.Rules[1].Hedge.MaxExtraLoad = tt.x
			err := c.Validate()
			if tt.want == "" {
				assert.NoError(t, err, "got %v, want nil", err)
				return
			}
			require.Error(t, err, "got nil, want %q", tt.want)
			assert.Equal(t, tt.want, err.Error(), "got %q, want %q", err, tt.want)
		})
	}
	t.Run("a rule on its own", func(t *testing.T) {
		t.Parallel()
		r := &Rule{Hedge: &Hedge{MaxAttempts: 2, MaxExtraLoad: -1}}
		requireFieldError(t, r.Validate(), "Hedge.MaxExtraLoad", "-1")
	})
	t.Run("checked after the status codes", func(t *testing.T) {
		t.Parallel()
		c := validConfig()
		c.Rules[1].Hedge.MaxExtraLoad = 2
		c.Rules[1].Hedge.NonFatalStatusCodes = []int{600}
		requireFieldError(t, c.Validate(), "Rules[1].Hedge.NonFatalStatusCodes[0]", "600")
	})
}

func TestParseMaxExtraLoad(t *testing.T) {
	t.Parallel()
	hedge := func(fields string) string {
		return `{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 2` + fields + `}}]}`
	}
	tests := []struct {
		name, fields string
		want         float64
	}{
		{"absent", ``, 0},
		{"2%", `, "maxExtraLoad": 0.02`, 0.02},
		{"zero", `, "maxExtraLoad": 0`, 0},
		{"one", `, "maxExtraLoad": 1`, 1},
		{"exponent", `, "maxExtraLoad": 2e-2`, 0.02},
		{"null", `, "maxExtraLoad": null`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig([]byte(hedge(tt.fields)))
			require.NoError(t, err, "got %v, want nil", err)
			got := c.Rules[0].Hedge.MaxExtraLoad
			assert.Equal(t, tt.want, got, "got %v, want %v", got, tt.want)
		})
	}
	const p = "methodConfig[0].hedgingPolicy.maxExtraLoad"
	rejects := []struct {
		name, fields, value string
	}{
		{"negative", `, "maxExtraLoad": -0.5`, "-0.5"},
		{"above 1", `, "maxExtraLoad": 1.5`, "1.5"},
		{"percent as string", `, "maxExtraLoad": "2%"`, `"2%"`},
		{"repeated", `, "maxExtraLoad": 0.1, "maxExtraLoad": 0.2`, "0.2"},
	}
	for _, tt := range rejects {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig([]byte(hedge(tt.fields)))
			assert.Nil(t, c, "got %+v, want nil", c)
			requireFieldError(t, err, p, tt.value)
		})
	}
}
