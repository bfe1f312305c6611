// Package hostport knows which port a URL reaches when it names none, so
// that the policy's host patterns and the Transport's address spread agree
// on it.
package hostport

import "strings"

// Default returns the port that a URL of the given scheme reaches when it
// names none: "80" for http and "443" for https, the scheme compared
// case-insensitively as RFC 3986 asks. Any other scheme, and the empty
// one, gives "": its port is not known here, and a caller that needs one
// must leave such a URL to whoever knows its scheme, rather than guess.
//
// Default is pure and safe for concurrent use.
func Default(scheme string) string {
	switch {
	case strings.EqualFold(scheme, "http"):
		return "80"
	case strings.EqualFold(scheme, "https"):
		return "443"
	}
	return ""
}
