package retryhttp

import (
	"math/big"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp/policy"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"1s", time.Second, true},
		{"6m0s", 6 * time.Minute, true},
		{"20ms", 20 * time.Millisecond, true},
		{"1m30.5s", 90*time.Second + 500*time.Millisecond, true},
		{"7.66s", 7660 * time.Millisecond, true},
		{"1h2m3s4ms5us6ns", time.Hour + 2*time.Minute + 3*time.Second + 4*time.Millisecond + 5*time.Microsecond + 6, true},
		{"1µs", time.Microsecond, true},
		{"1μs", time.Microsecond, true},
		{"0", 0, true},
		{"0s", 0, true},
		{"+5s", 5 * time.Second, true},
		{"-0s", 0, true},
		{"-0", 0, true},
		{".5s", 500 * time.Millisecond, true},
		{"1.s", time.Second, true},
		{"0.1h", 6 * time.Minute, true},
		{"1.0000000001s", time.Second, true},
		{"2562047h47m16.854775807s", tooLong, true},
		{"2562047h47m16.854775808s", tooLong, true},
		{"9223372036854775807ns", tooLong, true},
		{"9223372036854775808ns", tooLong, true},
		{"9223372036854775808ns9223372036854775808ns", tooLong, true}, // wraps to 0 in time.ParseDuration
		{"99999999999999999999h", tooLong, true},
		{"3000000h", tooLong, true},
		{"-1s", 0, false},
		{"-1ns", 0, false},
		{"-99999999999999999999h", 0, false},
		{"", 0, false},
		{"+", 0, false},
		{"-", 0, false},
		{"1", 0, false},
		{"s", 0, false},
		{".s", 0, false},
		{"1.5", 0, false},
		{"1e3s", 0, false},
		{"1 s", 0, false},
		{"1s ", 0, false},
		{"1S", 0, false},
		{"1d", 0, false},
		{"1s1", 0, false},
		{"99999999999999999999h1x", 0, false}, // overflow does not hide bad syntax
		{"--1s", 0, false},
		{"1..5s", 0, false},
		{"soon", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.v, func(t *testing.T) {
			t.Parallel()
			got, ok := parseDuration(tt.v)
			assert.Equal(t, tt.ok, ok, "parseDuration(%q): got ok %v, want %v", tt.v, ok, tt.ok)
			assert.Equal(t, tt.want, got, "parseDuration(%q): got %v, want %v", tt.v, got, tt.want)
		})
	}
}

// durationPart is one number and unit of a Go duration.
var durationPart = regexp.MustCompile(`^([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)`)

// wantDuration is an independent reading of a duration for
// FuzzParseDuration: each part through time.ParseDuration, which cannot
// wrap on one part, summed without limit, then saturated.
func wantDuration(v string) (time.Duration, bool) {
	s, neg := v, false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s, neg = s[1:], s[0] == '-'
	}
	if s == "0" {
		return 0, true
	}
	if s == "" {
		return 0, false
	}
	sum, over := new(big.Int), false
	for s != "" {
		m := durationPart.FindStringSubmatch(s)
		if m == nil || m[1] == "" || m[1] == "." {
			return 0, false
		}
		// A unit is read up to the next digit or point, so "1sx" is the
		// unknown unit "sx", not "s" then "x".
		if rest := s[len(m[0]):]; rest != "" && rest[0] != '.' && (rest[0] < '0' || rest[0] > '9') {
			return 0, false
		}
		s = s[len(m[0]):]
		d, err := time.ParseDuration(m[0])
		if err != nil { // valid syntax: the part alone overflows
			over = true
			continue
		}
		sum.Add(sum, big.NewInt(int64(d)))
	}
	switch {
	case neg && (over || sum.Sign() > 0):
		return 0, false
	case over || !sum.IsInt64():
		return tooLong, true
	}
	return time.Duration(sum.Int64()), true
}

func FuzzParseDuration(f *testing.F) {
	for _, v := range []string{"1s", "6m0s", "20ms", "1m30.5s", "1h2m3.5s4ms5us6ns", "1µs", "0", "-0s", "+5s",
		".5s", "1.s", "0.3333333333333333333333h", "9223372036854775808ns9223372036854775808ns",
		"2562047h47m16.854775808s", "99999999999999999999h1x", "-1s", "1e3s", "1", "", "1sx"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, ok := parseDuration(v)
		want, wantOK := wantDuration(v)
		if ok != wantOK || got != want {
			t.Fatalf("parseDuration(%q): got %v, %v, want %v, %v", v, got, ok, want, wantOK)
		}
		if d, err := time.ParseDuration(v); err == nil && d >= 0 && ok && got != tooLong && got != d {
			t.Fatalf("parseDuration(%q): got %v, time.ParseDuration gives %v", v, got, d)
		}
	})
}

// The formats of OpenAI's and Anthropic's reset headers, read through
// parseServerDelay as a policy's delay headers.
func TestDelayHeaderDurationAndRFC3339(t *testing.T) {
	t.Parallel()
	extra := []policy.DelayHeader{
		{Name: "X-Ratelimit-Reset-Requests", Format: policy.DelayDuration},
		{Name: "Anthropic-Ratelimit-Requests-Reset", Format: policy.DelayRFC3339},
	}
	at := func(d time.Duration) string { return fixedNow.Add(d).Format(time.RFC3339) }
	date := func(d time.Duration) string { return fixedNow.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		name string
		h    http.Header
		want serverDelay
	}{
		{"duration", http.Header{"X-Ratelimit-Reset-Requests": {"6m0s"}}, serverDelay{delayHeader, 6 * time.Minute}},
		{"duration with a fraction", http.Header{"X-Ratelimit-Reset-Requests": {" 1m30.5s\t"}}, serverDelay{delayHeader, 90500 * time.Millisecond}},
		{"duration saturates", http.Header{"X-Ratelimit-Reset-Requests": {"99999999999h"}}, serverDelay{delayHeader, tooLong}},
		{"negative duration skipped", http.Header{"X-Ratelimit-Reset-Requests": {"-1s"},
			"Anthropic-Ratelimit-Requests-Reset": {at(time.Minute)}}, serverDelay{delayHeader, time.Minute}},
		{"garbage duration skipped", http.Header{"X-Ratelimit-Reset-Requests": {"1 s"}}, serverDelay{}},
		{"rfc3339", http.Header{"Anthropic-Ratelimit-Requests-Reset": {"2025-11-22T12:00:30Z"}}, serverDelay{delayHeader, 30 * time.Second}},
		{"rfc3339 with an offset", http.Header{"Anthropic-Ratelimit-Requests-Reset": {"2025-11-22T13:00:30+01:00"}}, serverDelay{delayHeader, 30 * time.Second}},
		{"rfc3339 with a fraction", http.Header{"Anthropic-Ratelimit-Requests-Reset": {"2025-11-22T12:00:00.25Z"}}, serverDelay{delayHeader, 250 * time.Millisecond}},
		{"rfc3339 past", http.Header{"Anthropic-Ratelimit-Requests-Reset": {at(-time.Hour)}}, serverDelay{delayHeader, 0}},
		{"rfc3339 against Date", http.Header{"Anthropic-Ratelimit-Requests-Reset": {at(time.Hour + 10*time.Second)},
			"Date": {date(time.Hour)}}, serverDelay{delayHeader, 10 * time.Second}},
		{"rfc3339 far future saturates", http.Header{"Anthropic-Ratelimit-Requests-Reset": {"9999-12-31T23:59:59Z"}}, serverDelay{delayHeader, tooLong}},
		{"rfc3339 without a zone skipped", http.Header{"Anthropic-Ratelimit-Requests-Reset": {"2025-11-22T12:00:30"}}, serverDelay{}},
		{"HTTP-date is not rfc3339", http.Header{"Anthropic-Ratelimit-Requests-Reset": {date(time.Minute)}}, serverDelay{}},
		{"first listed wins", http.Header{"X-Ratelimit-Reset-Requests": {"20ms"},
			"Anthropic-Ratelimit-Requests-Reset": {at(time.Minute)}}, serverDelay{delayHeader, 20 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := parseServerDelay(tt.h, fixedNow, extra)
			assert.Equal(t, tt.want, got, "got %+v, want %+v", got, tt.want)
		})
	}
	assert.True(t, strings.HasSuffix(at(0), "Z"), "got %q, want the test's times in UTC", at(0))
}

// An entry with a Remaining header counts only when that header reads
// exactly 0, as GitHub sends its reset time on every response.
func TestDelayHeaderRemaining(t *testing.T) {
	t.Parallel()
	extra := []policy.DelayHeader{
		{Name: "X-Ratelimit-Reset", Format: policy.DelayUnixSeconds, Remaining: "X-Ratelimit-Remaining"},
		{Name: "Ratelimit-Reset", Format: policy.DelaySeconds},
	}
	reset := strconv.FormatInt(fixedNow.Add(time.Minute).Unix(), 10)
	tests := []struct {
		name      string
		remaining []string // nil: absent
		want      serverDelay
	}{
		{"zero", []string{"0"}, serverDelay{delayHeader, time.Minute}},
		{"zero with whitespace", []string{" 0\t"}, serverDelay{delayHeader, time.Minute}},
		{"first of several", []string{"0", "5"}, serverDelay{delayHeader, time.Minute}},
		{"absent", nil, serverDelay{delayHeader, 7 * time.Second}},
		{"some left", []string{"5"}, serverDelay{delayHeader, 7 * time.Second}},
		{"not first of several", []string{"5", "0"}, serverDelay{delayHeader, 7 * time.Second}},
		{"leading zero", []string{"00"}, serverDelay{delayHeader, 7 * time.Second}},
		{"negative zero", []string{"-0"}, serverDelay{delayHeader, 7 * time.Second}},
		{"empty", []string{""}, serverDelay{delayHeader, 7 * time.Second}},
		{"garbage", []string{"none"}, serverDelay{delayHeader, 7 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{"X-Ratelimit-Reset": {reset}, "Ratelimit-Reset": {"7"}}
			if tt.remaining != nil {
				h["X-Ratelimit-Remaining"] = tt.remaining
			}
			got := parseServerDelay(h, fixedNow, extra)
			assert.Equal(t, tt.want, got, "got %+v, want %+v", got, tt.want)
		})
	}
	t.Run("zero without its delay", func(t *testing.T) {
		t.Parallel()
		h := http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"soon"}}
		got := parseServerDelay(h, fixedNow, extra)
		assert.Equal(t, serverDelay{}, got, "got %+v, want none", got)
	})
}
