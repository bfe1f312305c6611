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
