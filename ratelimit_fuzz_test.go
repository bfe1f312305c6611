package retryhttp

import (
	"math/big"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/internal/sfv"
	"github.com/retryhttp/retryhttp/policy"
)

// decimalSyntax is what parseDecimal reads: digits, then optionally a
// point and more digits.
var decimalSyntax = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// FuzzParseDecimal checks the reading of a delay in seconds or
// milliseconds, a fraction allowed, against exact arithmetic: the value
// times its unit, truncated to the nanosecond and saturated at tooLong,
// for exactly the values that decimalSyntax accepts.
func FuzzParseDecimal(f *testing.F) {
	for _, v := range []string{"0", "7", "1.25", "0.0000000019", "250.5", "007.50", "9223372036.854775807",
		"9223372036.854775808", "99999999999999999999.9", "1.", ".5", "-1", "+1", "1e3", "1,5", " 1", "1..2", ""} {
		f.Add(v, false)
		f.Add(v, true)
	}
	f.Fuzz(func(t *testing.T, v string, ms bool) {
		unit := time.Second
		if ms {
			unit = time.Millisecond
		}
		got, ok := parseDecimal(v, unit)
		if want := decimalSyntax.MatchString(v); ok != want {
			t.Fatalf("parseDecimal(%q, %v): got ok %v, want %v", v, unit, ok, want)
		}
		if !ok {
			if got != 0 {
				t.Fatalf("parseDecimal(%q, %v): invalid, with %v", v, unit, got)
			}
			return
		}
		exact, _ := new(big.Rat).SetString(v)
		exact.Mul(exact, new(big.Rat).SetInt64(int64(unit)))
		ns := new(big.Int).Quo(exact.Num(), exact.Denom()) // truncated: both are positive
		want := tooLong
		if ns.IsInt64() && ns.Int64() < int64(tooLong) {
			want = time.Duration(ns.Int64())
		}
		if got != want {
			t.Fatalf("parseDecimal(%q, %v): got %v, want %v", v, unit, got, want)
		}
	})
}

// FuzzQuotaLeft reads any RateLimit and RateLimit-Policy fields, and a
// count left beside a reset, and checks what quotaLeft gives against the
// fields' own items: a quota left only with r above 0 and t at least 0,
// the tightest of the RateLimit's valid items; a limit that is the
// least q/w of the policy's valid items; nothing from a field that is
// not a valid List.
func FuzzQuotaLeft(f *testing.F) {
	f.Add(`"burst";r=50;t=10, "day";r=1000;t=3600`, `"default";q=100;w=1, "hour";q=600;w=3600`, "5", "30")
	f.Add(`"a";r=0;t=5`, `"a";q=0;w=1, "b";q=10;w=0`, "0", "30")
	f.Add(`"a";r=5;t=0`, `("a");q=10;w=1`, "-1", "soon")
	f.Add(`"a";r=5.0;t=10, "b";r=2;t=1.5`, `"a";q=10;w=1;q=5`, "00", "1.5")
	f.Add(`"a";r=999999999999999;t=999999999999999`, `"a";q=999999999999999;w=1`, "9223372036854775807", "99999999999999999999")
	f.Add(`"a";r=5;t=10,`, `"a";q=1;w=1,`, " 7 ", "")
	extra := []policy.DelayHeader{{Name: "X-Reset", Format: policy.DelaySeconds, Remaining: "X-Left"}}
	f.Fuzz(func(t *testing.T, rateLimit, rateLimitPolicy, left, reset string) {
		h := http.Header{"Ratelimit": {rateLimit}, "Ratelimit-Policy": {rateLimitPolicy}, "X-Left": {left}, "X-Reset": {reset}}
		q := quotaLeft(h, fixedNow, extra)
		if q.left != (q.r > 0) || q.t < 0 || q.t > tooLong || q.limit < 0 {
			t.Fatalf("%v: got %+v", h, q)
		}
		// The RateLimit's valid items with quota left, by their own
		// reading; the tightest has the least r/t.
		var fromField bool
		if l, err := sfv.ParseList(strings.Trim(rateLimit, " \t")); err == nil {
			for m := range l.Members() {
				r, rok := m.Params.Get("r")
				tt, tok := m.Params.Get("t")
				if m.IsInnerList() || !rok || !tok || r.Kind != sfv.Integer || tt.Kind != sfv.Integer || r.Int <= 0 || tt.Int < 0 {
					continue
				}
				fromField = true
				// q.r per q.t is no looser than r per t: q.r*t <= r*q.t,
				// t saturated as a Duration is. The code compares in
				// float64, so near-ties may go either way.
				item := scale(tt.Int, time.Second).Seconds()
				if float64(q.r)*item > float64(r.Int)*q.t.Seconds()*(1+1e-9) {
					t.Fatalf("%v: got %d per %v, looser than the item %d per %ds", h, q.r, q.t, r.Int, tt.Int)
				}
			}
		}
		if fromField && !q.left {
			t.Fatalf("%v: a RateLimit item with quota left, but none read", h)
		}
		if !fromField && q.left && left != "" && strings.Trim(left, " \t") == "0" {
			t.Fatalf("%v: quota left read from a count of 0", h)
		}
		var least float64
		if l, err := sfv.ParseList(strings.Trim(rateLimitPolicy, " \t")); err == nil {
			for m := range l.Members() {
				n, nok := m.Params.Get("q")
				w, wok := m.Params.Get("w")
				if m.IsInnerList() || !nok || !wok || n.Kind != sfv.Integer || w.Kind != sfv.Integer || n.Int <= 0 || w.Int <= 0 {
					continue
				}
				if rate := float64(n.Int) / float64(w.Int); least == 0 || rate < least {
					least = rate
				}
			}
		}
		if q.limit != least {
			t.Fatalf("%v: got a limit of %v per second, want %v", h, q.limit, least)
		}
	})
}
