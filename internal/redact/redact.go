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
// query or fragment, which may carry secrets. It is what retrytrace.LogHooks and
// the otel module record of a URL.
func URL(u *url.URL) string {
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
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
// no userinfo, query or fragment of a URL that net/url accepts or writes.
//
// A URL right after a double quote is read as a Go-quoted string, as a
// *url.Error, %q and JSON write it: the string ends at the closing quote,
// so the text after it (a *url.Error's cause) is kept. Any other URL is
// found by its "://", or by a scheme and a colon that a query or fragment
// follows with no space between (net/url writes "https:?k=v" for a URL
// with no host). Such a URL has no sure end: net/url writes a query as it
// was given, spaces, quotes and brackets included, so from its "?" or "#"
// on, the rest of s is left out. Losing that text is the price of never
// printing the rest of a query.
//
// Two texts can still mislead it: a URL put between double quotes by
// hand, unescaped, whose query holds a double quote followed by what may
// end a quoted string; and a bare URL with no "//" and a space before its
// query, which reads as words, as "http2: ...?" does.
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
			end, red = bareURL(s, start, i)
			ok = true
		case s[i] == ':':
			start = schemeStart(s, kept, i)
			end, red, ok = opaqueURL(s, start, i)
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
func quotedURL(s string, q int) (end int, red string, ok bool) {
	colon := schemeEnd(s, q+1)
	if colon < 0 {
		return 0, "", false
	}
	closing := closingQuote(s, q+1)
	if closing < 0 || !quoteEnds(s, closing+1) {
		return 0, "", false
	}
	hier := strings.HasPrefix(s[colon:], "://")
	if hier {
		// Read bare, this URL would go on past the quote into a query:
		// its quotes may be a bare URL's own, such as a host's.
		if e := bareEnd(s, colon+len("://")); e > closing && e < len(s) && (s[e] == '?' || s[e] == '#') {
			return 0, "", false
		}
	}
	raw, err := strconv.Unquote(s[q : closing+1])
	if err != nil {
		return 0, "", false
	}
	u, err := url.Parse(raw)
	switch {
	case err == nil && !secretParts(u):
		return closing + 1, s[q : closing+1], true
	case err == nil && hier && u.Host != "":
		return closing + 1, strconv.Quote(URL(u)), true
	case err != nil && !hier && !strings.ContainsAny(raw, "?#"):
		return 0, "", false // words after a word and a colon, not a URL
	}
	return closing + 1, strconv.Quote(schemeOnly(s[q+1:colon], hier)), true
}

// bareURL reads the URL whose scheme starts at s[start] and whose "://"
// is at s[sep]: it returns where its text ends in s and what to write for
// it. A bare URL ends at a space or a control character, which net/url
// never writes in a host or path, or at its query or fragment, whose own
// end is unknown: then the rest of s goes with it.
func bareURL(s string, start, sep int) (end int, red string) {
	end = bareEnd(s, sep+len("://"))
	tok := s[start:end]
	if end < len(s) && (s[end] == '?' || s[end] == '#') {
		end = len(s)
	}
	// Quotes, brackets and punctuation after a URL are more likely the
	// text's than the URL's own: kept as they are, outside it.
	trail := len(tok)
	for trail > sep+len("://")-start && strings.IndexByte("\"'`<>):;,.", tok[trail-1]) >= 0 {
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
	return end, schemeOnly(s[start:sep], true) + tail
}

// opaqueURL reads a URL with no "//" whose scheme starts at s[start] and
// ends at the colon s[colon], such as "https:?k=v" or "https:/p?k=v", which
// net/url writes for a URL with no host or with an Opaque. Only one with a
// query or fragment counts, and the rest of s goes with it; a "://" later
// in it is bareURL's to read.
func opaqueURL(s string, start, colon int) (end int, red string, ok bool) {
	if start == colon || schemeEnd(s, start) != colon {
		return 0, "", false
	}
	end = bareEnd(s, colon+1)
	if end == len(s) || s[end] != '?' && s[end] != '#' || strings.Contains(s[start:end], "://") {
		return 0, "", false
	}
	return len(s), s[start:end], true
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
