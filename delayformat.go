package retryhttp

import (
	"net/http"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/policy"
)

// parseDelayValue reads v, the value of a delay header, in format f. A
// time already past means retry at once; a value invalid in its format is
// not a delay.
func parseDelayValue(v string, f policy.DelayFormat, h http.Header, now time.Time) (time.Duration, bool) {
	switch f {
	case policy.DelaySeconds:
		return parseDecimal(v, time.Second)
	case policy.DelayMilliseconds:
		return parseDecimal(v, time.Millisecond)
	case policy.DelayUnixSeconds:
		n, ok := parseDigits(v)
		if !ok {
			return 0, false
		}
		return untilUnix(n, dateOf(h, now)), true
	case policy.DelayHTTPDate:
		at, err := http.ParseTime(v)
		if err != nil {
			return 0, false
		}
		return max(at.Sub(dateOf(h, now)), 0), true
	case policy.DelayDuration:
		return parseDuration(v)
	case policy.DelayRFC3339:
		at, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return 0, false
		}
		// Time.Sub saturates, so no date overflows the wait.
		return max(at.Sub(dateOf(h, now)), 0), true
	}
	return 0, false
}

// parseDecimal reads a non-negative decimal number of units, with an
// optional fraction ("1.5"), saturating at tooLong.
func parseDecimal(v string, unit time.Duration) (time.Duration, bool) {
	whole, frac, dot := strings.Cut(v, ".")
	n, ok := parseDigits(whole)
	if !ok || dot && frac == "" {
		return 0, false
	}
	d := scale(n, unit)
	var part time.Duration // the fraction, in units of unit/10^k
	scaleDown := unit
	for i := 0; i < len(frac); i++ {
		c := frac[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if scaleDown >= 10 {
			scaleDown /= 10
			part += time.Duration(c-'0') * scaleDown
		}
	}
	if d > tooLong-part {
		return tooLong, true
	}
	return d + part, true
}

// untilUnix is the wait until Unix second n, read from now, or 0 when it
// is past; it saturates at tooLong.
func untilUnix(n int64, now time.Time) time.Duration {
	if n > now.Unix()+int64(tooLong/time.Second) {
		return tooLong
	}
	return max(time.Unix(n, 0).Sub(now), 0)
}

// parseDuration reads v, a delay written as a Go duration ("1s", "6m0s",
// "1m30.5s"), with the syntax and the arithmetic of time.ParseDuration,
// so that a value reads here as it reads there, but for two differences:
// a negative duration is not a delay, and one too long to represent
// saturates at tooLong, as every other delay does, where ParseDuration
// fails (or, for a sum that wraps past 1<<64, gives a small one). "-0s" is
// 0, as there.
func parseDuration(v string) (time.Duration, bool) {
	s := v
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "0" {
		return 0, true
	}
	if s == "" {
		return 0, false
	}
	var d uint64  // nanoseconds, at most 1<<63 while !over
	over := false // d has passed 1<<63: the syntax is still checked
	for s != "" {
		n, termOver, rest, ok := durationTerm(s)
		if !ok {
			return 0, false
		}
		s = rest
		// Checked before adding, so that two halves of 1<<64 do not wrap
		// to 0, as they do in time.ParseDuration.
		if over = over || termOver || n > 1<<63 || d > 1<<63-n; !over {
			d += n
		}
	}
	switch {
	case neg && (over || d > 0):
		return 0, false
	case over || d > uint64(tooLong):
		return tooLong, true
	}
	return time.Duration(d), true
}

// durationTerm reads the term that s starts with, a number and its unit
// ("1.5h"), as time.ParseDuration does: n nanoseconds, over when they pass
// 1<<63, and the rest of s; ok is false for a term that is not one.
func durationTerm(s string) (n uint64, over bool, rest string, ok bool) {
	if s[0] != '.' && (s[0] < '0' || s[0] > '9') {
		return 0, false, "", false
	}
	whole, wholeOver, rest := leadingUint(s)
	pre := len(rest) != len(s)
	s = rest
	var frac uint64 // the digits after the point, as an integer
	scale, post := 1.0, false
	if s != "" && s[0] == '.' {
		s = s[1:]
		frac, scale, rest = leadingFraction(s)
		post = len(rest) != len(s)
		s = rest
	}
	if !pre && !post {
		return 0, false, "", false // a point with no digits: ".s"
	}
	i := 0
	for i < len(s) && s[i] != '.' && (s[i] < '0' || s[i] > '9') {
		i++
	}
	unit, ok := durationUnit(s[:i])
	if !ok {
		return 0, false, "", false // missing or unknown unit
	}
	if wholeOver || whole > 1<<63/unit {
		return 0, true, s[i:], true
	}
	n = whole * unit
	if frac > 0 {
		// As time.ParseDuration computes it: float64 is exact enough
		// for a fraction of the largest unit, an hour.
		n += uint64(float64(frac) * (float64(unit) / scale))
	}
	return n, false, s[i:], true
}

// leadingUint reads the decimal digits that s starts with, as
// time.ParseDuration does; over is true when they pass 1<<63, and the
// digits are all read even then, so that the syntax after them is checked.
func leadingUint(s string) (x uint64, over bool, rest string) {
	i := 0
	for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
		if over || x > 1<<63/10 {
			over = true
			continue
		}
		if x = x*10 + uint64(s[i]-'0'); x > 1<<63 {
			over = true
		}
	}
	return x, over, s[i:]
}

// leadingFraction reads the digits after a duration's decimal point as
// time.ParseDuration does: x/scale is their value, and digits past the
// precision of x are read and dropped.
func leadingFraction(s string) (x uint64, scale float64, rest string) {
	i := 0
	scale = 1
	full := false
	for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
		if full || x > (1<<63-1)/10 {
			full = true
			continue
		}
		y := x*10 + uint64(s[i]-'0')
		if y > 1<<63 {
			full = true
			continue
		}
		x, scale = y, scale*10
	}
	return x, scale, s[i:]
}

// durationUnit returns the length of one u, a unit of a Go duration.
func durationUnit(u string) (uint64, bool) {
	switch u {
	case "ns":
		return uint64(time.Nanosecond), true
	case "us", "µs", "μs": // U+00B5 and U+03BC, as time.ParseDuration
		return uint64(time.Microsecond), true
	case "ms":
		return uint64(time.Millisecond), true
	case "s":
		return uint64(time.Second), true
	case "m":
		return uint64(time.Minute), true
	case "h":
		return uint64(time.Hour), true
	}
	return 0, false
}
