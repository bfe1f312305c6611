package retryhttp

import (
	"net/http"
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
	vs := h[headerRateLimit]
	if len(vs) == 0 {
		return 0, false
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
	if err != nil {
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
