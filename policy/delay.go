package policy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// DelayFormat names how the value of a server delay header is written:
// one of [DelaySeconds], [DelayMilliseconds], [DelayUnixSeconds],
// [DelayHTTPDate], [DelayDuration] and [DelayRFC3339], spelled as in
// JSON. The zero DelayFormat is not valid.
type DelayFormat string

// The formats of a [DelayHeader]'s value. A value that is not valid in its
// header's format is skipped, as if the header were absent.
const (
	// DelaySeconds is a delay in seconds, which may have a fraction:
	// "30", "1.5".
	DelaySeconds DelayFormat = "seconds"
	// DelayMilliseconds is a delay in milliseconds: "250".
	DelayMilliseconds DelayFormat = "milliseconds"
	// DelayUnixSeconds is the time to retry at, in seconds since the Unix
	// epoch: "1735689600". It is read against the response's Date header
	// when there is one, so that a skewed server clock does not skew the
	// wait.
	DelayUnixSeconds DelayFormat = "unixSeconds"
	// DelayHTTPDate is the time to retry at as an HTTP-date, as in
	// Retry-After: "Wed, 01 Jan 2025 00:00:00 GMT". It is read against the
	// response's Date header when there is one.
	DelayHTTPDate DelayFormat = "httpDate"
	// DelayDuration is a delay written as a Go duration, as OpenAI's API
	// sends its x-ratelimit-reset-requests: "1s", "6m0s", "20ms",
	// "1m30.5s". A negative duration is not valid; one too long to
	// represent is read as the longest, which is never waited for.
	DelayDuration DelayFormat = "duration"
	// DelayRFC3339 is the time to retry at as an RFC 3339 timestamp, as
	// Anthropic's API sends its anthropic-ratelimit-requests-reset:
	// "2026-11-25T10:00:00Z". It is read against the response's Date
	// header when there is one; a time already past means at once.
	DelayRFC3339 DelayFormat = "rfc3339"
)

// maxDelayHeaders bounds Config.DelayHeaders: every retryable response may
// be searched for each of them, and no server sends more than a few.
const maxDelayHeaders = 16

// DelayHeader is a response header, beyond those always read (see
// [Config.DelayHeaders]), in which a server says how long to wait before a
// retry, such as X-RateLimit-Reset or RateLimit-Reset.
//
// Name is the header's name, matched case-insensitively; it must be an
// HTTP field name, and neither X-Retry-Pushback-Ms nor Retry-After, which
// are always read. Format is how its value is written, one of the Delay
// constants.
//
// Remaining, when set, names a header that must read 0 for the entry's
// delay to count: the count of requests left in the quota that Name's
// time resets, as GitHub, X and Discord send X-RateLimit-Remaining beside
// X-RateLimit-Reset on every response, spent or not. Such an entry's
// delay counts only when Remaining reads exactly "0" (around it, optional
// whitespace); any other value, or none, skips the entry. When it counts,
// it means the quota is spent on any status, a 200 included, and the
// Transport then sets a hold from it (see [Config.Hold]). Remaining must
// be an HTTP field name other than Name, X-Retry-Pushback-Ms and
// Retry-After; empty means none, and the delay counts whenever Name is
// present and valid.
//
// The zero DelayHeader is not valid. JSON: {"name": "X-RateLimit-Reset",
// "format": "unixSeconds", "remaining": "X-RateLimit-Remaining"}, as
// GitHub sends them: its reset is a Unix time, never a count of seconds.
type DelayHeader struct {
	Name      string
	Format    DelayFormat
	Remaining string
}

// ServerDelayHeaders returns c.DelayHeaders in the order listed, each Name
// and Remaining in canonical form (as [http.CanonicalHeaderKey] gives it),
// so that an [http.Header] can be indexed with them directly, with no work
// per response. It returns a new slice on each call, for the caller to keep;
// a nil Config, or one without DelayHeaders, gives nil.
//
// ServerDelayHeaders only reads c, so it is safe for concurrent use.
func (c *Config) ServerDelayHeaders() []DelayHeader {
	if c == nil || len(c.DelayHeaders) == 0 {
		return nil
	}
	hs := make([]DelayHeader, len(c.DelayHeaders))
	for i, h := range c.DelayHeaders {
		hs[i] = DelayHeader{
			Name:      http.CanonicalHeaderKey(h.Name),
			Format:    h.Format,
			Remaining: http.CanonicalHeaderKey(h.Remaining),
		}
	}
	return hs
}

// validateDelayHeaders checks hs, found at p: the count first, so that
// the search for repeated names stays small.
func validateDelayHeaders(p path, hs []DelayHeader) error {
	if len(hs) > maxDelayHeaders {
		return &FieldError{Field: p.String(), Value: strconv.Itoa(len(hs)) + " headers",
			Reason: "must list at most " + strconv.Itoa(maxDelayHeaders) + " headers"}
	}
	for i, h := range hs {
		at := p.index(i)
		if err := h.validate(at); err != nil {
			return err
		}
		for j := range i {
			if strings.EqualFold(hs[j].Name, h.Name) {
				return &FieldError{Field: at.key("name", "Name").String(), Value: strconv.Quote(h.Name),
					Reason: "repeats " + p.index(j).key("name", "Name").String()}
			}
		}
	}
	return nil
}

func (h DelayHeader) validate(p path) error {
	name := p.key("name", "Name").String()
	switch {
	case !isToken(h.Name):
		return &FieldError{Field: name, Value: strconv.Quote(h.Name), Reason: "must be an HTTP header name"}
	case strings.EqualFold(h.Name, "X-Retry-Pushback-Ms"), strings.EqualFold(h.Name, "Retry-After"):
		return &FieldError{Field: name, Value: strconv.Quote(h.Name), Reason: "is always read, before the listed headers; leave it out"}
	}
	switch h.Format {
	case DelaySeconds, DelayMilliseconds, DelayUnixSeconds, DelayHTTPDate, DelayDuration, DelayRFC3339:
	default:
		return &FieldError{Field: p.key("format", "Format").String(), Value: strconv.Quote(string(h.Format)),
			Reason: `must be one of "seconds", "milliseconds", "unixSeconds", "httpDate", "duration" and "rfc3339"`}
	}
	remaining := p.key("remaining", "Remaining").String()
	switch {
	case h.Remaining == "":
		return nil
	case !isToken(h.Remaining):
		return &FieldError{Field: remaining, Value: strconv.Quote(h.Remaining), Reason: "must be an HTTP header name"}
	case strings.EqualFold(h.Remaining, h.Name):
		return &FieldError{Field: remaining, Value: strconv.Quote(h.Remaining), Reason: "must name another header than " + p.name("name", "Name")}
	case strings.EqualFold(h.Remaining, "X-Retry-Pushback-Ms"), strings.EqualFold(h.Remaining, "Retry-After"):
		return &FieldError{Field: remaining, Value: strconv.Quote(h.Remaining),
			Reason: "is always read as a delay; it cannot count the requests left"}
	}
	return nil
}

type delayHeaderJSON struct {
	Name      string      `json:"name"`
	Format    DelayFormat `json:"format"`
	Remaining string      `json:"remaining"`
}

// parseDelayHeaders reads "serverDelayHeaders", each entry on its own so
// that an error names its index. Values are checked by Validate.
func parseDelayHeaders(path string, raws []json.RawMessage) ([]DelayHeader, error) {
	if raws == nil {
		return nil, nil
	}
	if len(raws) > maxDelayHeaders {
		// Counted before the entries are read, as Validate counts them
		// first: each entry read costs a decoder of its own.
		return nil, &FieldError{Field: path, Value: strconv.Itoa(len(raws)) + " headers",
			Reason: "must list at most " + strconv.Itoa(maxDelayHeaders) + " headers"}
	}
	hs := make([]DelayHeader, len(raws))
	for i, raw := range raws {
		var m delayHeaderJSON
		if err := decodeObject(fmt.Sprintf("%s[%d]", path, i), raw, &m); err != nil {
			return nil, err
		}
		hs[i] = DelayHeader(m)
	}
	return hs, nil
}
