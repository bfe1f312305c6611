package redact

import (
	"net/url"
	"strconv"
	"strings"
)

// maxRefused is how many quoted strings ending at the same closing quote
// are read in full (unquoted and parsed) and refused as URLs before the
// rest that end there are read bare, as any refused string is (see
// Text). Quotes inside a quoted string are escaped, and each opens a
// string that ends where the outer one does. In a text that %q wrote,
// each such string unquotes, and most that hold no URL are refused from
// their first bytes (pathLike): a full read refuses only one that fails
// to parse and holds no "//", query or fragment, such as "a:b" followed
// by a control character or a bad escape.
const maxRefused = 4

// reader reads one text for Text, from its start to its end, in time
// linear in the text's length: each byte is looked at a bounded number
// of times, whatever the text holds.
//
//   - The loop in text passes each byte once. A bare URL (schemeStart,
//     bareURL) reads from the end of what was written before it to its
//     own end, where the loop goes on: no byte is read for two.
//   - Each double quote opens a quoted string that may hold a URL. A
//     quote inside a quoted string is escaped, so the scan for its
//     closing quote goes in step with the outer string's from the byte
//     after it and ends at the same place: closingQuote keeps the last
//     scan's end, and scans each byte once.
//   - schemeEnd and pathLike read from a quote to at most the next
//     double quote: neither a scheme nor a path that pathLike accepts
//     holds one. Each byte is read by one quote's.
//   - The look past a quoted URL's host for a query (stop) starts at the
//     host, and quoted URLs' hosts come in order: its last answer serves
//     every host up to the byte it found.
//   - Reading a quoted string in full (readQuoted: unquoting and
//     parsing it) costs its length. A string that is written takes its
//     bytes from the loop, which goes on after it. A string refused
//     leaves them to the loop, and a quote inside it opens a string with
//     the same closing quote, so each closing quote allows maxRefused
//     refusals. The quotes whose strings end at a closing quote lie
//     between the first of them and it, and these ranges do not overlap
//     for two closing quotes: if they did, one of the two first quotes
//     would lie inside the other's string and end where it ends. Full
//     reads cost at most (maxRefused+1) times the text's length.
//
// work counts the bytes looked at, a full read of a string as its
// length: tests hold it to a multiple of the text's length.
type reader struct {
	s string

	// The last scan for a closing quote: from the quote at quoteFrom, it
	// stopped at quoteStop, having found closing (-1 for none).
	quoteFrom, quoteStop, closing int
	// The last look for where a bare URL's host and path end: from
	// stopFrom, the first byte that stops one is at stopAt.
	stopFrom, stopAt int
	// refused strings have been read in full and refused as URLs, of
	// those that close at refusedAt.
	refusedAt, refused int

	work int
}

func newReader(s string) *reader {
	return &reader{s: s, quoteFrom: -1, quoteStop: -1, stopFrom: -1, stopAt: -1, refusedAt: -1}
}

// text returns the reader's text with every URL in it cut down, as Text
// documents.
func (r *reader) text() string {
	s := r.s
	var b strings.Builder
	kept := 0 // s[:kept] is written to b, redacted
	for i := 0; i < len(s); {
		r.work++
		start, end, red, ok := i, 0, "", false
		switch {
		case s[i] == '"':
			end, red, ok = r.quotedURL(i)
		case strings.HasPrefix(s[i:], "://"):
			start = r.schemeStart(kept, i)
			end, red = r.bareURL(start, i+len("://"))
			ok = true
		case strings.HasPrefix(s[i:], "//"):
			// Scheme-relative: whatever comes before is not its scheme,
			// and what follows may be userinfo, not a scheme of its own.
			end, red = r.bareURL(i, i+len("//"))
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
func (r *reader) quotedURL(q int) (end int, red string, ok bool) {
	s := r.s
	closing := r.closingQuote(q)
	if closing < 0 || !quoteEnds(s, closing+1) {
		return 0, "", false
	}
	red, ok = r.quotedRedacted(q, closing)
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
// URL's own text. What it can decide from a few bytes it decides before
// it reads the string in full.
func (r *reader) quotedRedacted(q, closing int) (red string, ok bool) {
	s := r.s
	colon := r.schemeEnd(q + 1)
	hier := colon >= 0 && strings.HasPrefix(s[colon:], "://")
	rel := colon < 0 && strings.HasPrefix(s[q+1:], "//")
	if authority := authorityStart(q, colon, hier, rel); authority >= 0 {
		// Read bare, this URL would go on past the quote into a query:
		// its quotes may be a bare URL's own, such as a host's.
		if e := r.stop(authority); e > closing && e < len(s) && (s[e] == '?' || s[e] == '#') {
			return "", false
		}
	}
	if colon < 0 && !rel && !r.pathLike(q+1, closing) {
		return "", false // words, such as a quoted error, not a URL
	}
	if closing == r.refusedAt && r.refused >= maxRefused {
		return "", false
	}
	if red, ok = r.readQuoted(q, closing, colon, hier, rel); !ok {
		if closing != r.refusedAt {
			r.refusedAt, r.refused = closing, 0
		}
		r.refused++
	}
	return red, ok
}

// readQuoted reads the Go-quoted string s[q:closing+1] in full, with its
// scheme's colon at s[colon] (-1 if none), and returns what to write for
// it, or ok false when it is not a Go-quoted string or holds no URL.
func (r *reader) readQuoted(q, closing, colon int, hier, rel bool) (red string, ok bool) {
	s := r.s
	r.work += closing + 1 - q
	raw, err := strconv.Unquote(s[q : closing+1])
	if err != nil {
		return "", false
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

// pathLike reports whether the Go-quoted string from s[from] to its
// closing quote at s[closing], unquoted, may be a URL of a path alone
// ("/p?k=v", "p#f", "?k=v"), as net/url writes one: with no space,
// control character or double quote before its query or fragment.
// Anything else is words, such as an error quoted whole with a URL quoted
// inside it, which is better read bare. It is false, too, for an escape
// that strconv.Unquote refuses: the string is then no Go-quoted string.
//
// It unquotes only as far as it must, to the first "?", "#" or byte that
// decides against a path: a double quote inside the string is escaped
// and is such a byte, so it reads no further than the next one in s.
func (r *reader) pathLike(from, closing int) bool {
	for t := r.s[from:closing]; t != ""; {
		c, _, tail, err := strconv.UnquoteChar(t, '"')
		r.work += len(t) - len(tail)
		switch {
		case err != nil:
			return false
		case c == '?' || c == '#':
			return true
		case c <= ' ' || c == 0x7f || c == '"':
			return false
		}
		t = tail
	}
	return true
}

// bareURL reads the URL that starts at s[start] and whose host (or
// userinfo) starts at s[authority], after its "//": it returns where its
// text ends in s and what to write for it. A bare URL ends at a space or a
// control character, which net/url never writes in a host or path, or at
// its query or fragment, whose own end is unknown: then the rest of s
// goes with it.
func (r *reader) bareURL(start, authority int) (end int, red string) {
	s := r.s
	end = r.bareEnd(authority)
	tok := s[start:end]
	r.work += len(tok) // trimmed and parsed
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
// bare URL's scheme, host and path (see stops); len(s) if none does.
func (r *reader) bareEnd(i int) int {
	s := r.s
	for ; i < len(s); i++ {
		r.work++
		if stops(s[i]) {
			return i
		}
	}
	return len(s)
}

// stop is bareEnd for a quoted URL's host at s[i], from the last look's
// answer when it serves: no byte from that look's start to its answer
// stops a URL.
func (r *reader) stop(i int) int {
	if r.stopFrom <= i && i <= r.stopAt {
		return r.stopAt
	}
	r.stopFrom, r.stopAt = i, r.bareEnd(i)
	return r.stopAt
}

// closingQuote returns the index of the double quote that closes the
// Go-quoted string opened by the quote at s[q], or -1 if none does. A
// control character never appears in one: %q escapes it.
//
// A quote inside the string that the last scan went through was escaped
// (it would have ended the scan otherwise): from the byte after it, a
// scan goes in step with the last one, and stops where it stopped.
func (r *reader) closingQuote(q int) int {
	if r.quoteFrom < q && q < r.quoteStop {
		return r.closing
	}
	s := r.s
	i, closing := q+1, -1
scan:
	for ; i < len(s); i++ {
		r.work++
		switch c := s[i]; {
		case c == '\\':
			i++
		case c == '"':
			closing = i
			break scan
		case c < ' ' || c == 0x7f:
			break scan
		}
	}
	r.quoteFrom, r.quoteStop, r.closing = q, min(i, len(s)), closing
	return closing
}

// schemeStart returns the start of the scheme that ends at s[sep], looking
// no further back than from.
func (r *reader) schemeStart(from, sep int) int {
	start := sep
	for start > from && schemeByte(r.s[start-1]) {
		r.work++
		start--
	}
	return start
}

// schemeEnd returns the index of the colon that ends a scheme starting at
// s[i], or -1 if s[i:] does not start with a scheme and a colon.
func (r *reader) schemeEnd(i int) int {
	s := r.s
	if i >= len(s) || !('a' <= s[i]|0x20 && s[i]|0x20 <= 'z') {
		return -1
	}
	for j := i; j < len(s); j++ {
		r.work++
		switch {
		case s[j] == ':':
			return j
		case !schemeByte(s[j]):
			return -1
		}
	}
	return -1
}
