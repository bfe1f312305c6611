package redact_test

import (
	"errors"
	"io"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/internal/redact"
)

// Every form of URL that net/url parses is cut down, not only those with
// a scheme: a scheme-relative URL's userinfo is userinfo, not a scheme,
// and a query or fragment goes wherever it stands.
func TestRedactURLsEveryForm(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"a quoted scheme-relative URL with userinfo and a query",
			urlError("//alice:SECRET@host/p?token=SECRET", io.EOF),
			`Get "//REDACTED:REDACTED@host/p": EOF`},
		{"a quoted scheme-relative URL with userinfo",
			urlError("//alice:SECRET@host/p", io.EOF),
			`Get "//REDACTED:REDACTED@host/p": EOF`},
		{"a quoted scheme-relative URL with a fragment",
			urlError("//host/p#SECRET", io.EOF),
			`Get "//host/p": EOF`},
		{"a quoted scheme-relative URL that does not parse",
			urlError("//alice:SE CRET@host/p", io.EOF),
			`Get "//REDACTED": EOF`},
		{"a quoted path with a query, as a client without a scheme quotes it",
			urlError("/p?token=SECRET", errors.New(`unsupported protocol scheme ""`)),
			`Get "/p": unsupported protocol scheme ""`},
		{"a quoted relative path with a fragment",
			urlError("p#SECRET", io.EOF),
			`Get "p": EOF`},
		{"a quoted query alone",
			urlError("?token=SECRET", io.EOF),
			`Get "": EOF`},
		{"a quoted path that does not parse",
			urlError("/%zz?token=SECRET", io.EOF),
			`Get "/%zz": EOF`},
		{"a bare scheme-relative URL with userinfo",
			"GET //alice:SECRET@host/p: EOF",
			"GET //REDACTED:REDACTED@host/p: EOF"},
		{"a bare scheme-relative URL after an equals sign",
			"url=//alice:SECRET@host/p, retrying",
			"url=//REDACTED:REDACTED@host/p, retrying"},
		{"a bare scheme-relative URL with userinfo and a query",
			"GET //alice:SECRET@host/p?token=SECRET: EOF",
			"GET //REDACTED:REDACTED@host/p"},
		{"a bare scheme-relative URL that does not parse",
			"GET //alice:SECRET@ho%zzst/p: EOF",
			"GET //REDACTED: EOF"},
		{"a bare path with a query",
			"GET /p?token=SECRET HTTP/1.1",
			"GET /p"},
		{"a bare query after a space",
			"GET ?token=SECRET: EOF",
			"GET "},
		{"a bare fragment after a space",
			"see #access_token=SECRET",
			"see "},
		{"an opaque URL with a space before its query",
			"GET https: ?token=SECRET: EOF",
			"GET https: "},
		{"a scheme-relative URL quoted within a quoted error",
			`wrapped: "Get \"//alice:SECRET@host/p?token=SECRET\": EOF"`,
			`wrapped: "Get \"//REDACTED:REDACTED@host/p"`},
		{"a comment's slashes, no URL",
			"dial tcp //comment: connection refused",
			"dial tcp //comment: connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := redact.Text(tc.text)
			assert.Equal(t, tc.want, got, "got %q, want %q", got, tc.want)
			assert.NotContains(t, got, "SECRET")
		})
	}
}

// RedactURL writes a URL with no scheme as net/url does, not as a URL
// with an empty scheme.
func TestRedactURLWithoutAScheme(t *testing.T) {
	for raw, want := range map[string]string{
		"//alice:SECRET@host/p?token=SECRET": "//REDACTED:REDACTED@host/p",
		"//host/p#SECRET":                    "//host/p",
		"/p?token=SECRET":                    "/p",
		"https://alice:SECRET@host/p?k=v":    "https://REDACTED:REDACTED@host/p",
	} {
		u, err := url.Parse(raw)
		require.NoError(t, err)
		assert.Equal(t, want, redact.URL(u), "RedactURL(%q)", raw)
	}
}
