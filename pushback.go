package retryhttp

import (
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/policy"
)

// Header names of the server's delay signals.
const (
	// headerPushback is gRPC's server pushback (grpc-retry-pushback-ms)
	// carried over HTTP: a delay in milliseconds before the next retry, or
	// a negative or unparsable value to forbid retrying.
	headerPushback = "X-Retry-Pushback-Ms"
	// headerRetryAfterMs is Retry-After in milliseconds, as the LLM APIs
	// (OpenAI's, Anthropic's) send it beside Retry-After: the same
	// signal, finer.
	headerRetryAfterMs = "Retry-After-Ms"
	// headerAmzRetryAfter is AWS's x-amz-retry-after, in canonical form:
	// the same signal as Retry-After-Ms, in milliseconds.
	headerAmzRetryAfter = "X-Amz-Retry-After"
	// headerRetryAfter is RFC 9110 section 10.2.3: delay-seconds or an
	// HTTP-date.
	headerRetryAfter = "Retry-After"
	// headerDate is the time the server generated the response, against
	// which a Retry-After date is read.
	headerDate = "Date"
)

// tooLong is the wait given for a delay too large to represent as a
// [time.Duration]: it exceeds every limit the transport compares it with, so
// it reads as "do not wait" without ever overflowing into a negative value.
const tooLong = time.Duration(math.MaxInt64)

// delayKind says what a response asks of the client's next retry.
type delayKind uint8

const (
	// delayNone: no usable signal (none sent, or a Retry-After that does
	// not parse, which RFC 9110 says to ignore); the policy's backoff
	// applies.
	delayNone delayKind = iota
	// delayRetryAfter: Retry-After, Retry-After-Ms or x-amz-retry-after
	// asked for Wait before the next retry.
	delayRetryAfter
	// delayPushback: X-Retry-Pushback-Ms asked for exactly Wait before the
	// next retry, and the policy's backoff starts again at its first step,
	// as gRPC's retry design prescribes.
	delayPushback
	// delayStop: X-Retry-Pushback-Ms was negative or unparsable, which
	// gRPC's retry design reads as the server asking not to retry at all.
	delayStop
	// delayHeader: one of the policy's further delay headers, or the
	// IETF RateLimit field's spent quota, asked for Wait before the next
	// retry, read as Retry-After is.
	delayHeader
)

// String returns the kind's name, for test failures and logs.
func (k delayKind) String() string {
	switch k {
	case delayNone:
		return "none"
	case delayRetryAfter:
		return "retry-after"
	case delayPushback:
		return "pushback"
	case delayStop:
		return "stop"
	case delayHeader:
		return "delay-header"
	}
	return "delayKind(invalid)"
}

// serverDelay is a response's delay signal, read by parseServerDelay.
// Wait is in [0, tooLong]; it is 0 for delayNone and delayStop.
type serverDelay struct {
	Kind delayKind
	Wait time.Duration
}

// parseServerDelay reads every delay signal of a response's header h, now
// being the time the response was received, and extra the policy's
// further delay headers, their names canonical. It is pure, so that every
// header form can be tested exactly.
//
// The first signal present and valid wins, in this order:
// X-Retry-Pushback-Ms (the more precise signal, and the only one that can
// forbid retrying, so any value of it is valid), Retry-After-Ms and then
// x-amz-retry-after (each a decimal number of milliseconds, the finer
// Retry-After, as the LLM APIs and AWS send them), Retry-After, the
// IETF RateLimit field when it has a spent quota (see rateLimitSpent; one
// without is no delay, and the next signal is read), then extra in its
// order; an entry of extra with a Remaining header counts only when that
// header reads 0. Of a header sent several times only the first value
// counts, but for RateLimit, whose lines RFC 9651 reads as one.
func parseServerDelay(h http.Header, now time.Time, extra []policy.DelayHeader) serverDelay {
	if v, ok := firstValue(h, headerPushback); ok {
		return parsePushback(v)
	}
	for _, name := range [...]string{headerRetryAfterMs, headerAmzRetryAfter} {
		if v, ok := firstValue(h, name); ok {
			if wait, ok := parseDecimal(trimOWS(v), time.Millisecond); ok {
				return serverDelay{Kind: delayRetryAfter, Wait: wait}
			}
		}
	}
	if v, ok := firstValue(h, headerRetryAfter); ok {
		if sd := parseRetryAfter(v, h, now); sd.Kind != delayNone {
			return sd
		}
	}
	if wait, ok := rateLimitSpent(h); ok {
		return serverDelay{Kind: delayHeader, Wait: wait}
	}
	for _, d := range extra {
		if wait, ok := extraDelay(h, now, d); ok {
			return serverDelay{Kind: delayHeader, Wait: wait}
		}
	}
	return serverDelay{}
}

// extraDelay reads the policy's delay header d in h: its wait, and whether
// it is present, valid in its format and, when d names a count of
// requests left, that count reads 0.
func extraDelay(h http.Header, now time.Time, d policy.DelayHeader) (time.Duration, bool) {
	if d.Remaining != "" && !noneLeft(h, d.Remaining) {
		return 0, false
	}
	v, ok := firstValue(h, d.Name)
	if !ok {
		return 0, false
	}
	return parseDelayValue(trimOWS(v), d.Format, h, now)
}

// noneLeft reports whether the header remaining (canonical), a count of
// requests left in a quota, reads exactly 0. Nothing else counts, not even
// "00" or "-1": the reset beside it is sent on every response, and a hold
// set from a count that only may mean "spent" would stop every request to
// the host until the reset for nothing.
func noneLeft(h http.Header, remaining string) bool {
	v, ok := firstValue(h, remaining)
	return ok && trimOWS(v) == "0"
}

// dateOf is the time a response was generated, by its Date header when
// that parses, else now: a time the server names is read against its own
// clock, so that a skewed clock does not skew the wait.
func dateOf(h http.Header, now time.Time) time.Time {
	if d, ok := firstValue(h, headerDate); ok {
		if sent, err := http.ParseTime(trimOWS(d)); err == nil {
			return sent
		}
	}
	return now
}

// firstValue returns the first value of h's header key (canonical form),
// and whether the header is present at all, even empty.
func firstValue(h http.Header, key string) (string, bool) {
	vs := h[key]
	if len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// parsePushback reads X-Retry-Pushback-Ms: an optional minus sign and
// decimal digits, surrounded by optional whitespace. n >= 0 asks for a retry
// in exactly n ms ("-0" is 0); anything else, including an empty value,
// forbids retrying.
func parsePushback(v string) serverDelay {
	v = trimOWS(v)
	neg := strings.HasPrefix(v, "-")
	if neg {
		v = v[1:]
	}
	n, ok := parseDigits(v)
	if !ok || (neg && n != 0) {
		return serverDelay{Kind: delayStop}
	}
	return serverDelay{Kind: delayPushback, Wait: scale(n, time.Millisecond)}
}

// parseRetryAfter reads Retry-After, either delay-seconds (decimal digits
// only: RFC 9110 has no sign and no fraction) or an HTTP-date in any of its
// three forms. A date is read against the response's Date header when that
// parses, so that a server whose clock is off still gets the wait it meant,
// and against now otherwise. A date already past means retry at once. A
// value that parses as neither is ignored, as RFC 9110 requires.
func parseRetryAfter(v string, h http.Header, now time.Time) serverDelay {
	v = trimOWS(v)
	if n, ok := parseDigits(v); ok {
		return serverDelay{Kind: delayRetryAfter, Wait: scale(n, time.Second)}
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return serverDelay{}
	}
	// Time.Sub saturates instead of overflowing, so a date centuries away
	// gives the largest Duration, which is tooLong.
	return serverDelay{Kind: delayRetryAfter, Wait: max(at.Sub(dateOf(h, now)), 0)}
}

// trimOWS removes the optional whitespace (spaces and horizontal tabs) that
// RFC 9110 allows around a field value.
func trimOWS(v string) string {
	return strings.Trim(v, " \t")
}

// parseDigits reads a non-empty string of ASCII decimal digits. A value
// beyond int64 saturates at math.MaxInt64 rather than failing: it is still a
// valid, very long delay.
func parseDigits(v string) (int64, bool) {
	if v == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			n = math.MaxInt64 // keep checking the remaining characters
			continue
		}
		n = n*10 + d
	}
	return n, true
}

// scale returns n units, or tooLong when that does not fit in a Duration.
func scale(n int64, unit time.Duration) time.Duration {
	if n > int64(tooLong/unit) {
		return tooLong
	}
	return time.Duration(n) * unit
}

// maxServerDelayJitter caps the jitter that jitterServerDelay adds.
const maxServerDelayJitter = time.Second

// jitterServerDelay lengthens a server-directed delay d by
// r * min(d/10, 1s), r being a random value in [0, 1).
//
// A server that tells a whole herd of clients "come back in 5s" would get
// them all back in the same instant; spreading the returns over up to a
// tenth of the delay avoids that, while the jitter is only ever added, so
// the client never comes back earlier than the server asked. The spread is
// capped at one second, the resolution of Retry-After's delay-seconds, so a
// long delay is not stretched by much more than the server could have meant.
// A delay of 0 (retry at once) stays exactly 0, and a negative d, which
// parseServerDelay never gives, becomes 0. The result saturates at tooLong
// instead of overflowing; an r outside [0, 1] (or NaN) is clamped into it.
func jitterServerDelay(d time.Duration, r float64) time.Duration {
	if d <= 0 {
		return max(d, 0)
	}
	if !(r > 0) { // also NaN
		return d
	}
	r = min(r, 1)
	spread := min(d/10, maxServerDelayJitter)
	j := time.Duration(r * float64(spread)) // exact enough: spread <= 1e9 ns
	if d > tooLong-j {
		return tooLong
	}
	return d + j
}
