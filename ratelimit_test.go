package retryhttp

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp/internal/sfv"
	"github.com/retryhttp/retryhttp/policy"
)

// Retry-After-Ms is Retry-After in milliseconds, read after
// X-Retry-Pushback-Ms and before Retry-After.
func TestParseServerDelayRetryAfterMs(t *testing.T) {
	t.Parallel()
	ra := func(d time.Duration) serverDelay { return serverDelay{Kind: delayRetryAfter, Wait: d} }
	tests := []struct {
		name string
		h    http.Header
		want serverDelay
	}{
		{"ms", http.Header{"Retry-After-Ms": {"250"}}, ra(250 * time.Millisecond)},
		{"zero", http.Header{"Retry-After-Ms": {"0"}}, ra(0)},
		{"fraction", http.Header{"Retry-After-Ms": {"1.5"}}, ra(1500 * time.Microsecond)},
		{"long fraction", http.Header{"Retry-After-Ms": {"0.0000019"}}, ra(time.Nanosecond)},
		{"whitespace", http.Header{"Retry-After-Ms": {" 20\t"}}, ra(20 * time.Millisecond)},
		{"first of several", http.Header{"Retry-After-Ms": {"20", "30"}}, ra(20 * time.Millisecond)},
		{"largest representable", http.Header{"Retry-After-Ms": {"9223372036854"}}, ra(9223372036854 * time.Millisecond)},
		{"saturates", http.Header{"Retry-After-Ms": {"9223372036855"}}, ra(tooLong)},
		{"saturates with a fraction", http.Header{"Retry-After-Ms": {"99999999999999999999.5"}}, ra(tooLong)},
		{"wins over Retry-After", http.Header{"Retry-After-Ms": {"20"}, "Retry-After": {"1"}}, ra(20 * time.Millisecond)},
		{"pushback wins over it", http.Header{"X-Retry-Pushback-Ms": {"100"}, "Retry-After-Ms": {"20"}},
			serverDelay{Kind: delayPushback, Wait: 100 * time.Millisecond}},
		{"negative skipped", http.Header{"Retry-After-Ms": {"-20"}, "Retry-After": {"1"}}, ra(time.Second)},
		{"garbage skipped", http.Header{"Retry-After-Ms": {"soon"}, "Retry-After": {"1"}}, ra(time.Second)},
		{"unit skipped", http.Header{"Retry-After-Ms": {"20ms"}, "Retry-After": {"1"}}, ra(time.Second)},
		{"trailing point skipped", http.Header{"Retry-After-Ms": {"20."}}, serverDelay{}},
		{"leading point skipped", http.Header{"Retry-After-Ms": {".5"}}, serverDelay{}},
		{"exponent skipped", http.Header{"Retry-After-Ms": {"1e3"}}, serverDelay{}},
		{"empty skipped", http.Header{"Retry-After-Ms": {""}}, serverDelay{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := parseServerDelay(tt.h, fixedNow, nil)
			assert.Equal(t, tt.want, got, "got %+v, want %+v", got, tt.want)
		})
	}
}

// x-amz-retry-after is AWS's Retry-After-Ms: milliseconds, read after
// Retry-After-Ms and before Retry-After, in any case of its name.
func TestParseServerDelayAmzRetryAfter(t *testing.T) {
	t.Parallel()
	ra := func(d time.Duration) serverDelay { return serverDelay{Kind: delayRetryAfter, Wait: d} }
	amz := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name string
		h    http.Header
		want serverDelay
	}{
		{"ms", amz("x-amz-retry-after", "1500"), ra(1500 * time.Millisecond)},
		{"zero", amz("X-Amz-Retry-After", "0"), ra(0)},
		{"fraction", amz("x-amz-retry-after", "2.5"), ra(2500 * time.Microsecond)},
		{"saturates", amz("x-amz-retry-after", "99999999999999999999"), ra(tooLong)},
		{"wins over Retry-After", amz("x-amz-retry-after", "20", "Retry-After", "1"), ra(20 * time.Millisecond)},
		{"Retry-After-Ms wins over it", amz("Retry-After-Ms", "30", "x-amz-retry-after", "20"), ra(30 * time.Millisecond)},
		{"after an invalid Retry-After-Ms", amz("Retry-After-Ms", "soon", "x-amz-retry-after", "20"), ra(20 * time.Millisecond)},
		{"pushback wins over it", amz("X-Retry-Pushback-Ms", "-1", "x-amz-retry-after", "20"), serverDelay{Kind: delayStop}},
		{"garbage skipped", amz("x-amz-retry-after", "20ms", "Retry-After", "1"), ra(time.Second)},
		{"negative skipped", amz("x-amz-retry-after", "-20"), serverDelay{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := parseServerDelay(tt.h, fixedNow, nil)
			assert.Equal(t, tt.want, got, "got %+v, want %+v", got, tt.want)
		})
	}
}

// The server's own verdict: X-Should-Retry, or else Stripe-Should-Retry,
// "true" or "false" in any case, on statuses 400 and above only.
func TestServerVerdict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		h      http.Header
		want   Verdict
	}{
		{"x true", 400, http.Header{"X-Should-Retry": {"true"}}, RetryableUnprocessed},
		{"x false", 503, http.Header{"X-Should-Retry": {" FALSE "}}, Final},
		{"stripe true", 400, http.Header{"Stripe-Should-Retry": {"true"}}, RetryableUnprocessed},
		{"stripe false", 500, http.Header{"Stripe-Should-Retry": {"False"}}, Final},
		{"x first", 500, http.Header{"X-Should-Retry": {"true"}, "Stripe-Should-Retry": {"false"}}, RetryableUnprocessed},
		{"stripe after an x that says nothing", 500, http.Header{"X-Should-Retry": {"maybe"}, "Stripe-Should-Retry": {"false"}}, Final},
		{"first value of several", 500, http.Header{"Stripe-Should-Retry": {"true", "false"}}, RetryableUnprocessed},
		{"neither", 500, http.Header{"Stripe-Should-Retry": {"1"}}, UsePolicy},
		{"none", 500, http.Header{}, UsePolicy},
		{"not on a success", 200, http.Header{"Stripe-Should-Retry": {"true"}}, UsePolicy},
		{"not on a redirect", 302, http.Header{"X-Should-Retry": {"false"}}, UsePolicy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := serverVerdict(&http.Response{StatusCode: tt.status, Header: tt.h})
			assert.Equal(t, tt.want, got, "got %v, want %v", got, tt.want)
		})
	}
}

// The IETF RateLimit field, read after Retry-After and before the
// policy's delay headers: a spent quota (r=0 with a t) is a delay of its
// longest t; anything else is no delay, and the next signal is read.
func TestParseServerDelayRateLimit(t *testing.T) {
	t.Parallel()
	rl := func(d time.Duration) serverDelay { return serverDelay{Kind: delayHeader, Wait: d} }
	tests := []struct {
		name  string
		lines []string
		want  serverDelay
	}{
		{"spent", []string{`"default";r=0;t=30`}, rl(30 * time.Second)},
		{"not spent", []string{`"default";r=50;t=30`}, serverDelay{}},
		{"one of two spent", []string{`"burst";r=50;t=10, "day";r=0;t=3600`}, rl(time.Hour)},
		{"longest of two spent", []string{`"a";r=0;t=60, "b";r=0;t=10`}, rl(time.Minute)},
		{"reset now", []string{`"default";r=0;t=0`}, rl(0)},
		{"with a partition key", []string{`"default";r=0;t=5;pk=:dHJpYWwxMjEzMjM=:`}, rl(5 * time.Second)},
		{"parameters in any order", []string{`"default";t=7;x="y";r=0`}, rl(7 * time.Second)},
		{"a token for a name", []string{`default;r=0;t=5`}, rl(5 * time.Second)},
		{"negative zero", []string{`"default";r=-0;t=5`}, rl(5 * time.Second)},
		{"surrounding whitespace", []string{" \t\"default\";r=0;t=5\t "}, rl(5 * time.Second)},
		{"t saturates", []string{`"default";r=0;t=999999999999999`}, rl(tooLong)},
		{"two lines", []string{`"a";r=5;t=1`, `"b";r=0;t=9`}, rl(9 * time.Second)},
		{"two lines joined as RFC 9651 asks", []string{`"a`, `b";r=0;t=5`}, rl(5 * time.Second)},
		{"no t", []string{`"default";r=0`}, serverDelay{}},
		{"no r", []string{`"default";t=30`}, serverDelay{}},
		{"last r wins", []string{`"default";r=0;t=5;r=3`}, serverDelay{}},
		{"last r wins, spent", []string{`"default";r=3;t=5;r=0`}, rl(5 * time.Second)},
		{"negative t skipped", []string{`"a";r=0;t=-1, "b";r=0;t=2`}, rl(2 * time.Second)},
		{"decimal t", []string{`"default";r=0;t=1.5`}, serverDelay{}},
		{"string t", []string{`"default";r=0;t="5"`}, serverDelay{}},
		{"decimal r", []string{`"default";r=0.0;t=5`}, serverDelay{}},
		{"boolean r", []string{`"default";r=?0;t=5`}, serverDelay{}},
		{"inner list", []string{`("default");r=0;t=5`}, serverDelay{}},
		{"empty", []string{""}, serverDelay{}},
		{"trailing comma", []string{`"default";r=0;t=30,`}, serverDelay{}},
		{"uppercase keys", []string{`"default";R=0;T=30`}, serverDelay{}},
		{"old draft's form", []string{`100, 100;w=60`}, serverDelay{}},
		{"malformed second line", []string{`"a";r=0;t=5`, `"b`}, serverDelay{}},
		{"empty second line", []string{`"a";r=0;t=5`, ``}, serverDelay{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := parseServerDelay(http.Header{"Ratelimit": tt.lines}, fixedNow, nil)
			assert.Equal(t, tt.want, got, "RateLimit %q: got %+v, want %+v", tt.lines, got, tt.want)
		})
	}
}

// The place of the RateLimit field in the read order.
func TestParseServerDelayRateLimitOrder(t *testing.T) {
	t.Parallel()
	extra := []policy.DelayHeader{{Name: "Ratelimit-Reset", Format: policy.DelaySeconds}}
	spent := `"default";r=0;t=30`
	tests := []struct {
		name string
		h    http.Header
		want serverDelay
	}{
		{"pushback first", http.Header{"X-Retry-Pushback-Ms": {"100"}, "Ratelimit": {spent}},
			serverDelay{delayPushback, 100 * time.Millisecond}},
		{"Retry-After-Ms first", http.Header{"Retry-After-Ms": {"100"}, "Ratelimit": {spent}},
			serverDelay{delayRetryAfter, 100 * time.Millisecond}},
		{"Retry-After first, as the draft asks", http.Header{"Retry-After": {"5"}, "Ratelimit": {spent}},
			serverDelay{delayRetryAfter, 5 * time.Second}},
		{"invalid Retry-After skipped", http.Header{"Retry-After": {"soon"}, "Ratelimit": {spent}},
			serverDelay{delayHeader, 30 * time.Second}},
		{"before the policy's headers", http.Header{"Ratelimit": {spent}, "Ratelimit-Reset": {"7"}},
			serverDelay{delayHeader, 30 * time.Second}},
		{"not spent: the policy's headers", http.Header{"Ratelimit": {`"default";r=1;t=30`}, "Ratelimit-Reset": {"7"}},
			serverDelay{delayHeader, 7 * time.Second}},
		{"malformed: the policy's headers", http.Header{"Ratelimit": {`"default";r=0;t=30,`}, "Ratelimit-Reset": {"7"}},
			serverDelay{delayHeader, 7 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := parseServerDelay(tt.h, fixedNow, extra)
			assert.Equal(t, tt.want, got, "got %+v, want %+v", got, tt.want)
		})
	}
}

// githubHeaders is what GitHub's API sends on every response: the
// quota's limit, what is left of it and when it resets, as a Unix time.
func githubHeaders(remaining string, reset time.Duration) http.Header {
	return http.Header{
		"Content-Type":          {"application/json; charset=utf-8"},
		"Date":                  {fixedNow.Format(http.TimeFormat)},
		"X-Ratelimit-Limit":     {"5000"},
		"X-Ratelimit-Remaining": {remaining},
		"X-Ratelimit-Reset":     {strconv.FormatInt(fixedNow.Add(reset).Unix(), 10)},
		"X-Ratelimit-Used":      {"4999"},
		"X-Ratelimit-Resource":  {"core"},
	}
}

// githubPolicy reads GitHub's reset only when nothing is left, and
// OpenAI's reset as a duration, likewise, with names canonical as
// policy.Config.ServerDelayHeaders gives them.
func githubPolicy() []policy.DelayHeader {
	return []policy.DelayHeader{
		{Name: "X-Ratelimit-Reset", Format: policy.DelayUnixSeconds, Remaining: "X-Ratelimit-Remaining"},
		{Name: "X-Ratelimit-Reset-Requests", Format: policy.DelayDuration, Remaining: "X-Ratelimit-Remaining-Requests"},
		{Name: "Ratelimit-Reset", Format: policy.DelaySeconds},
	}
}

func TestQuotaSpent(t *testing.T) {
	t.Parallel()
	with := func(h http.Header, kv ...string) http.Header {
		h = h.Clone()
		for i := 0; i < len(kv); i += 2 {
			h[kv[i]] = []string{kv[i+1]}
		}
		return h
	}
	plain := http.Header{"Content-Type": {"text/plain"}, "Date": {fixedNow.Format(http.TimeFormat)}}
	tests := []struct {
		name string
		h    http.Header
		wait time.Duration
		ok   bool
	}{
		{"nothing", plain, 0, false},
		{"nil header", nil, 0, false},
		{"GitHub, some left", githubHeaders("4999", time.Hour), 0, false},
		{"GitHub, spent", githubHeaders("0", time.Hour), time.Hour, true},
		{"GitHub, spent, reset past", githubHeaders("0", -time.Minute), 0, true},
		{"GitHub, spent, reset against Date", with(githubHeaders("0", time.Hour),
			"Date", fixedNow.Add(30*time.Minute).Format(http.TimeFormat)), 30 * time.Minute, true},
		{"GitHub, garbage left", githubHeaders("none", time.Hour), 0, false},
		{"GitHub, spent, garbage reset", with(githubHeaders("0", time.Hour), "X-Ratelimit-Reset", "soon"), 0, false},
		{"OpenAI, spent", with(plain, "X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "6m0s"),
			6 * time.Minute, true},
		{"OpenAI, some left", with(plain, "X-Ratelimit-Remaining-Requests", "59", "X-Ratelimit-Reset-Requests", "1s"), 0, false},
		{"first entry spent wins", with(githubHeaders("0", time.Hour),
			"X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "6m0s"), time.Hour, true},
		{"first entry unread, second spent", with(githubHeaders("0", time.Hour), "X-Ratelimit-Reset", "soon",
			"X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "6m0s"), 6 * time.Minute, true},
		{"an entry without Remaining says nothing", with(plain, "Ratelimit-Reset", "30"), 0, false},
		{"Retry-After says nothing", with(plain, "Retry-After", "30"), 0, false},
		{"pushback says nothing", with(plain, "X-Retry-Pushback-Ms", "30"), 0, false},
		{"RateLimit, spent", with(plain, "Ratelimit", `"default";r=0;t=30`), 30 * time.Second, true},
		{"RateLimit, some left", with(plain, "Ratelimit", `"default";r=3;t=30`), 0, false},
		{"RateLimit, malformed", with(plain, "Ratelimit", `"default";r=0;t=30;`), 0, false},
		{"RateLimit before the entries", with(githubHeaders("0", time.Hour), "Ratelimit", `"default";r=0;t=30`),
			30 * time.Second, true},
		{"RateLimit some left, an entry spent", with(githubHeaders("0", time.Hour), "Ratelimit", `"default";r=3;t=30`),
			time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wait, ok := quotaSpent(tt.h, fixedNow, githubPolicy())
			assert.Equal(t, tt.ok, ok, "got ok %v, want %v", ok, tt.ok)
			assert.Equal(t, tt.wait, wait, "got wait %v, want %v", wait, tt.wait)
		})
	}
}

// Reading a response's rate-limit fields allocates nothing: not on the
// success path, where there are none or nothing is spent, and not when a
// quota is spent either.
func TestQuotaSpentAllocatesNothing(t *testing.T) {
	plain := http.Header{"Content-Type": {"text/plain"}, "Date": {fixedNow.Format(http.TimeFormat)}}
	openAI := plain.Clone()
	openAI["X-Ratelimit-Remaining-Requests"] = []string{"0"}
	openAI["X-Ratelimit-Reset-Requests"] = []string{"1m30.5s"}
	ietf := plain.Clone()
	ietf["Ratelimit"] = []string{`"burst";r=50;t=10;pk=:dHJpYWwxMjEzMjM=:, "day";r=0;t=3600`}
	malformed := plain.Clone()
	malformed["Ratelimit"] = []string{`"burst";r=50;t=10,`}
	extra := githubPolicy()
	for name, h := range map[string]http.Header{
		"no rate-limit fields":   plain,
		"GitHub, some left":      githubHeaders("4999", time.Hour),
		"GitHub, spent":          githubHeaders("0", time.Hour),
		"OpenAI, spent":          openAI,
		"RateLimit, spent":       ietf,
		"RateLimit, malformed":   malformed,
		"nil header, no entries": nil,
	} {
		allocs := testing.AllocsPerRun(100, func() {
			quotaSpent(h, fixedNow, extra)
		})
		assert.Zero(t, allocs, "%s: got %v allocations, want 0", name, allocs)
	}
}

func BenchmarkQuotaSpent(b *testing.B) {
	extra := githubPolicy()
	for _, bc := range []struct {
		name string
		h    http.Header
	}{
		{"none", http.Header{"Content-Type": {"text/plain"}, "Date": {fixedNow.Format(http.TimeFormat)}}},
		{"GitHub some left", githubHeaders("4999", time.Hour)},
		{"GitHub spent", githubHeaders("0", time.Hour)},
		{"RateLimit spent", http.Header{"Ratelimit": {`"burst";r=50;t=10, "day";r=0;t=3600`}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				quotaSpent(bc.h, fixedNow, extra)
			}
		})
	}
}

// FuzzServerDelayOrder sends every signal at once, each present or not,
// and checks that the first one that reads alone is the one read, in the
// documented order; and that a spent quota is the delay that the same
// response gives once the retry signals are taken away.
func FuzzServerDelayOrder(f *testing.F) {
	f.Add("250", "20", "5", `"default";r=0;t=30`, "7", "0", uint8(0xff))
	f.Add("", "-1", "soon", `"a";r=0;t=60, "b";r=0;t=10`, "7", "0", uint8(0xfe))
	f.Add("", "1.5", "", `"default";r=1;t=30`, "1m30.5s", "5", uint8(0xfa))
	f.Add("", "", "", `"default";r=0;t=30,`, "99999999999999999999", "0", uint8(0xf8))
	f.Add("", "", "Sat, 22 Nov 2025 12:00:30 GMT", `("a");r=0;t=1`, "-1s", "0", uint8(0xf4))
	extra := []policy.DelayHeader{
		{Name: "X-Reset", Format: policy.DelaySeconds, Remaining: "X-Left"},
		{Name: "X-Reset-In", Format: policy.DelayDuration},
	}
	f.Fuzz(func(t *testing.T, pushback, retryAfterMs, retryAfter, rateLimit, reset, left string, present uint8) {
		signals := []struct {
			bit    uint8
			header http.Header
		}{
			{1, http.Header{"X-Retry-Pushback-Ms": {pushback}}},
			{2, http.Header{"Retry-After-Ms": {retryAfterMs}}},
			{4, http.Header{"Retry-After": {retryAfter}}},
			{8, http.Header{"Ratelimit": {rateLimit}}},
			{16, http.Header{"X-Reset": {reset}, "X-Left": {left}}},
			{32, http.Header{"X-Reset-In": {reset}}},
		}
		h := http.Header{}
		var want serverDelay
		for _, s := range signals {
			if present&s.bit == 0 {
				continue
			}
			for k, v := range s.header {
				h[k] = v
			}
			if alone := parseServerDelay(s.header, fixedNow, extra); want.Kind == delayNone {
				want = alone
			}
		}
		got := parseServerDelay(h, fixedNow, extra)
		if got != want {
			t.Fatalf("%v: got %+v, want %+v, the first signal that reads alone", h, got, want)
		}
		if got.Wait < 0 || (got.Kind == delayNone || got.Kind == delayStop) && got.Wait != 0 {
			t.Fatalf("%v: got %+v", h, got)
		}

		wait, ok := quotaSpent(h, fixedNow, extra)
		quota := h.Clone()
		delete(quota, "X-Retry-Pushback-Ms")
		delete(quota, "Retry-After-Ms")
		delete(quota, "Retry-After")
		sd := parseServerDelay(quota, fixedNow, extra)
		switch {
		case ok && sd != (serverDelay{Kind: delayHeader, Wait: wait}):
			t.Fatalf("%v: quota spent for %v, but its delay is %+v", h, wait, sd)
		case !ok && sd.Kind != delayNone && sd != parseServerDelay(http.Header{"X-Reset-In": quota["X-Reset-In"]}, fixedNow, extra):
			t.Fatalf("%v: no quota spent, but a delay of %+v not from the entry without Remaining", h, sd)
		case !ok && wait != 0:
			t.Fatalf("%v: no quota spent, with a wait of %v", h, wait)
		}
	})
}

// FuzzRateLimit reads any RateLimit field: a spent quota only from a
// field that is a valid List, with a wait in range.
func FuzzRateLimit(f *testing.F) {
	for _, s := range []string{`"default";r=0;t=30`, `"burst";r=50;t=10, "day";r=0;t=3600`, `"default";r=0;t=999999999999999`,
		`"a";r=0;t=-1, "b";r=0;t=2`, `("default");r=0;t=5`, `"default";r=0;t=30,`, `"default";r=0`, `default;r=-0;t=0`, ""} {
		f.Add(s, "")
		f.Add(s, `"second";r=0;t=7`)
	}
	f.Fuzz(func(t *testing.T, first, second string) {
		lines := []string{first}
		if second != "" {
			lines = append(lines, second)
		}
		wait, ok := rateLimitSpent(http.Header{"Ratelimit": lines})
		if !ok {
			if wait != 0 {
				t.Fatalf("%q: no spent quota, with a wait of %v", lines, wait)
			}
			return
		}
		if wait < 0 || wait > tooLong || wait%time.Second != 0 && wait != tooLong {
			t.Fatalf("%q: got a wait of %v, want whole seconds in [0, tooLong]", lines, wait)
		}
		joined := strings.Trim(first, " \t")
		if second != "" {
			joined += ", " + strings.Trim(second, " \t")
		}
		if _, err := sfv.ParseList(joined); err != nil {
			t.Fatalf("%q: spent quota from a malformed field: %v", lines, err)
		}
		if !strings.Contains(joined, "r=0") && !strings.Contains(joined, "r=-0") && !strings.Contains(joined, "r=00") {
			t.Fatalf("%q: spent quota with no r of 0", lines)
		}
	})
}
