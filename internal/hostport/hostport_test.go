package hostport

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDefault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scheme, want string
	}{
		{"http", "80"},
		{"https", "443"},
		{"HTTP", "80"},
		{"HtTpS", "443"},
		{"", ""},
		{"ftp", ""},
		{"ws", ""},
		{"wss", ""},
		{"http ", ""},
		{"httpss", ""},
		{"htt", ""},
	}
	for _, tt := range tests {
		t.Run(tt.scheme, func(t *testing.T) {
			t.Parallel()
			got := Default(tt.scheme)
			assert.Equal(t, tt.want, got, "Default(%q): got %q, want %q", tt.scheme, got, tt.want)
		})
	}
}
