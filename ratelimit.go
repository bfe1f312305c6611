package retryhttp

import (
	"net/http"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/internal/sfv"
)

// headerRateLimit is the IETF RateLimit field
// (draft-ietf-httpapi-ratelimit-headers), in canonical form: a Structured
// Field List of the quota policies that apply to the request, each item
// with r, the quota units remaining, and t, the seconds until more are
// given, as in RateLimit: "burst";r=50;t=10, "day";r=0;t=3600.
const headerRateLimit = "Ratelimit"

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
