package redact

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// perByte bounds the work a text costs, per byte of it: the loop's pass,
// the scans for closing quotes, schemes, paths and a bare URL's end (each
// of which reads a byte once), and the full reads of quoted strings, up
// to maxRefused+1 for each closing quote, over ranges that meet only at
// their ends (see reader).
const perByte = 8 + 2*(maxRefused+1)

// repeatTo repeats unit until it is at least n bytes long.
func repeatTo(unit string, n int) string {
	return strings.Repeat(unit, (n+len(unit)-1)/len(unit))
}

// hostileTexts are texts a server can make a client's error hold, n bytes
// or a little more each, shaped to make a reader that goes back over its
// text go back as far as it can.
func hostileTexts(n int) map[string]string {
	quoted := fmt.Sprintf("%q", repeatTo(`"`, n/2))
	return map[string]string{
		"quotes, as %q writes them": quoted,
		"a status line of quotes, as net/http quotes it": "net/http: HTTP/1.x transport connection broken: " +
			"malformed HTTP status code " + quoted,
		"quotes quoted three times":   fmt.Sprintf("%q", fmt.Sprintf("%q", fmt.Sprintf("%q", repeatTo(`"`, n/8)))),
		"an unclosed quote of quotes": quoted[:len(quoted)-1],
		"slashes":                     repeatTo("//", n),
		"slashes and spaces":          repeatTo("// ", n),
		"question marks after quotes": repeatTo(`"?`, n),
		"quotes and %22":              repeatTo(`"%22`, n),
		"schemes":                     repeatTo("http://", n),
		"quoted schemes":              repeatTo(`"http://`, n),
		"quoted URLs, no space":       repeatTo(`"https://a",`, n),
		"quoted userinfo, no space":   repeatTo(`"//u@a",`, n),
		"backslashes":                 `"` + repeatTo(`\\`, n) + `"`,
		"control characters":          repeatTo("\"\x01", n),
		"letters":                     repeatTo(`"aaaaaaa`, n),
		// Strings that close at one quote, each read in full and refused.
		"URLs in a string that does not unquote":  `"` + repeatTo(`\"http://a `, n) + `\q"`,
		"paths in a string that does not unquote": `"` + repeatTo(`\"/p?`, n) + `\q"`,
		"hosts in a string that does not unquote": `"` + repeatTo(`\"//a `, n) + `\q"`,
		"schemes before a control character":      `"` + repeatTo(`\"a:`, n) + `\x01"`,
		"words before a control character":        `"` + repeatTo(`\"%zz `, n) + `\x01"`,
	}
}

// Text reads a text in time linear in its length, whatever a server put
// in it: its work, the bytes it looks at, stays within perByte times the
// text's length, up to 1 MiB. Smaller texts come first, so that a reader
// whose work grows with the square of the text fails fast.
func TestTextWorkIsLinear(t *testing.T) {
	for _, n := range []int{1 << 10, 32 << 10, 1 << 20} {
		for name, s := range hostileTexts(n) {
			r := newReader(s)
			r.text()
			require.LessOrEqual(t, r.work, perByte*len(s), "%s, %d bytes: got work %d, want at most %d per byte",
				name, len(s), r.work, perByte)
		}
	}
}

// Of the quoted strings that end at one closing quote (each escaped
// quote in a quoted string opens one), maxRefused are read in full and
// refused; the rest are read bare, which keeps less of a URL but no more
// of its secrets. Here each "a:b ..." string fails to parse (it holds a
// control character), and so does the URL's: read in full, it is cut to
// its scheme; read bare, it ends at the space and keeps its host.
func TestRefusedStringsAreReadBare(t *testing.T) {
	const url = `\"https://u:SECRET@h/p\": \x01": EOF`
	tests := []struct {
		refusals int
		want     string
	}{
		{0, `\"https://REDACTED": EOF`},
		{maxRefused - 1, `\"https://REDACTED": EOF`},
		{maxRefused, `\"https://REDACTED:REDACTED@h/p%5C": \x01": EOF`},
		{3 * maxRefused, `\"https://REDACTED:REDACTED@h/p%5C": \x01": EOF`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.refusals), func(t *testing.T) {
			words := `x "` + strings.Repeat(`\"a:b `, tt.refusals)
			got := Text(words + url)
			assert.Equal(t, words+tt.want, got)
		})
	}
}

// Text reads no more of a text than its first MaxText bytes and one, and
// returns at most MaxText bytes, whatever the text: the work of a failure
// is bounded, however long the text a server made.
func TestTextReadsAtMostMaxText(t *testing.T) {
	for name, s := range hostileTexts(1 << 20) {
		got := Text(s)
		assert.LessOrEqual(t, len(got), MaxText, "%s: got %d bytes", name, len(got))
		assert.True(t, got == Text(s[:MaxText+1]), "%s: what Text returns depends on bytes past MaxText+1", name)
		assert.True(t, strings.HasSuffix(got, shortened), "%s: got a text ending %q", name, got[max(len(got)-20, 0):])
	}
}
