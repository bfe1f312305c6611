package redact_test

import (
	"errors"
	"fmt"
	"io"
	"net/url"
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
