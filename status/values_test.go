package status

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/internal/redact"
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
	long := strings.Repeat("p", 2*redact.MaxText)
	// A quoted URL whose long query redaction leaves out, so that what
	// is near the cut comes within the 256 bytes shown.
	lead := `Get "https://api.test/?q=` + strings.Repeat("q", redact.MaxText-212) + `": `
	fill := func(n int) string { return strings.Repeat("x", redact.MaxText-len(lead)-n) }
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

// Thousandths are written as JSON numbers with up to three decimals and
// no trailing zeros, whatever their sign and size.
func TestThousandths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"}, {1, "0.001"}, {10, "0.01"}, {100, "0.1"}, {1050, "1.05"}, {4500, "4.5"}, {10000, "10"},
		{-1, "-0.001"}, {-4500, "-4.5"}, {1e15, "1000000000000"},
		{math.MaxInt64, "9223372036854775.807"}, {math.MinInt64, "-9223372036854775.808"},
	}
	for _, tt := range tests {
		got := appendThousandths(nil, tt.n)
		assert.Equal(t, tt.want, string(got), "%d", tt.n)
		var v float64
		assert.NoError(t, json.Unmarshal(got, &v), "%s is no JSON number", got)
	}
}

// A duration is milliseconds to the microsecond in JSON, and reads as a
// person reads it in HTML.
func TestMillis(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d          time.Duration
		json, html string
	}{
		{0, "0", "0s"},
		{1500 * time.Nanosecond, "0.002", "2µs"},
		{850 * time.Microsecond, "0.85", "850µs"},
		{12345 * time.Microsecond, "12.345", "12.3ms"},
		{29501 * time.Millisecond, "29501", "29.5s"},
		{125 * time.Second, "125000", "2m5s"},
		{-time.Second, "-1000", "-1s"},
		{math.MaxInt64, "9223372036854.775", "2562047h47m16.854775807s"}, // Round saturates
	}
	for _, tt := range tests {
		got, err := millis(tt.d).MarshalJSON()
		require.NoError(t, err)
		assert.Equal(t, tt.json, string(got), "%v", tt.d)
		assert.Equal(t, tt.html, millis(tt.d).String(), "%v", tt.d)
	}
}
