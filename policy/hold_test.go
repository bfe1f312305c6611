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
		{"on, said so", `{"hold": {"off": false}}`, &Hold{}},
		{"off", `{"hold": {"off": true}}`, &Hold{Off: true}},
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
		{"off in other case", `{"hold": {"Off": true}}`, `policy: hold.Off: true: unknown field`},
		{"off as a string", `{"hold": {"off": "yes"}}`, `policy: hold.off: "yes": must be true or false`},
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

// Holds are on in Default and in a Config that says nothing of them, off
// in None and where a Config turns them off.
func TestHoldSwitch(t *testing.T) {
	t.Parallel()
	assert.NotNil(t, Default().Hold, "Default: got no Hold, want one")
	assert.Equal(t, &Hold{Off: true}, None().Hold, "None: got %+v, want holds off", None().Hold)
	for _, tt := range []struct {
		name string
		hold *Hold
		on   bool
	}{
		{"nil", nil, true},
		{"on", &Hold{}, true},
		{"off", &Hold{Off: true}, false},
	} {
		c := &Config{Hold: tt.hold}
		require.NoError(t, c.Validate(), tt.name)
		got := c.InForce().Hold
		assert.Equal(t, tt.on, got != nil, "%s: got %+v in force, want on=%v", tt.name, got, tt.on)
	}
	c := Default()
	c.Hold = nil
	assert.NotNil(t, Default().Hold, "got no Hold after clearing an earlier Default's, want one")
	assert.NoError(t, (&Config{Hold: &Hold{}}).Validate(), "a Config with only a Hold: got an error, want nil")
}
