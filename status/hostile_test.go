package status_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/status"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unsafeRune reports why r has no place in the page's text, or "": a
// control character other than white space, which HTML calls a parse
// error and a terminal may obey; a bidirectional formatting character,
// which reorders the text around it (a host shown as another); a
// noncharacter, a parse error too.
func unsafeRune(r rune) string {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return ""
	case unicode.IsControl(r):
		return "a control character"
	case unicode.Is(unicode.Bidi_Control, r):
		return "a bidirectional formatting character"
	case unicode.Is(unicode.Noncharacter_Code_Point, r):
		return "a noncharacter"
	}
	return ""
}

// Texts that a server or a caller makes (a host name a redirect names,
// a base's error, a rule's pattern) reach the page as characters that
// read as they are: each answer is UTF-8 with no control character, no
// bidirectional override and no noncharacter, whatever the texts held,
// and the JSON still decodes.
func TestShowsHostileTextsSafely(t *testing.T) {
	t.Parallel()
	const hostile = "\x01\x1b[31m\x7f\u0085\u202egnp.exe\u202c\u2066\u200f\ufffe"
	fail := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return nil, errors.New("dial tcp: lookup " + req.URL.Host + ": no such host " + hostile)
	})
	cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{Path: "/" + hostile}}}}}
	tr := &retryhttp.Transport{Base: fail, Policy: cfg}
	// url.Parse takes any byte above 0x7f in a host, as a redirect's
	// Location may name it; a URL made by hand takes any byte at all.
	parsed, err := url.Parse("https://\u202egnp.exe.test/v1")
	require.NoError(t, err)
	for _, u := range []*url.URL{parsed, {Scheme: "https", Host: "api.test" + hostile, Path: "/v1/" + hostile}} {
		_, err := tr.RoundTrip(&http.Request{Method: "GET", URL: u, Header: http.Header{}})
		require.Error(t, err)
	}
	require.Len(t, tr.Stats().Failures, 2)

	for _, target := range []string{"/", "/?format=json"} {
		body := serve(status.Handler(tr), http.MethodGet, target).Body.String()
		require.True(t, utf8.ValidString(body), "%s: not UTF-8", target)
		for i, r := range body {
			if why := unsafeRune(r); why != "" {
				assert.Failf(t, "unsafe text", "%s: %s, %U, at %q", target, why, r, body[max(i-40, 0):i])
			}
		}
		if target != "/" {
			var p pageJSON
			require.NoError(t, json.NewDecoder(strings.NewReader(body)).Decode(&p))
			require.Len(t, p.Failures, 2)
			assert.Contains(t, p.Failures[0].Err, "no such host")
		}
	}
}
