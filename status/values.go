package status

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/retryhttp/retryhttp/internal/redact"
)

// maxText bounds each text the page shows, in bytes. A DNS name has at
// most 253 characters; a longer text is cut, as the Transport cuts the
// texts of its failures.
const maxText = 256

// mark ends a text that was cut.
const mark = "…"

// clip cuts s to at most maxText bytes, at a character boundary, marking
// the cut with an ellipsis, and makes what is left safe to show (see
// shown). Every text the page shows goes through it, so that texts, at
// most 256 bytes each, and lists, each bounded, keep an answer within
// reach of maxBody whatever the Transport holds, and no text a server or
// a caller made reads as something else.
func clip(s string) string {
	cut := len(s) > maxText
	s = shown(prefix(s, maxText)) // may grow: a byte that is no UTF-8 becomes three
	if !cut && len(s) <= maxText {
		return s
	}
	return prefix(s, maxText-len(mark)) + mark
}

// shown returns s with U+FFFD in place of each byte that is no UTF-8 and
// of each character that would not read as itself: a control character
// but tab, newline and carriage return (HTML calls one an error, and a
// terminal obeys it), a bidirectional formatting character (it reorders
// the text around it, so that one host name reads as another), and a
// noncharacter. html/template and encoding/json leave these as they are,
// or, for bytes that are no UTF-8, the HTML does; a redirect's Location
// puts any byte above 0x7f into a host name, and a base's error may hold
// anything.
func shown(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, unshown) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s { // a byte that is no UTF-8 reads as U+FFFD
		if unshown(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unshown reports whether the page shows U+FFFD for r (see shown).
func unshown(r rune) bool {
	return unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' ||
		unicode.Is(unicode.Bidi_Control, r) || unicode.Is(unicode.Noncharacter_Code_Point, r)
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

// errText is an error's text as the page shows it: every URL in it cut
// down to its scheme, host and path, as the logs show them, then clipped.
// redact.Text reads at most redact.MaxText bytes of it, and ends a text
// it shortened so that no URL is read split.
func errText(s string) string { return clip(redact.Text(s)) }

// fixed is a number the page shows with up to three decimals, kept as a
// count of thousandths. The figures that come as floats (a budget's
// tokens) are held as fixed, made by fixedOf alone, so that the page
// holds no NaN or infinity by construction: encoding/json refuses them,
// failing the whole answer, and a budget read while SetPolicy removed
// the throttle once gave +Inf. Every other number of the page is an
// integer, a duration included (see millis).
type fixed int64

// fixedBound is the largest magnitude a fixed takes, in units: a
// trillion tokens, far beyond any budget.
const fixedBound = 1e12

// fixedOf returns v to the nearest thousandth: 0 for NaN, and ±1e12 for
// a value beyond that, infinities included.
func fixedOf(v float64) fixed {
	switch {
	case v != v:
		return 0
	case v >= fixedBound:
		return fixedBound * 1000
	case v <= -fixedBound:
		return -fixedBound * 1000
	}
	return fixed(math.Round(v * 1000))
}

// MarshalJSON writes v as a number with up to three decimals.
func (v fixed) MarshalJSON() ([]byte, error) { return appendThousandths(nil, int64(v)), nil }

// String writes v as MarshalJSON does: "4.5", "10".
func (v fixed) String() string { return string(appendThousandths(nil, int64(v))) }

// Half is v/2, to the thousandth below.
func (v fixed) Half() fixed { return v / 2 }

// The first and last times RFC 3339 writes, which encoding/json
// refuses to go beyond.
var (
	firstTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	lastTime  = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// utc returns t in UTC, as the page shows every time, and within the
// years 0 to 9999, which encoding/json refuses to go beyond, failing the
// whole answer, as it refuses a NaN (see fixed). No Transport gives such
// a time; a Stats made by hand may.
func utc(t time.Time) time.Time {
	switch {
	case t.Before(firstTime):
		return firstTime
	case t.After(lastTime):
		return lastTime
	}
	return t.UTC()
}

// millis is a duration the page shows: in the JSON, a number of
// milliseconds to the microsecond; in the HTML, as a person reads it.
type millis time.Duration

// MarshalJSON writes d in milliseconds, with up to three decimals.
func (d millis) MarshalJSON() ([]byte, error) {
	us := int64(time.Duration(d).Round(time.Microsecond) / time.Microsecond)
	return appendThousandths(nil, us), nil
}

// String writes d as a person reads it: "850µs", "12.3ms", "29.5s",
// "2m5s".
func (d millis) String() string {
	v := time.Duration(d)
	switch {
	case v >= time.Minute:
		v = v.Round(time.Second)
	case v >= time.Second:
		v = v.Round(100 * time.Millisecond)
	case v >= time.Millisecond:
		v = v.Round(100 * time.Microsecond)
	default:
		v = v.Round(time.Microsecond)
	}
	return v.String()
}

// appendThousandths appends n/1000 in decimal, with no trailing zeros
// after the point and no point for a whole number: 4500 is "4.5".
func appendThousandths(b []byte, n int64) []byte {
	u := uint64(n) // the magnitude, also of math.MinInt64
	if n < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendUint(b, u/1000, 10)
	frac := u % 1000
	if frac == 0 {
		return b
	}
	digits := [3]byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
	n = 3
	for digits[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, digits[:n]...)
}
