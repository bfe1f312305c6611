package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Validate reports the first bad value in c, in the order the fields appear
// in the JSON form: each rule's names, then its policies, then the throttle,
// MaxServerDelay and DelayHeaders. The error is a *[FieldError] naming the field and
// the value, and matches [ErrInvalid]. A nil Config is invalid too.
//
// The limits are those of gRPC's retry design: MaxAttempts at least 2,
// InitialBackoff above 0, MaxBackoff at least InitialBackoff,
// BackoffMultiplier at least 1 and finite, Jitter in [0, 1], status codes
// in 100..599, no negative durations, HedgingDelayQuantile in [0, 1),
// MaxTokens in (0, 1000], TokenRatio in (0, 1]; and MaxExtraLoad, a
// hedging policy's load budget, in [0, 1]. A Rule must list at least
// one Name (Name{} matches every request) and may not set both Retry and
// Hedge. A Name's Method, if set, must be an HTTP token and its Path, if
// set, must start with "/".
//
// A Retry whose Backoff is set must leave the four numeric backoff fields
// zero, and its Backoff must not be a nil pointer or func. The package's
// own backoffs, by value or by pointer, are checked too: [Exponential] and
// [FullJitter] need Initial above 0, Max 0 (no cap) or at least Initial,
// Multiplier at least 1 and finite, and an Exponential's Jitter in [0, 1];
// [GoogleAPI] needs Max not negative; a [Table] needs 1 to 100 steps, none
// negative. A caller's own Backoff is accepted as it is.
//
// DelayHeaders may list at most 16 headers, each Name an HTTP field name,
// neither X-Retry-Pushback-Ms nor Retry-After (always read first) and not
// repeated regardless of case, each Format one of the Delay constants,
// each Remaining empty or an HTTP field name other than its Name,
// X-Retry-Pushback-Ms and Retry-After.
func (c *Config) Validate() error {
	return clipped(c.validate())
}

func (c *Config) validate() error {
	if c == nil {
		return &FieldError{Reason: "config is nil"}
	}
	for i := range c.Rules {
		if err := c.Rules[i].validate(fmt.Sprintf("methodConfig[%d]", i), true); err != nil {
			return err
		}
	}
	if c.Throttle != nil {
		if err := c.Throttle.validate("retryThrottling"); err != nil {
			return err
		}
	}
	if err := nonNegative("maxServerDelay", c.MaxServerDelay); err != nil {
		return err
	}
	return validateDelayHeaders("serverDelayHeaders", c.DelayHeaders)
}

// Validate reports the first bad value in r, a rule used on its own rather
// than as part of a [Config], such as a rule given for one request. It
// checks r as [Config.Validate] checks each rule, with two differences:
// the paths in its errors start at the rule ("retryPolicy.maxAttempts",
// "name[0].method"), and r may have no names, since a rule used on its own
// is not matched against requests; names it has must still be valid. A
// rule with neither Retry nor Hedge is valid, and means one attempt.
//
// The error is a *[FieldError] and matches [ErrInvalid]; a nil Rule is
// invalid. Validate only reads r, so it is safe for concurrent use.
func (r *Rule) Validate() error {
	if r == nil {
		return &FieldError{Reason: "rule is nil"}
	}
	return clipped(r.validate("", false))
}

// validate checks r at path. A rule in a Config must list names: without
// one it would match nothing, silently, which is never what its author
// meant.
func (r *Rule) validate(path string, named bool) error {
	if named && len(r.Name) == 0 {
		return &FieldError{Field: join(path, "name"), Reason: "must list at least one pattern; [{}] matches every request"}
	}
	for i, n := range r.Name {
		if err := n.validate(join(path, fmt.Sprintf("name[%d]", i))); err != nil {
			return err
		}
	}
	if r.Retry != nil && r.Hedge != nil {
		return &FieldError{Field: path, Reason: "must not have both retryPolicy and hedgingPolicy"}
	}
	if r.Retry != nil {
		return r.Retry.validate(join(path, "retryPolicy"))
	}
	if r.Hedge != nil {
		return r.Hedge.validate(join(path, "hedgingPolicy"))
	}
	return nil
}

func (n Name) validate(path string) error {
	if strings.ContainsAny(n.Host, "/?#@ \t") {
		return &FieldError{Field: join(path, "host"), Value: strconv.Quote(n.Host),
			Reason: `must be a host name or address, with a port if any, such as "api.example.com:443": not a URL`}
	}
	if n.Method != "" && strings.ToUpper(n.Method) != n.Method && isToken(strings.ToUpper(n.Method)) {
		return &FieldError{Field: join(path, "method"), Value: strconv.Quote(n.Method),
			Reason: "must be written as requests send it, in upper case: " + strconv.Quote(strings.ToUpper(n.Method))}
	}
	if n.Method != "" && !isToken(n.Method) {
		return &FieldError{Field: join(path, "method"), Value: strconv.Quote(n.Method), Reason: "must be an HTTP method token"}
	}
	if n.Path != "" && !strings.HasPrefix(n.Path, "/") {
		return &FieldError{Field: join(path, "path"), Value: strconv.Quote(n.Path), Reason: `must start with "/"`}
	}
	return nil
}

func (r *Retry) validate(path string) error {
	if err := atLeast2(join(path, "maxAttempts"), r.MaxAttempts); err != nil {
		return err
	}
	if r.Backoff != nil {
		if set := r.numericBackoff(); len(set) > 0 {
			return backoffConflict(path, set)
		}
		if err := validateBackoff(join(path, "backoff"), r.Backoff); err != nil {
			return err
		}
	} else if err := r.validateNumeric(path); err != nil {
		return err
	}
	if err := statusCodes(join(path, "retryableStatusCodes"), r.RetryableStatusCodes); err != nil {
		return err
	}
	return nonNegative(join(path, "perAttemptTimeout"), r.PerAttemptTimeout)
}

// validateNumeric checks the four fields that describe r's Exponential
// when Backoff is nil, as the package's backoffs are checked, under their
// own names: with no "0 means no cap", which gRPC's maxBackoff lacks.
func (r *Retry) validateNumeric(path string) error {
	return growth{r.InitialBackoff, r.MaxBackoff, r.BackoffMultiplier, r.Jitter}.validate(path, growthFields{
		initial: "initialBackoff", max: "maxBackoff", multiplier: "backoffMultiplier", jitter: "jitter",
	})
}

func (h *Hedge) validate(path string) error {
	if err := atLeast2(join(path, "maxAttempts"), h.MaxAttempts); err != nil {
		return err
	}
	if err := nonNegative(join(path, "hedgingDelay"), h.HedgingDelay); err != nil {
		return err
	}
	if q := h.HedgingDelayQuantile; !(q >= 0 && q < 1) {
		return &FieldError{Field: join(path, "hedgingDelayQuantile"), Value: formatFloat(q), Reason: "must be in [0, 1)"}
	}
	if err := statusCodes(join(path, "nonFatalStatusCodes"), h.NonFatalStatusCodes); err != nil {
		return err
	}
	if x := h.MaxExtraLoad; !(x >= 0 && x <= 1) { // NaN fails too
		return &FieldError{Field: join(path, "maxExtraLoad"), Value: formatFloat(x), Reason: "must be in [0, 1] (0 for no cap)"}
	}
	return nil
}

func (t *Throttle) validate(path string) error {
	if m := t.MaxTokens; !(m > 0 && m <= 1000) {
		return &FieldError{Field: join(path, "maxTokens"), Value: formatFloat(m), Reason: "must be in (0, 1000]"}
	}
	if r := t.TokenRatio; !(r > 0 && r <= 1) {
		return &FieldError{Field: join(path, "tokenRatio"), Value: formatFloat(r), Reason: "must be in (0, 1]"}
	}
	return nil
}

func atLeast2(path string, n int) error {
	if n < 2 {
		return &FieldError{Field: path, Value: strconv.Itoa(n), Reason: "must be at least 2"}
	}
	return nil
}

func nonNegative(path string, d time.Duration) error {
	if d < 0 {
		return &FieldError{Field: path, Value: d.String(), Reason: "must not be negative"}
	}
	return nil
}

func statusCodes(path string, codes []int) error {
	for i, code := range codes {
		if code < 100 || code > 599 {
			return &FieldError{Field: fmt.Sprintf("%s[%d]", path, i), Value: strconv.Itoa(code), Reason: "must be in 100..599"}
		}
	}
	return nil
}

func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// isToken reports whether s is an RFC 9110 token, the syntax of an HTTP
// method and of a header field name. A method outside it can never equal a
// request's method, so such a Name would silently match nothing; a header
// name outside it can never be received.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
