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

// FuzzRedactURLForms plants a secret in every position that may hold one
// (a userinfo password, a query value, a fragment) of every form of URL
// that net/url parses: with a scheme and a host, scheme-relative, with a
// scheme and no host, and a path alone. Around the secret, the path and
// after the URL go characters the fuzzer chooses. Each URL that net/url
// accepts, with the secret where it was planted, is written into the
// texts a URL reaches a log in: a *url.Error, the same quoted once more,
// and the URL written bare after a word or a sign, as it was given, as
// URL.String writes it and as URL.Redacted does. The secret must never
// come out of RedactURLs.
func FuzzRedactURLForms(f *testing.F) {
	for _, odd := range []string{"", " ", `"`, "'", "`", "<", ">", `\`, `": `, "#", "?", "@", ":", "/", "//", "%22", "\t"} {
		for form := range uint8(4) {
			for where := range uint8(3) {
				f.Add(form, where, odd, odd, "/p", ": EOF")
			}
		}
	}
	f.Add(uint8(1), uint8(0), "", "", "/p", ": EOF") // //alice:SECRET@api.test/p
	f.Add(uint8(3), uint8(1), "", "", "", " failed") // ?k=SECRET
	f.Add(uint8(3), uint8(2), "", "", "p", "")       // p#SECRET
	f.Add(uint8(3), uint8(1), `" `, "", `p "`, "")   // p "?k=" SECRET: quoted, as any; bare, the limit
	f.Fuzz(func(t *testing.T, form, where uint8, before, after, path, suffix string) {
		planted := before + redactSecret + after
		var user, query, fragment string
		switch where % 3 {
		case 0:
			user = "alice:" + planted + "@"
		case 1:
			query = "?k=" + planted
		default:
			fragment = "#" + planted
		}
		var raw string
		switch form % 4 {
		case 0:
			raw = "https://" + user + "api.test" + path + query + fragment
		case 1:
			raw = "//" + user + "api.test" + path + query + fragment
		case 2:
			raw = "https:" + user + path + query + fragment // no authority: no userinfo
		default:
			raw = user + path + query + fragment
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Skip("not a URL net/url accepts")
		}
		// Logs keep the scheme, host and path: the secret must not have
		// landed there, nor in an opaque URL, which has no userinfo.
		if strings.Contains(u.Scheme+u.Host+u.Path+u.RawPath+u.Opaque, redactSecret) {
			t.Skip("the secret is not in the userinfo, query or fragment")
		}
		cause := errors.New(suffix)
		var texts []string
		for _, s := range []string{raw, u.String(), u.Redacted()} {
			texts = append(texts, urlError(s, cause), fmt.Sprintf("wrapped: %q", urlError(s, cause)))
			if spaceThenQuote(s) {
				// The one form RedactURLs documents it cannot read bare:
				// `p "?k=v" x` is a word and a quoted URL.
				continue
			}
			for _, prefix := range []string{"", "GET ", "request to ", "(", "<", "'", "`", "url=", "\n"} {
				texts = append(texts, prefix+s+suffix)
			}
		}
		for _, text := range texts {
			if got := redact.Text(text); strings.Contains(got, redactSecret) {
				t.Errorf("RedactURLs(%q) = %q: the secret got through", text, got)
			}
		}
	})
}

// spaceThenQuote reports whether the URL text s, before its query or
// fragment, begins with a double quote or holds a space or a control
// character and later a double quote: written bare, such a URL reads as
// words and a quoted string. net/url escapes both in a path, so only a URL
// as given, or an opaque one, can.
func spaceThenQuote(s string) bool {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	sp := strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f })
	return strings.HasPrefix(s, `"`) || sp >= 0 && strings.Contains(s[sp:], `"`)
}
