package retryhttp

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/internal/sfv"
	"github.com/retryhttp/retryhttp/policy"
)

// headerRateLimit is the IETF RateLimit field
// (draft-ietf-httpapi-ratelimit-headers), in canonical form: a Structured
// Field List of the quota policies that apply to the request, each item
// with r, the quota units remaining, and t, the seconds until more are
// given, as in RateLimit: "burst";r=50;t=10, "day";r=0;t=3600.
const headerRateLimit = "Ratelimit"

// headerRateLimitPolicy is the IETF RateLimit-Policy field, in canonical
// form: the quota policies of the host, each item with q, the quota units
// a window gives, and w, the window's length in seconds, as in
// RateLimit-Policy: "default";q=100;w=1.
const headerRateLimitPolicy = "Ratelimit-Policy"

// quota is what a response's rate-limit fields say of its host's quota,
// for its pace: left says at most r more requests are granted before t
// (the tightest quota of the fields: the least r per second); limit is
// the most requests per second a RateLimit-Policy grants, 0 when none is
// given.
type quota struct {
	left  bool
	r     int64
	t     time.Duration
	limit float64
}

// quotaLeft reads what h says of a quota that is not spent: the RateLimit
// field's items with r above 0 and a t, the tightest winning, or else the
// first entry of extra whose Remaining header reads above 0 and whose
// delay reads; and the RateLimit-Policy's tightest q per w. A spent quota
// is quotaSpent's. It allocates nothing on a response without these
// fields, nor on one that has them on one line each.
func quotaLeft(h http.Header, now time.Time, extra []policy.DelayHeader) quota {
	var q quota
	if l, ok := fieldList(h, headerRateLimit); ok {
		for m := range l.Members() {
			r, rok := m.Params.Get("r")
			t, tok := m.Params.Get("t")
			if m.IsInnerList() || !rok || !tok || r.Kind != sfv.Integer || t.Kind != sfv.Integer || r.Int <= 0 || t.Int < 0 {
				continue
			}
			if !q.left || float64(r.Int)*q.t.Seconds() < float64(q.r)*float64(t.Int) { // r/t < q.r/q.t
				q.left, q.r, q.t = true, r.Int, scale(t.Int, time.Second)
			}
		}
	}
	for _, d := range extra {
		if q.left {
			break
		}
		if d.Remaining == "" {
			continue // a plain delay header: it says nothing of the quota left
		}
		if r, ok := remaining(h, d.Remaining); ok && r > 0 {
			if v, ok := firstValue(h, d.Name); ok {
				if t, ok := parseDelayValue(trimOWS(v), d.Format, h, now); ok {
					q.left, q.r, q.t = true, r, t
				}
			}
		}
	}
	if l, ok := fieldList(h, headerRateLimitPolicy); ok {
		for m := range l.Members() {
			n, nok := m.Params.Get("q")
			w, wok := m.Params.Get("w")
			if m.IsInnerList() || !nok || !wok || n.Kind != sfv.Integer || w.Kind != sfv.Integer || n.Int <= 0 || w.Int <= 0 {
				continue
			}
			if rate := float64(n.Int) / float64(w.Int); q.limit == 0 || rate < q.limit {
				q.limit = rate
			}
		}
	}
	return q
}

// remaining reads the header remaining (canonical), a count of requests
// left in a quota, as a non-negative decimal integer.
func remaining(h http.Header, name string) (int64, bool) {
	v, ok := firstValue(h, name)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(trimOWS(v), 10, 64)
	return n, err == nil && n >= 0
}

// quotaSpent reads the fields of a response that say its host's quota is
// spent, on any status, a 2xx included: a hold is set from them (see
// policy.Hold). now is the time the response was received, and extra the
// policy's delay headers, their names canonical. It is pure.
//
// The first that says so wins, in the order parseServerDelay reads them:
// the IETF RateLimit field with a spent item (the wait is the longest t of
// its items at r=0), then each entry of extra that names a Remaining
// header, when that header reads 0 and the entry's delay reads (the wait
// is that delay). An entry without Remaining says nothing here: a reset
// time sent on every response does not mean the quota is spent.
//
// It allocates nothing on a response that has none of these headers, so
// that the success path pays nothing for holds, nor when they are present
// on one line each and read as they should (a RateLimit field sent on
// several lines is joined first, as RFC 9651 asks).
func quotaSpent(h http.Header, now time.Time, extra []policy.DelayHeader) (wait time.Duration, ok bool) {
	if wait, ok := rateLimitSpent(h); ok {
		return wait, true
	}
	for _, d := range extra {
		if d.Remaining == "" {
			continue
		}
		if wait, ok := extraDelay(h, now, d); ok {
			return wait, true
		}
	}
	return 0, false
}

// rateLimitSpent reads the RateLimit field of h: the longest t of its
// items whose r is 0, a spent quota, and whether there is one. The wait
// saturates at tooLong.
//
// A field that is not a valid Structured Field List is ignored as a
// whole, as the draft asks. An item says a quota is spent only when its r
// is the Integer 0 and its t a non-negative Integer, as the draft writes
// them: an item without t, with either of another type or negative, or
// an inner list, says nothing, and the other items are still read. The
// item's own value, the policy's name, is not looked at.
func rateLimitSpent(h http.Header) (time.Duration, bool) {
	l, ok := fieldList(h, headerRateLimit)
	if !ok {
		return 0, false
	}
	longest := int64(-1)
	for m := range l.Members() {
		r, ok := m.Params.Get("r")
		if m.IsInnerList() || !ok || r != (sfv.Item{Kind: sfv.Integer}) {
			continue
		}
		if t, ok := m.Params.Get("t"); ok && t.Kind == sfv.Integer && t.Int >= 0 {
			longest = max(longest, t.Int)
		}
	}
	if longest < 0 {
		return 0, false
	}
	return scale(longest, time.Second), true
}

// fieldList parses h's field name (canonical) as a Structured Field List,
// reporting false when it is absent or is not one: a malformed field is
// ignored as a whole, as the draft asks.
func fieldList(h http.Header, name string) (sfv.List, bool) {
	vs := h[name]
	if len(vs) == 0 {
		return sfv.List{}, false
	}
	v := trimOWS(vs[0])
	if len(vs) > 1 {
		// RFC 9651 reads a field sent on several lines as their values
		// joined, even where that joins one item's halves.
		var b strings.Builder
		for i, line := range vs {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(trimOWS(line))
		}
		v = b.String()
	}
	l, err := sfv.ParseList(v)
	return l, err == nil
}
