package status

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// clip keeps a text of up to 256 bytes, and cuts a longer one at a
// character boundary, marking the cut.
func TestClip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"short", "api.example.com", "api.example.com"},
		{"at the bound", strings.Repeat("x", maxText), strings.Repeat("x", maxText)},
		{"past it", strings.Repeat("x", maxText+1), strings.Repeat("x", maxText-len(mark)) + mark},
		{"a character across the cut", strings.Repeat("x", maxText-len(mark)-1) + "é" + strings.Repeat("x", 10),
			strings.Repeat("x", maxText-len(mark)-1) + mark},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := clip(tt.in)
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, len(got), maxText)
			assert.True(t, utf8.ValidString(got) || !utf8.ValidString(tt.in), "cut inside a character: %q", got)
		})
	}
}

// An error's text shows no secret part of a URL, however long the text
// and wherever the cut before redaction falls: in a URL's userinfo, in
// its query, or inside a quoted URL whose quote closes past it. Where a
// secret starts before the cut, its first letters are what must not
// show.
func TestErrText(t *testing.T) {
	t.Parallel()
	const secret = "hunter2"
	long := strings.Repeat("p", 2*maxRedact)
	// A quoted URL whose long query redaction leaves out, so that what
	// is near the cut comes within the 256 bytes shown.
	lead := `Get "https://api.test/?q=` + strings.Repeat("q", 300) + `": `
	fill := func(n int) string { return strings.Repeat("x", maxRedact-len(lead)-n) }
	tests := []struct {
		name, in, want string
	}{
		{"short, quoted", `Get "https://alice:` + secret + `@api.test/v1?k=` + secret + `": EOF`,
			`Get "https://REDACTED:REDACTED@api.test/v1": EOF`},
		{"query past the cut", "Get https://api.test/" + long + "?api_key=" + secret, ""},
		{"query across the cut", lead + fill(30) + " https://api.test/p?api_key=" + secret + long, ""},
		{"userinfo across the cut", lead + fill(15) + " https://alice:" + secret + "@api.test/" + long, ""},
		{"a user across the cut", lead + fill(13) + " https://alice@api.test/" + long, ""},
		{"quote closing past the cut", lead + fill(20) + ` "https://alice:` + secret + `@api.test/` + long + `": EOF`, ""},
		{"a query before a long text", `Get "https://api.test/v1?k=` + secret + `": ` + long, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errText(tt.in)
			assert.NotContains(t, got, secret[:4], "a secret, or the part of it before the cut")
			assert.NotContains(t, got, "api_k")
			assert.NotContains(t, got, "?q=")
			assert.NotContains(t, got, "alic", "a userinfo's user, or the part of it before the cut")
			assert.LessOrEqual(t, len(got), maxText)
			if tt.want != "" {
				assert.Equal(t, tt.want, got)
			}
			if len(tt.in) > maxText {
				assert.True(t, strings.HasSuffix(got, mark) || len(got) < len(tt.in), "got %q", got)
			}
		})
	}
}
