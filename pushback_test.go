package retryhttp

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp/policy"
)

// fixedNow is the receive time of every response in these tests, a
// Saturday, so that the HTTP-dates below are consistent.
var fixedNow = time.Date(2025, time.November, 22, 12, 0, 0, 0, time.UTC)

func TestParseServerDelayRetryAfter(t *testing.T) {
	t.Parallel()
	ra := func(v string) serverDelay { return serverDelay{Kind: delayRetryAfter, Wait: parseDur(v)} }
	none := serverDelay{}
	tests := []struct {
		name string
		h    http.Header
		want serverDelay
	}{
		{"absent", http.Header{}, none},
		{"nil header", nil, none},
		{"seconds", http.Header{"Retry-After": {"120"}}, ra("120s")},
		{"zero", http.Header{"Retry-After": {"0"}}, ra("0s")},
		{"whitespace", http.Header{"Retry-After": {" \t5 \t"}}, ra("5s")},
		{"leading zeros", http.Header{"Retry-After": {"007"}}, ra("7s")},
		{"first of several", http.Header{"Retry-After": {"7", "9"}}, ra("7s")},
		{"empty", http.Header{"Retry-After": {""}}, none},
		{"negative", http.Header{"Retry-After": {"-1"}}, none},
		{"plus sign", http.Header{"Retry-After": {"+5"}}, none},
		{"fractional", http.Header{"Retry-After": {"1.5"}}, none},
		{"unit", http.Header{"Retry-After": {"5s"}}, none},
		{"garbage", http.Header{"Retry-After": {"soon"}}, none},
		{"inner space", http.Header{"Retry-After": {"1 2"}}, none},
		{"largest representable seconds", http.Header{"Retry-After": {"9223372036"}}, ra("9223372036s")},
		{"one second too many", http.Header{"Retry-After": {"9223372037"}}, serverDelay{delayRetryAfter, tooLong}},
		{"beyond int64", http.Header{"Retry-After": {"99999999999999999999"}}, serverDelay{delayRetryAfter, tooLong}},
		{"IMF-fixdate", http.Header{"Retry-After": {"Sat, 22 Nov 2025 12:00:30 GMT"}}, ra("30s")},
		{"RFC 850 date", http.Header{"Retry-After": {"Saturday, 22-Nov-25 12:00:30 GMT"}}, ra("30s")},
		{"asctime date", http.Header{"Retry-After": {"Sat Nov 22 12:00:30 2025"}}, ra("30s")},
		{"asctime date, one-digit day", http.Header{"Retry-After": {"Tue Dec  2 12:00:00 2025"}}, ra("240h")},
		{"date with whitespace", http.Header{"Retry-After": {"  Sat, 22 Nov 2025 12:01:00 GMT "}}, ra("1m")},
		{"date now", http.Header{"Retry-After": {"Sat, 22 Nov 2025 12:00:00 GMT"}}, ra("0s")},
		{"date past", http.Header{"Retry-After": {"Sat, 22 Nov 2025 11:00:00 GMT"}}, ra("0s")},
		{"date far future", http.Header{"Retry-After": {"Fri, 31 Dec 9999 23:59:59 GMT"}}, serverDelay{delayRetryAfter, tooLong}},
		{"date far past", http.Header{"Retry-After": {"Thu, 01 Jan 1970 00:00:00 GMT"}}, ra("0s")},
		{"bad date", http.Header{"Retry-After": {"Sat, 32 Nov 2025 12:00:30 GMT"}}, none},
		{
			"server clock 1h ahead",
			http.Header{"Retry-After": {"Sat, 22 Nov 2025 13:00:30 GMT"}, "Date": {"Sat, 22 Nov 2025 13:00:00 GMT"}},
			ra("30s"),
		},
		{
			"server clock 1h behind",
			http.Header{"Retry-After": {"Sat, 22 Nov 2025 11:00:30 GMT"}, "Date": {"Sat, 22 Nov 2025 11:00:00 GMT"}},
			ra("30s"),
		},
		{
			"Date in another form",
			http.Header{"Retry-After": {"Sat, 22 Nov 2025 11:00:30 GMT"}, "Date": {"Sat Nov 22 11:00:00 2025"}},
			ra("30s"),
		},
		{
			"past against Date",
			http.Header{"Retry-After": {"Sat, 22 Nov 2025 12:00:30 GMT"}, "Date": {"Sat, 22 Nov 2025 13:00:00 GMT"}},
			ra("0s"),
		},
		{
			"invalid Date falls back to now",
			http.Header{"Retry-After": {"Sat, 22 Nov 2025 12:00:30 GMT"}, "Date": {"yesterday"}},
			ra("30s"),
		},
		{
			"empty Date falls back to now",
			http.Header{"Retry-After": {"Sat, 22 Nov 2025 12:00:30 GMT"}, "Date": {""}},
			ra("30s"),
		},
		{
			"Date does not touch seconds",
			http.Header{"Retry-After": {"30"}, "Date": {"Sat, 22 Nov 2025 13:00:00 GMT"}},
			ra("30s"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, parseServerDelay(tt.h, fixedNow, nil))
		})
	}
}

func TestParseServerDelayPushback(t *testing.T) {
	t.Parallel()
	pb := func(v string) serverDelay { return serverDelay{Kind: delayPushback, Wait: parseDur(v)} }
	stop := serverDelay{Kind: delayStop}
	tests := []struct {
		name string
		h    http.Header
		want serverDelay
	}{
		{"zero", http.Header{"X-Retry-Pushback-Ms": {"0"}}, pb("0s")},
		{"ms", http.Header{"X-Retry-Pushback-Ms": {"250"}}, pb("250ms")},
		{"whitespace", http.Header{"X-Retry-Pushback-Ms": {" 250\t"}}, pb("250ms")},
		{"minus zero", http.Header{"X-Retry-Pushback-Ms": {"-0"}}, pb("0s")},
		{"first of several", http.Header{"X-Retry-Pushback-Ms": {"100", "-1"}}, pb("100ms")},
		{"negative", http.Header{"X-Retry-Pushback-Ms": {"-1"}}, stop},
		{"very negative", http.Header{"X-Retry-Pushback-Ms": {"-99999999999999999999"}}, stop},
		{"garbage", http.Header{"X-Retry-Pushback-Ms": {"abc"}}, stop},
		{"empty", http.Header{"X-Retry-Pushback-Ms": {""}}, stop},
		{"sign only", http.Header{"X-Retry-Pushback-Ms": {"-"}}, stop},
		{"plus sign", http.Header{"X-Retry-Pushback-Ms": {"+5"}}, stop},
		{"fractional", http.Header{"X-Retry-Pushback-Ms": {"1.5"}}, stop},
		{"largest representable", http.Header{"X-Retry-Pushback-Ms": {"9223372036854"}}, pb("9223372036854ms")},
		{"one ms too many", http.Header{"X-Retry-Pushback-Ms": {"9223372036855"}}, serverDelay{delayPushback, tooLong}},
		{"beyond int64", http.Header{"X-Retry-Pushback-Ms": {"99999999999999999999"}}, serverDelay{delayPushback, tooLong}},
		{"wins over Retry-After", http.Header{"X-Retry-Pushback-Ms": {"100"}, "Retry-After": {"5"}}, pb("100ms")},
		{"stop wins over Retry-After", http.Header{"X-Retry-Pushback-Ms": {"-1"}, "Retry-After": {"5"}}, stop},
		{"garbage wins over Retry-After", http.Header{"X-Retry-Pushback-Ms": {"x"}, "Retry-After": {"5"}}, stop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, parseServerDelay(tt.h, fixedNow, nil))
		})
	}
}

// parseDur is time.ParseDuration for literals known to be valid.
func parseDur(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

func TestJitterServerDelay(t *testing.T) {
	t.Parallel()
	justBelow1 := math.Nextafter(1, 0)
	tests := []struct {
		name string
		d    time.Duration
		r    float64
		want time.Duration
	}{
		{"zero stays zero", 0, 0.9, 0},
		{"negative becomes zero", -time.Second, 0.9, 0},
		{"r 0 adds nothing", 5 * time.Second, 0, 5 * time.Second},
		{"half of a tenth", 5 * time.Second, 0.5, 5*time.Second + 250*time.Millisecond},
		{"r near 1, a tenth", 5 * time.Second, justBelow1, 5*time.Second + 500*time.Millisecond - 1},
		{"short delay", time.Millisecond, 0.5, time.Millisecond + 50*time.Microsecond},
		{"nanoseconds", 9, justBelow1, 9},
		{"cap starts at 10s", 10 * time.Second, 0.5, 10*time.Second + 500*time.Millisecond},
		{"capped at 1s", 60 * time.Second, 0.5, 60*time.Second + 500*time.Millisecond},
		{"r near 1, capped", 60 * time.Second, justBelow1, 61*time.Second - 1},
		{"r 1 clamped", 60 * time.Second, 1, 61 * time.Second},
		{"r above 1 clamped", 60 * time.Second, 7, 61 * time.Second},
		{"r negative clamped", 60 * time.Second, -0.5, 60 * time.Second},
		{"r NaN adds nothing", 60 * time.Second, math.NaN(), 60 * time.Second},
		{"tooLong stays", tooLong, justBelow1, tooLong},
		{"tooLong at r 0", tooLong, 0, tooLong},
		{"saturates near max", tooLong - 100, 0.5, tooLong},
		{"fits near max", tooLong - 2*time.Second, 0.5, tooLong - 1500*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, jitterServerDelay(tt.d, tt.r), "jitterServerDelay(%v, %v)", tt.d, tt.r)
		})
	}
}

// wantPushback is an independent reading of X-Retry-Pushback-Ms through
// strconv, to check parsePushback against.
func wantPushback(v string) serverDelay {
	v = strings.Trim(v, " \t")
	// ParseInt accepts a plus sign, and reports an overflow before it
	// looks at the rest, so the syntax is checked apart.
	if digits := strings.TrimPrefix(v, "-"); digits == "" || strings.Trim(digits, "0123456789") != "" {
		return serverDelay{Kind: delayStop}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) && n > 0:
		return serverDelay{Kind: delayPushback, Wait: tooLong}
	case err != nil || n < 0:
		return serverDelay{Kind: delayStop}
	case n > math.MaxInt64/int64(time.Millisecond):
		return serverDelay{Kind: delayPushback, Wait: tooLong}
	}
	return serverDelay{Kind: delayPushback, Wait: time.Duration(n) * time.Millisecond}
}

func FuzzParseServerDelay(f *testing.F) {
	f.Add("250", "5", "", uint8(3), 0.5)
	f.Add("-1", "Sat, 22 Nov 2025 12:00:30 GMT", "", uint8(1), 0.1)
	f.Add("", "Sat, 22 Nov 2025 13:00:30 GMT", "Sat, 22 Nov 2025 13:00:00 GMT", uint8(6), 0.99)
	f.Add("", "Saturday, 22-Nov-25 12:00:30 GMT", "", uint8(2), 0.0)
	f.Add("", "Sat Nov 22 12:00:30 2025", "garbage", uint8(6), 0.3)
	f.Add("99999999999999999999", "99999999999999999999", "", uint8(2), 0.7)
	f.Add("9223372036855", " 1.5 ", "", uint8(1), 0.2)
	f.Fuzz(func(t *testing.T, pushback, retryAfter, date string, present uint8, r float64) {
		h := http.Header{}
		if present&1 != 0 {
			h["X-Retry-Pushback-Ms"] = []string{pushback}
		}
		if present&2 != 0 {
			h["Retry-After"] = []string{retryAfter}
		}
		if present&4 != 0 {
			h["Date"] = []string{date}
		}
		got := parseServerDelay(h, fixedNow, nil)
		if got.Wait < 0 {
			t.Fatalf("negative wait %v", got)
		}
		switch {
		case present&1 != 0:
			if want := wantPushback(pushback); got != want {
				t.Fatalf("pushback %q: got %+v, want %+v", pushback, got, want)
			}
		case present&2 != 0:
			if got.Kind != delayNone && got.Kind != delayRetryAfter {
				t.Fatalf("Retry-After %q alone gave kind %v", retryAfter, got.Kind)
			}
		default:
			if got != (serverDelay{}) {
				t.Fatalf("no header gave %+v", got)
			}
		}
		if (got.Kind == delayNone || got.Kind == delayStop) && got.Wait != 0 {
			t.Fatalf("kind %v with wait %v", got.Kind, got.Wait)
		}
		j := jitterServerDelay(got.Wait, r)
		if j < got.Wait {
			t.Fatalf("jitterServerDelay(%v, %v) = %v shortens the delay", got.Wait, r, j)
		}
		if limit := min(got.Wait/10, time.Second); j-got.Wait > limit {
			t.Fatalf("jitterServerDelay(%v, %v) = %v adds more than %v", got.Wait, r, j, limit)
		}
	})
}

// The policy's delay headers, each in its format, read after
// X-Retry-Pushback-Ms and Retry-After: the first present and valid one
// wins, a value invalid in its format is skipped, and times are read
// against the response's Date.
func TestDelayHeaders(t *testing.T) {
	extra := []policy.DelayHeader{
		{Name: "X-Ratelimit-Reset", Format: policy.DelayUnixSeconds},
		{Name: "Ratelimit-Reset", Format: policy.DelaySeconds},
		{Name: "X-Retry-In-Ms", Format: policy.DelayMilliseconds},
		{Name: "X-Retry-At", Format: policy.DelayHTTPDate},
	}
	unix := func(d time.Duration) string { return strconv.FormatInt(fixedNow.Add(d).Unix(), 10) }
	header := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name string
		h    http.Header
		want serverDelay
	}{
		{"unix seconds", header("X-RateLimit-Reset", unix(30*time.Second)), serverDelay{delayHeader, 30 * time.Second}},
		{"unix seconds past", header("X-RateLimit-Reset", unix(-time.Hour)), serverDelay{delayHeader, 0}},
		{"unix seconds against Date", header("X-RateLimit-Reset", unix(time.Hour+30*time.Second),
			"Date", fixedNow.Add(time.Hour).UTC().Format(http.TimeFormat)), serverDelay{delayHeader, 30 * time.Second}},
		{"unix seconds saturate", header("X-RateLimit-Reset", "99999999999999999999"), serverDelay{delayHeader, tooLong}},
		{"seconds", header("RateLimit-Reset", "7"), serverDelay{delayHeader, 7 * time.Second}},
		{"seconds with a fraction", header("RateLimit-Reset", " 1.25 "), serverDelay{delayHeader, 1250 * time.Millisecond}},
		{"seconds with a long fraction", header("RateLimit-Reset", "0.0000000019"), serverDelay{delayHeader, time.Nanosecond}},
		{"milliseconds", header("x-retry-in-ms", "250"), serverDelay{delayHeader, 250 * time.Millisecond}},
		{"HTTP date", header("X-Retry-At", fixedNow.Add(90*time.Second).UTC().Format(http.TimeFormat)), serverDelay{delayHeader, 90 * time.Second}},
		{"first listed wins", header("RateLimit-Reset", "7", "X-RateLimit-Reset", unix(30*time.Second)), serverDelay{delayHeader, 30 * time.Second}},
		{"invalid one skipped", header("X-RateLimit-Reset", "soon", "RateLimit-Reset", "7"), serverDelay{delayHeader, 7 * time.Second}},
		{"negative skipped", header("RateLimit-Reset", "-7", "x-retry-in-ms", "9"), serverDelay{delayHeader, 9 * time.Millisecond}},
		{"trailing dot invalid", header("RateLimit-Reset", "7."), serverDelay{}},
		{"garbage only", header("RateLimit-Reset", "1e3", "X-Retry-At", "tomorrow"), serverDelay{}},
		{"Retry-After first", header("Retry-After", "3", "RateLimit-Reset", "7"), serverDelay{delayRetryAfter, 3 * time.Second}},
		{"invalid Retry-After skipped", header("Retry-After", "soon", "RateLimit-Reset", "7"), serverDelay{delayHeader, 7 * time.Second}},
		{"pushback first", header("X-Retry-Pushback-Ms", "-1", "RateLimit-Reset", "7"), serverDelay{Kind: delayStop}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, parseServerDelay(tt.h, fixedNow, extra))
		})
	}
	assert.Equal(t, serverDelay{}, parseServerDelay(header("RateLimit-Reset", "7"), fixedNow, nil), "not listed: not read")
}

func FuzzParseDelayValue(f *testing.F) {
	for _, v := range []string{"7", "1.25", "0.0000000019", "99999999999999999999", "99999999999999999999.9",
		"-1", "1e3", "7.", ".5", "Sat, 22 Nov 2025 12:00:30 GMT", "1763812830", "",
		"6m0s", "1m30.5s", "-1s", "2025-11-22T12:00:30Z", "9999-12-31T23:59:59Z"} {
		for format := range 7 {
			f.Add(v, uint8(format))
		}
	}
	formats := []policy.DelayFormat{policy.DelaySeconds, policy.DelayMilliseconds,
		policy.DelayUnixSeconds, policy.DelayHTTPDate, policy.DelayDuration, policy.DelayRFC3339, "unknown"}
	f.Fuzz(func(t *testing.T, v string, format uint8) {
		fm := formats[int(format)%len(formats)]
		wait, ok := parseDelayValue(v, fm, http.Header{}, fixedNow)
		if wait < 0 || wait > tooLong {
			t.Fatalf("%q as %s: wait %v out of range", v, fm, wait)
		}
		if !ok && wait != 0 {
			t.Fatalf("%q as %s: invalid with wait %v", v, fm, wait)
		}
		if fm == "unknown" && ok {
			t.Fatalf("%q read in an unknown format", v)
		}
	})
}
