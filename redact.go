package retryhttp

import (
	"net/url"
	"strings"
)

// RedactURL returns u as logs and traces may show it: its scheme, host and
// path, its userinfo (if any) replaced by "REDACTED:REDACTED", and no
// query or fragment, which may carry secrets. It is what [LogHooks] and
// the otel module record of a URL.
func RedactURL(u *url.URL) string {
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

// RedactURLs returns s with every URL in it cut down as [RedactURL] does,
// or to its scheme alone when it does not parse: for error texts, which
// quote URLs (a *url.Error does, and so may any base transport).
func RedactURLs(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start, end := i, i+len("://")
		for start > 0 && schemeByte(s[start-1]) {
			start--
		}
		for end < len(s) && !strings.ContainsRune(" \t\r\n\"'`<>", rune(s[end])) {
			end++
		}
		b.WriteString(s[:start])
		raw := s[start:end]
		if u, err := url.Parse(raw); err == nil && u.Host != "" {
			b.WriteString(RedactURL(u))
		} else {
			b.WriteString(raw[:i-start+len("://")] + "REDACTED")
		}
		s = s[end:]
	}
}

// schemeByte reports whether c may be part of a URL scheme.
func schemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}
