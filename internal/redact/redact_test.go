package redact_test

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/retryhttp/retryhttp/internal/redact"
	"github.com/stretchr/testify/assert"
)

// urlError is the text net/http's Client gives a failed request: the URL
// Go-quoted (%q), then the cause.
func urlError(rawURL string, cause error) string {
	return (&url.Error{Op: "Get", URL: rawURL, Err: cause}).Error()
}

func TestRedactURLs(t *testing.T) {
	refused := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	cases := []struct{ name, text, want string }{
		{"the cause after a quoted URL survives",
			urlError("https://h/p", refused),
			`Get "https://h/p": dial tcp 127.0.0.1:1: connect: connection refused`},
		{"a quoted query goes, its cause stays",
			urlError("https://h/p?api_key=SECRET", refused),
			`Get "https://h/p": dial tcp 127.0.0.1:1: connect: connection refused`},
		{"a quoted query holding a quote",
			urlError(`https://h/p?q=a"b&api_key=SECRET`, io.EOF),
			`Get "https://h/p": EOF`},
		{"a quoted query holding an apostrophe",
			urlError("https://h/p?q='a'&api_key=SECRET", io.EOF),
			`Get "https://h/p": EOF`},
		{"a quoted query holding a backtick and brackets",
			urlError("https://h/p?q=`<a>`&api_key=SECRET", io.EOF),
			`Get "https://h/p": EOF`},
		{"a quoted fragment",
			urlError("https://h/p#access_token=SECRET", io.EOF),
			`Get "https://h/p": EOF`},
		{"quoted userinfo",
			urlError("https://bob:SECRET@h/p?k=v", io.EOF),
			`Get "https://REDACTED:REDACTED@h/p": EOF`},
		{"a quoted host holding a quote",
			urlError(`https://a"b/p?api_key=SECRET`, io.EOF),
			`Get "https://a\"b/p": EOF`},
		{"a quoted URL that does not parse",
			urlError("https://h/%zz?api_key=SECRET", io.EOF),
			`Get "https://REDACTED": EOF`},
		{"a quoted URL whose quotes never close",
			`Get "https://h/p?api_key=SECRET`,
			`Get "https://h/p`},
		{"a quoted URL within a quoted error",
			fmt.Sprintf("wrapped: %q", urlError(`https://h/p?q="&api_key=SECRET`, io.EOF)),
			`wrapped: "Get \"https://h/p"`},
		{"a quoted string that is no URL",
			`malformed MIME header: missing colon: "Foo bar"`,
			`malformed MIME header: missing colon: "Foo bar"`},
		{"a bare URL with no query",
			"request to https://h/p failed: EOF",
			"request to https://h/p failed: EOF"},
		{"a bare query with a space: the rest may be query",
			"request to https://h/p?q=a b&api_key=SECRET failed: EOF",
			"request to https://h/p"},
		{"a bare query with a quote",
			`GET https://h/p?q="a"&api_key=SECRET: EOF`,
			"GET https://h/p"},
		{"a bare query in angle brackets",
			"see <https://h/p?q=<a>&api_key=SECRET>",
			"see <https://h/p"},
		{"a bare fragment",
			"GET https://h/p#x y&api_key=SECRET: EOF",
			"GET https://h/p"},
		{"bare userinfo holding an apostrophe",
			"GET https://al'ice:SECRET@h/p: EOF",
			"GET https://REDACTED:REDACTED@h/p: EOF"},
		{"bare userinfo in parentheses",
			"(https://bob:SECRET@h/p)",
			"(https://REDACTED:REDACTED@h/p)"},
		{"a bare host holding a quote",
			`GET https://a"b/p?api_key=SECRET: EOF`,
			`GET https://a"b/p`},
		{"a bare URL that does not parse",
			"GET h://%zz/p: EOF",
			"GET h://REDACTED: EOF"},
		{"a client's timeout",
			`Get "https://h/p?k=v": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
			`Get "https://h/p": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`},
		{"words and addresses after colons",
			`Get "https://h/p": proxyconnect tcp: dial tcp [::1]:8080: connect: connection refused; debug=""`,
			`Get "https://h/p": proxyconnect tcp: dial tcp [::1]:8080: connect: connection refused; debug=""`},
		{"a bare URL with no host",
			"GET https:?api_key=SECRET: EOF",
			"GET https:"},
		{"a quoted URL with no host",
			urlError("https:/p?api_key=SECRET", io.EOF),
			`Get "https:REDACTED": EOF`},
		{"no URL",
			"dial tcp 127.0.0.1:1: connect: connection refused",
			"dial tcp 127.0.0.1:1: connect: connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := redact.Text(tc.text)
			assert.Equal(t, tc.want, got, "got %q, want %q", got, tc.want)
			assert.NotContains(t, got, "SECRET")
		})
	}
}

// Text reads at most MaxText bytes of a text, back to the last space
// before them, so that no URL is read split, and says so; what it
// returns is at most MaxText bytes, even when cutting URLs down made the
// text longer. No secret shows, wherever the text ends: inside a URL's
// userinfo, inside its query, or inside a quoted URL whose quote closes
// past it. Where a secret starts before that point, its first letters are
// what must not show.
func TestTextLongTexts(t *testing.T) {
	const secret = "1234567"
	// upTo fills text with x's, then a space, up to n bytes before
	// MaxText.
	upTo := func(text string, n int) string {
		return text + strings.Repeat("x", redact.MaxText-len(text)-n-1) + " "
	}
	long := strings.Repeat("p", 2*redact.MaxText)
	lead := `Get "https://api.test/p": EOF;`
	tests := []struct{ name, in, want string }{
		{"at the bound", upTo(lead, 1) + "x", upTo(lead, 1) + "x"},
		{"one past it", upTo(lead, 10) + strings.Repeat("x", 11), strings.TrimSuffix(upTo(lead, 10), " ") + " …"},
		{"no space", strings.Repeat("x", redact.MaxText+1), " …"},
		{"a query past the end", "Get https://api.test/" + long + "?api_key=" + secret, "Get …"},
		{"a query across the end", upTo(lead, 20) + "https://api.test/p?api_key=" + secret + long, ""},
		{"userinfo across the end", upTo(lead, 18) + "https://alice:" + secret + "@api.test/" + long, ""},
		{"a user across the end", upTo(lead, 13) + "https://alice@api.test/" + long, ""},
		{"a quote closing past the end", upTo(lead, 20) + `"https://alice:` + secret + `@api.test/` + long + `": EOF`, ""},
		{"a longer text once cut down", strings.Repeat("//alice@h ", redact.MaxText/10), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := redact.Text(tt.in)
			if tt.want != "" {
				assert.True(t, got == tt.want, "got %d bytes, ending %q; want %d, ending %q",
					len(got), tail(got), len(tt.want), tail(tt.want))
			}
			assert.LessOrEqual(t, len(got), redact.MaxText)
			assert.NotContains(t, got, secret[:4], "a secret, or the part of it before the end")
			assert.NotContains(t, got, "alic", "a userinfo's user, or the part of it before the end")
			assert.NotContains(t, got, "api_k")
			if len(tt.in) > redact.MaxText || strings.Contains(tt.name, "cut down") {
				assert.True(t, strings.HasSuffix(got, " …"), "got a text ending %q", tail(got))
			}
		})
	}
}

// tail is the end of a long text, as a test shows it.
func tail(s string) string { return s[max(len(s)-60, 0):] }
