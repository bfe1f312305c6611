// Package redact cuts secrets out of URLs before they are shown: in logs,
// spans and an operator's page, a URL keeps its scheme, host and path,
// never its userinfo, query or fragment.
package redact

import (
	"net/url"
	"strconv"
	"strings"
)

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
func Text(s string) string {
	var b strings.Builder
	kept := 0 // s[:kept] is written to b, redacted
	for i := 0; i < len(s); {
		start, end, red, ok := i, 0, "", false
		switch {
		case s[i] == '"':
			end, red, ok = quotedURL(s, i)
		case strings.HasPrefix(s[i:], "://"):
			start = schemeStart(s, kept, i)
			end, red = bareURL(s, start, i+len("://"))
			ok = true
		case strings.HasPrefix(s[i:], "//"):
			// Scheme-relative: whatever comes before is not its scheme,
			// and what follows may be userinfo, not a scheme of its own.
			end, red = bareURL(s, i, i+len("//"))
			ok = true
		case s[i] == '?' || s[i] == '#':
			end, ok = len(s), true
		}
		if !ok {
			i++
			continue
		}
		b.WriteString(s[kept:start])
		b.WriteString(red)
		kept, i = end, end
	}
	b.WriteString(s[kept:])
	return b.String()
}

// quotedURL reads the Go-quoted string that opens at s[q] when it holds a
// URL: it returns the end of the string in s and what to write for it.
// ok is false when the string holds no URL, is not a Go-quoted string, or
// may not be one (see quoteEnds): a URL in it is then read as bare.
//
// A quote glued to the word before it may be that word's own, a bare
// URL's ("https:\"?k=\" v", "p\"?k=\" v"), and then the query it opens
// goes on past the closing quote; or it may open a URL quoted within a
// quoted text (\"https://h/p?k=v\"), or a JSON value ("url":"..."). Its
// string is cut down all the same, but when it holds a query or a
// fragment, the rest of s goes with it. A quote that a text puts around a
// URL follows a space, as a *url.Error's does, and keeps what follows.
func quotedURL(s string, q int) (end int, red string, ok bool) {
	closing := closingQuote(s, q+1)
	if closing < 0 || !quoteEnds(s, closing+1) {
		return 0, "", false
	}
	red, ok = quotedRedacted(s, q, closing)
	if !ok {
		return 0, "", false
	}
	if q > 0 && s[q-1] > ' ' && s[q-1] != 0x7f && strings.ContainsAny(s[q:closing], "?#") {
		return len(s), red, true
	}
	return closing + 1, red, true
}

// quotedRedacted returns what to write for the Go-quoted string
// s[q:closing+1], or ok false when it holds no URL or may be a bare
// URL's own text.
func quotedRedacted(s string, q, closing int) (red string, ok bool) {
	colon := schemeEnd(s, q+1)
	hier := colon >= 0 && strings.HasPrefix(s[colon:], "://")
	rel := colon < 0 && strings.HasPrefix(s[q+1:], "//")
	if authority := authorityStart(s, q, colon, hier, rel); authority >= 0 {
		// Read bare, this URL would go on past the quote into a query:
		// its quotes may be a bare URL's own, such as a host's.
		if e := bareEnd(s, authority); e > closing && e < len(s) && (s[e] == '?' || s[e] == '#') {
			return "", false
		}
	}
	raw, err := strconv.Unquote(s[q : closing+1])
	if err != nil {
		return "", false
	}
	if colon < 0 && !rel && !pathLike(raw) {
		return "", false // words, such as a quoted error, not a URL
	}
	u, err := url.Parse(raw)
	switch {
	case err == nil && !secretParts(u):
		return s[q : closing+1], true
	case err == nil && (u.Host != "" || colon < 0):
		return strconv.Quote(URL(u)), true
	case err != nil && !hier && !rel && !strings.ContainsAny(raw, "?#"):
		return "", false // words after a word and a colon, not a URL
	}
	switch {
	case colon >= 0:
		red = schemeOnly(s[q+1:colon], hier)
	case rel:
		red = "//REDACTED"
	default:
		// A path that net/url refuses: with no "//", nothing before its
		// query or fragment can be userinfo.
		red = raw[:strings.IndexAny(raw, "?#")]
	}
	return strconv.Quote(red), true
}

// pathLike reports whether raw, a quoted string with no scheme, may be a
// URL of a path alone ("/p?k=v", "p#f", "?k=v"), as net/url writes one:
// with no space, control character or double quote before its query or
// fragment. Anything else is words, such as an error quoted whole with a
// URL quoted inside it, which is better read bare.
func pathLike(raw string) bool {
	path, _, _ := strings.Cut(raw, "?")
	path, _, _ = strings.Cut(path, "#")
	return strings.IndexFunc(path, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '"' }) < 0
}

// authorityStart returns where the host (or userinfo) of the quoted URL
// at s[q] starts, or -1 if it has none: after "scheme://" when hier, after
// "//" when rel.
func authorityStart(s string, q, colon int, hier, rel bool) int {
	switch {
	case hier:
		return colon + len("://")
	case rel:
		return q + 1 + len("//")
	}
	return -1
}

// bareURL reads the URL that starts at s[start] and whose host (or
// userinfo) starts at s[authority], after its "//": it returns where its
// text ends in s and what to write for it. A bare URL ends at a space or a
// control character, which net/url never writes in a host or path, or at
// its query or fragment, whose own end is unknown: then the rest of s
// goes with it.
func bareURL(s string, start, authority int) (end int, red string) {
	end = bareEnd(s, authority)
	tok := s[start:end]
	if end < len(s) && (s[end] == '?' || s[end] == '#') {
		end = len(s)
	}
	// Quotes, brackets and punctuation after a URL are more likely the
	// text's than the URL's own: kept as they are, outside it.
	trail := len(tok)
	for trail > authority-start && strings.IndexByte("\"'`<>):;,.", tok[trail-1]) >= 0 {
		trail--
	}
	tok, tail := tok[:trail], tok[trail:]
	u, err := url.Parse(tok)
	switch {
	case err == nil && u.User == nil:
		// No query or fragment either: nothing to hide.
		return end, tok + tail
	case err == nil && u.Host != "":
		return end, URL(u) + tail
	}
	return end, s[start:authority] + "REDACTED" + tail
}

// bareEnd returns the index of the first byte from s[i] on that ends a
// bare URL's scheme, host and path: a query, a fragment, a space or a
// control character; len(s) if none does.
func bareEnd(s string, i int) int {
	for ; i < len(s); i++ {
		if c := s[i]; c == '?' || c == '#' || c <= ' ' || c == 0x7f {
			return i
		}
	}
	return len(s)
}

// closingQuote returns the index of the double quote that closes a
// Go-quoted string whose text starts at s[i], or -1 if none does. A
// control character never appears in one: %q escapes it.
func closingQuote(s string, i int) int {
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case c == '"':
			return i
		case c < ' ' || c == 0x7f:
			return -1
		}
	}
	return -1
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

// schemeStart returns the start of the scheme that ends at s[sep], looking
// no further back than from.
func schemeStart(s string, from, sep int) int {
	start := sep
	for start > from && schemeByte(s[start-1]) {
		start--
	}
	return start
}

// schemeEnd returns the index of the colon that ends a scheme starting at
// s[i], or -1 if s[i:] does not start with a scheme and a colon.
func schemeEnd(s string, i int) int {
	if i >= len(s) || !('a' <= s[i]|0x20 && s[i]|0x20 <= 'z') {
		return -1
	}
	for j := i; j < len(s); j++ {
		switch {
		case s[j] == ':':
			return j
		case !schemeByte(s[j]):
			return -1
		}
	}
	return -1
}

// schemeByte reports whether c may be part of a URL scheme.
func schemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}
