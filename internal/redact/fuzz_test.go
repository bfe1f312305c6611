package redact_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/retryhttp/retryhttp/internal/redact"
)

// redactSecret is what FuzzRedactURLs plants: letters and digits only, so
// that no quoting or escaping of it looks different.
const redactSecret = "Zq7SECRETx"

// FuzzRedactURLs plants a secret in a URL's query, fragment or userinfo,
// between characters the fuzzer chooses, keeps the URLs net/url accepts,
// writes each into the error texts a URL reaches a log in (a *url.Error,
// the same quoted once more, URL.String written bare by a base), and
// checks that the secret never comes out of RedactURLs.
func FuzzRedactURLs(f *testing.F) {
	for _, odd := range []string{"", " ", `"`, "'", "`", "<", ">", `\`, `": `, "#", "?", "@", ":", "%22", "\t"} {
		for where := range uint8(4) {
			f.Add(where, odd, odd, "/p", ": EOF")
		}
	}
	f.Add(uint8(0), `a"`, `" b`, "/it's", `": x`)
	f.Add(uint8(2), "al'ice:", "", "", " failed")
	f.Fuzz(func(t *testing.T, where uint8, before, after, path, suffix string) {
		var raw string
		switch planted := before + redactSecret + after; where % 4 {
		case 0:
			raw = "https://api.test" + path + "?" + planted
		case 1:
			raw = "https://api.test" + path + "#" + planted
		case 2:
			raw = "https://" + planted + "@api.test" + path
		default:
			raw = "https:" + path + "?" + planted // opaque, or no host
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Skip("not a URL net/url accepts")
		}
		// Logs keep the host and path: the secret must not have landed
		// there.
		if strings.Contains(u.Scheme+u.Host+u.Path+u.RawPath+u.Opaque, redactSecret) {
			t.Skip("the secret is not in the query, fragment or userinfo")
		}
		if strings.Contains(u.Opaque, " ") {
			// "https: ?k=v" reads as words, as "http2: ...?" does: the
			// one form RedactURLs leaves as it is.
			t.Skip("an opaque URL with a space")
		}
		cause := errors.New(suffix)
		var texts []string
		for _, s := range []string{raw, u.String(), u.Redacted()} {
			texts = append(texts, urlError(s, cause), fmt.Sprintf("wrapped: %q", urlError(s, cause)))
		}
		for _, prefix := range []string{"", "GET ", "request to ", "(", "<", "'", "`", "url=", "\n"} {
			texts = append(texts, prefix+u.String()+suffix, prefix+u.Redacted()+suffix)
		}
		for _, text := range texts {
			if got := redact.Text(text); strings.Contains(got, redactSecret) {
				t.Errorf("RedactURLs(%q) = %q: the secret got through", text, got)
			}
		}
	})
}
