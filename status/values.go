package status

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/retryhttp/retryhttp/internal/redact"
)

// maxText bounds each text the page shows, in bytes. A DNS name has at
// most 253 characters; a longer text is cut, as the Transport cuts the
// texts of its failures.
const maxText = 256

// clip cuts s to at most maxText bytes, at a character boundary, marking
// the cut with an ellipsis.
func clip(s string) string {
	if len(s) <= maxText {
		return s
	}
	const mark = "…"
	cut := maxText - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// errText is an error's text as the page shows it: every URL in it cut
// down to its scheme, host and path, as the logs show them, then clipped.
func errText(s string) string {
	return clip(redact.Text(s))
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
