package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseHold(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		want  *Hold
	}{
		{"on", `{"hold": {}}`, &Hold{}},
		{"on, with space", `{"hold": { }}`, &Hold{}},
		{"null", `{"hold": null}`, nil},
		{"absent", `{}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig([]byte(tt.input))
			require.NoError(t, err, "got %v, want nil", err)
			assert.Equal(t, tt.want, c.Hold, "got %+v, want %+v", c.Hold, tt.want)
		})
	}
}

func TestParseHoldRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, input, want string
	}{
		{"unknown key", `{"hold": {"maxWait": "1s"}}`, `policy: hold.maxWait: "1s": unknown field`},
		{"a later unknown key", `{"hold": {}, "methodConfig": [], "hold2": 1}`, `policy: hold2: 1: unknown field`},
		{"true", `{"hold": true}`, `policy: hold: true: must be an object`},
		{"array", `{"hold": []}`, `policy: hold: []: must be an object`},
		{"repeated", `{"hold": {}, "hold": {}}`, `policy: hold: {}: repeated field`},
		{"in other case", `{"Hold": {}}`, `policy: Hold: {}: unknown field`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig([]byte(tt.input))
			assert.Nil(t, c, "got %+v, want nil", c)
			require.ErrorIs(t, err, ErrInvalid, "got %v, want an error matching ErrInvalid", err)
			assert.Equal(t, tt.want, err.Error(), "got %q, want %q", err, tt.want)
		})
	}
}

// Holds are on in Default, off in None and in a Config built without one.
func TestHoldSwitch(t *testing.T) {
	t.Parallel()
	assert.NotNil(t, Default().Hold, "Default: got no Hold, want one")
	assert.Nil(t, None().Hold, "None: got %+v, want nil", None().Hold)
	c := Default()
	c.Hold = nil
	assert.NotNil(t, Default().Hold, "got no Hold after clearing an earlier Default's, want one")
	assert.NoError(t, (&Config{Hold: &Hold{}}).Validate(), "a Config with only a Hold: got an error, want nil")
}
