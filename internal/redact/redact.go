// Package redact cuts secrets out of URLs before they are shown: in logs,
// spans and an operator's page, a URL keeps its scheme, host and path,
// never its userinfo, query or fragment.
package redact

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// MaxText is the most of a text that [Text] reads, and the most it
// returns, in bytes: 8 KiB. That holds a *url.Error whole for a URL of a
// few KiB (nginx and Apache refuse a request line past 8 KiB), and
// is as much as a log line or a span's attribute is worth. A server's answer may be
// far longer (net/http reads a header section of up to 10 MB, and quotes
// a malformed status line whole in its error), and reading it all would
// cost memory and time for each failure.
const MaxText = 8 << 10

// shortened ends a text that Text shortened.
const shortened = " …"

// URL returns u as logs and traces may show it: its scheme, host and
// path, its userinfo (if any) replaced by "REDACTED:REDACTED", and no
// query or fragment, which may carry secrets. A URL with no scheme is
// written as net/url writes it, "//host/path", or its path alone when it
// has no host either. It is what retrytrace.LogHooks and the otel module record of
// a URL.
func URL(u *url.URL) string {
	var b strings.Builder
	switch {
	case u.Scheme != "":
		b.WriteString(u.Scheme)
		b.WriteString("://")
	case u.Host != "" || u.User != nil:
		b.WriteString("//")
	}
	if u.User != nil {
		b.WriteString("REDACTED:REDACTED@")
	}
	b.WriteString(u.Host)
	b.WriteString(u.EscapedPath())
	return b.String()
}

// Text returns s with every URL in it cut down as [URL] does,
// or to its scheme alone when it does not parse: for error texts, which
// quote URLs (a *url.Error does, and so may any base transport). It keeps
// no userinfo, query or fragment of a URL in any form that net/url
// accepts or writes: with a scheme ("https://h/p", "https:p?q"), scheme-
// relative ("//alice:pw@h/p"), or a path alone ("/p?q", "p#f").
//
// A URL right after a double quote is read as a Go-quoted string, as a
// *url.Error, %q and JSON write it: the string ends at the closing quote,
// so the text after it (a *url.Error's cause) is kept. Outside quotes, a
// URL with userinfo is found by its "//", with or without a scheme before
// it; it ends at a space or a control character, which net/url never
// writes in a host or path. A query or fragment has no sure end: net/url
// writes one as it was given, spaces, quotes and brackets included. So
// outside quotes, every "?" and "#" is taken for the start of one, with
// whatever word it follows as its path, and the rest of s is left out.
// Losing that text, even when it was only a question, is the price of
// never printing the rest of a query.
//
// Two texts can still mislead it, both where a double quote reads as one
// around a URL: a URL put between double quotes by hand, unescaped, whose
// query holds a double quote followed by what may end a quoted string; and
// a URL written bare as it was given, not as net/url writes it, that
// begins with a double quote, or holds a space and then a double quote,
// before its query (`p "?k=v" x` reads as a word and a quoted URL).
// net/url escapes both in a path.
//
// Text takes time linear in what it reads, whatever that holds. A quote
// inside a quoted string (\"...\") opens a string that ends where the
// outer one does; of the strings that end at one quote, at most four are
// unquoted and parsed in full and refused as URLs (as a string that does
// not unquote is), and the rest are read bare, as a refused string is:
// that keeps less of a URL in them, and hides its secrets as it does
// those of any bare URL.
//
// Text reads at most MaxText bytes of s and returns at most MaxText
// bytes. A longer s is read up to the last space or control character in
// its first MaxText bytes, where a bare URL ends, so that no URL is read
// split: its start alone may read as a URL with nothing to hide
// ("https://alice:" is a host and an empty port, where
// "https://alice:pw@host" has a userinfo). A quoted URL whose closing
// quote lies past that point is read bare, which keeps less of it. A text
// shortened, or whose result would be longer than MaxText, ends in " …".
func Text(s string) string {
	head := s
	if len(s) > MaxText {
		head = s[:lastBreak(s[:MaxText+1])]
	}
	out := newReader(head).text()
	if len(head) == len(s) && len(out) <= MaxText {
		return out
	}
	return prefix(out, MaxText-len(shortened)) + shortened
}

// lastBreak returns the index of the last space or control character in
// s, or 0 if none.
func lastBreak(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] <= ' ' || s[i] == 0x7f {
			return i
		}
	}
	return 0
}

// prefix returns the longest prefix of s of at most n bytes that ends at
// a character boundary.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// authorityStart returns where the host (or userinfo) of the quoted URL
// at s[q] starts, or -1 if it has none: after "scheme://" when hier, after
// "//" when rel.
func authorityStart(q, colon int, hier, rel bool) int {
	switch {
	case hier:
		return colon + len("://")
	case rel:
		return q + 1 + len("//")
	}
	return -1
}

// stops reports whether c ends a bare URL's scheme, host and path: it
// starts a query or a fragment, or it is a space or a control character.
func stops(c byte) bool {
	return c == '?' || c == '#' || c <= ' ' || c == 0x7f
}

// quoteEnds reports whether s[i] may follow a quoted URL that the text
// quoted, not a bare URL's own quote: the end, a space or a control
// character, or punctuation such as the colon of a *url.Error. A host may
// hold a quote; a host's next byte is rarely one of these, and when it is,
// quotedURL's look past the quote catches a query that follows.
func quoteEnds(s string, i int) bool {
	return i == len(s) || s[i] <= ' ' || strings.IndexByte(":,;)]}", s[i]) >= 0
}

// secretParts reports whether u has a part that URL leaves out
// because it may be secret.
func secretParts(u *url.URL) bool {
	return u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.RawFragment != ""
}

// schemeOnly is what is written for a URL with the given scheme that
// cannot be cut down more finely.
func schemeOnly(scheme string, hier bool) string {
	if hier {
		return scheme + "://REDACTED"
	}
	return scheme + ":REDACTED"
}

// schemeByte reports whether c may be part of a URL scheme.
func schemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}
