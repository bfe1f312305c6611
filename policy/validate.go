package policy

import (
	"strconv"
	"strings"
	"time"
)

// Validate reports the first bad value in c, in the order the fields appear
// in the JSON form: each rule's names, then its policies, then the throttle,
// MaxServerDelay and DelayHeaders. The error is a *[FieldError] naming the
// field by its Go name, as the Config was built ("Rules[0].Retry.MaxAttempts";
// [ParseConfig] names what it read by its JSON path instead), and the
// value, and matches [ErrInvalid]. A nil Config is invalid too.
//
// The limits are those of gRPC's retry design: MaxAttempts at least 2,
// InitialBackoff above 0, MaxBackoff at least InitialBackoff,
// BackoffMultiplier at least 1 and finite, Jitter in [0, 1], status codes
// in 100..599, no negative durations, HedgingDelayQuantile in [0, 1),
// MaxTokens in (0, 1000], TokenRatio in (0, 1]; and MaxExtraLoad, a
// hedging policy's load budget, in [0, 1]. A Rule must list at least
// one Name (Name{} matches every request) and may not set both Retry and
// Hedge. A Name's Method, if set, must be an HTTP token and its Path, if
// set, must start with "/". A MaxAttempts above [MaxRetryAttempts] is not
// an error: it counts as that many (see [Retry.Attempts]). A switch that
// is Off, such as &Throttle{Off: true}, must leave its other fields zero.
//
// A Retry whose Backoff is set must leave the four numeric backoff fields
// zero, and its Backoff must not be a nil pointer or func. The package's
// own backoffs, by value or by pointer, are checked too: [Exponential] and
// [FullJitter] need Initial above 0, Max 0 (no cap) or at least Initial,
// Multiplier at least 1 and finite, and an Exponential's Jitter in [0, 1];
// [GoogleAPI] needs Max not negative; a [Table] needs 1 to 100 steps, none
// negative. A caller's own Backoff is accepted as it is.
//
// A Retry's ReadAhead is in [0, [MaxReadAhead]]. A Rule's [ErrorCodes]
// must say where the code is (JSON, XML or Header, each well formed: no
// empty key or element name, a Header that is an HTTP field name) and
// list at least one code, none twice and none that a code read could
// never be.
//
// DelayHeaders may list at most 16 headers, each Name an HTTP field name,
// neither X-Retry-Pushback-Ms nor Retry-After (always read first) and not
// repeated regardless of case, each Format one of the Delay constants,
// each Remaining empty or an HTTP field name other than its Name,
// X-Retry-Pushback-Ms and Retry-After.
func (c *Config) Validate() error {
	return clipped(c.validateAt(goPath("")))
}

// validateAt checks c with its paths spelled as p spells them: JSON keys
// for a Config that ParseConfig decoded, Go field names otherwise.
func (c *Config) validateAt(p path) error {
	if c == nil {
		return &FieldError{Reason: "config is nil"}
	}
	for i := range c.Rules {
		if err := c.Rules[i].validate(p.key("methodConfig", "Rules").index(i), true); err != nil {
			return err
		}
	}
	if c.Throttle != nil {
		if err := c.Throttle.validate(p.key("retryThrottling", "Throttle")); err != nil {
			return err
		}
	}
	if err := nonNegative(p.key("maxServerDelay", "MaxServerDelay"), c.MaxServerDelay); err != nil {
		return err
	}
	if c.Admission != nil {
		if err := c.Admission.validate(p.key("admission", "Admission")); err != nil {
			return err
		}
	}
	return validateDelayHeaders(p.key("serverDelayHeaders", "DelayHeaders"), c.DelayHeaders)
}

// Validate reports the first bad value in r, a rule used on its own rather
// than as part of a [Config], such as a rule given for one request. It
// checks r as [Config.Validate] checks each rule, with two differences:
// the paths in its errors start at the rule ("Retry.MaxAttempts",
// "Name[0].Method"), and r may have no names, since a rule used on its own
// is not matched against requests; names it has must still be valid. A
// rule with neither Retry nor Hedge is valid, and means one attempt.
//
// The error is a *[FieldError] and matches [ErrInvalid]; a nil Rule is
// invalid. Validate only reads r, so it is safe for concurrent use.
func (r *Rule) Validate() error {
	if r == nil {
		return &FieldError{Reason: "rule is nil"}
	}
	return clipped(r.validate(goPath(""), false))
}

// validate checks r at p. A rule in a Config must list names: without
// one it would match nothing, silently, which is never what its author
// meant.
func (r *Rule) validate(p path, named bool) error {
	if named && len(r.Name) == 0 {
		return &FieldError{Field: p.key("name", "Name").String(),
			Reason: "must list at least one pattern; " + p.name("[{}]", "[]Name{{}}") + " matches every request"}
	}
	for i, n := range r.Name {
		if err := n.validate(p.key("name", "Name").index(i)); err != nil {
			return err
		}
	}
	if r.Retry != nil && r.Hedge != nil {
		return &FieldError{Field: p.String(), Reason: "must not have both " + p.name("retryPolicy and hedgingPolicy", "Retry and Hedge")}
	}
	if r.Retry != nil {
		if err := r.Retry.validate(p.key("retryPolicy", "Retry")); err != nil {
			return err
		}
	}
	if r.Hedge != nil {
		if err := r.Hedge.validate(p.key("hedgingPolicy", "Hedge")); err != nil {
			return err
		}
	}
	if r.ErrorCodes != nil {
		return r.ErrorCodes.validate(p.key("errorCodes", "ErrorCodes"))
	}
	return nil
}

func (n Name) validate(p path) error {
	host, method := p.key("host", "Host").String(), p.key("method", "Method").String()
	if strings.ContainsAny(n.Host, "/?#@ \t") {
		return &FieldError{Field: host, Value: strconv.Quote(n.Host),
			Reason: `must be a host name or address, with a port if any, such as "api.example.com:443": not a URL`}
	}
	if strings.Contains(n.Host, "*") {
		return &FieldError{Field: host, Value: strconv.Quote(n.Host),
			Reason: "has no wildcards, as it is compared as a name: list each host, or leave " + p.name("host", "Host") + " out to match every host"}
	}
	if n.Method != "" && strings.ToUpper(n.Method) != n.Method && isToken(strings.ToUpper(n.Method)) {
		return &FieldError{Field: method, Value: strconv.Quote(n.Method),
			Reason: "must be written as requests send it, in upper case: " + strconv.Quote(strings.ToUpper(n.Method))}
	}
	if n.Method != "" && !isToken(n.Method) {
		return &FieldError{Field: method, Value: strconv.Quote(n.Method), Reason: "must be an HTTP method token"}
	}
	if n.Path != "" && !strings.HasPrefix(n.Path, "/") {
		return &FieldError{Field: p.key("path", "Path").String(), Value: strconv.Quote(n.Path), Reason: `must start with "/"`}
	}
	return nil
}

func (r *Retry) validate(p path) error {
	if err := atLeast2(p.key("maxAttempts", "MaxAttempts"), r.MaxAttempts); err != nil {
		return err
	}
	if r.Backoff != nil {
		if set := r.numericBackoff(p); len(set) > 0 {
			return backoffConflict(p, set)
		}
		if err := validateBackoff(p.key("backoff", "Backoff"), r.Backoff); err != nil {
			return err
		}
	} else if err := r.validateNumeric(p); err != nil {
		return err
	}
	if err := statusCodes(p.key("retryableStatusCodes", "RetryableStatusCodes"), r.RetryableStatusCodes); err != nil {
		return err
	}
	if err := nonNegative(p.key("perAttemptTimeout", "PerAttemptTimeout"), r.PerAttemptTimeout); err != nil {
		return err
	}
	if n := r.ReadAhead; n < 0 || n > MaxReadAhead {
		return &FieldError{Field: p.key("readAhead", "ReadAhead").String(), Value: strconv.FormatInt(n, 10),
			Reason: "must be in [0, " + strconv.Itoa(MaxReadAhead) + "] bytes (0 for none)"}
	}
	return nil
}

// validateNumeric checks the four fields that describe r's Exponential
// when Backoff is nil, as the package's backoffs are checked, under their
// own names: with no "0 means no cap", which gRPC's maxBackoff lacks. In
// Go, the author of a Retry whose InitialBackoff is zero may not know
// that these fields are needed at all: the error says what else would do.
func (r *Retry) validateNumeric(p path) error {
	f := growthFields{initial: "initialBackoff", max: "maxBackoff", multiplier: "backoffMultiplier", jitter: "jitter"}
	if p.goNames {
		f = growthFields{initial: "InitialBackoff", max: "MaxBackoff", multiplier: "BackoffMultiplier", jitter: "Jitter",
			orElse: "or set Backoff"}
	}
	return growth{r.InitialBackoff, r.MaxBackoff, r.BackoffMultiplier, r.Jitter}.validate(p, f)
}

func (h *Hedge) validate(p path) error {
	if err := atLeast2(p.key("maxAttempts", "MaxAttempts"), h.MaxAttempts); err != nil {
		return err
	}
	if err := nonNegative(p.key("hedgingDelay", "HedgingDelay"), h.HedgingDelay); err != nil {
		return err
	}
	if q := h.HedgingDelayQuantile; !(q >= 0 && q < 1) {
		return &FieldError{Field: p.key("hedgingDelayQuantile", "HedgingDelayQuantile").String(), Value: formatFloat(q),
			Reason: "must be in [0, 1)"}
	}
	if err := statusCodes(p.key("nonFatalStatusCodes", "NonFatalStatusCodes"), h.NonFatalStatusCodes); err != nil {
		return err
	}
	if x := h.MaxExtraLoad; !(x >= 0 && x <= 1) { // NaN fails too
		return &FieldError{Field: p.key("maxExtraLoad", "MaxExtraLoad").String(), Value: formatFloat(x),
			Reason: "must be in [0, 1] (0 for no cap)"}
	}
	return nil
}

// validate checks t at p. An Off throttle must set nothing else: its
// figures would say that it is on.
func (t *Throttle) validate(p path) error {
	if t.Off {
		var set []string
		if t.MaxTokens != 0 {
			set = append(set, p.name("maxTokens", "MaxTokens"))
		}
		if t.TokenRatio != 0 {
			set = append(set, p.name("tokenRatio", "TokenRatio"))
		}
		return offWith(p, set)
	}
	if m := t.MaxTokens; !(m > 0 && m <= 1000) {
		return &FieldError{Field: p.key("maxTokens", "MaxTokens").String(), Value: formatFloat(m), Reason: "must be in (0, 1000]"}
	}
	if r := t.TokenRatio; !(r > 0 && r <= 1) {
		return &FieldError{Field: p.key("tokenRatio", "TokenRatio").String(), Value: formatFloat(r), Reason: "must be in (0, 1]"}
	}
	return nil
}

func atLeast2(p path, n int) error {
	if n < 2 {
		return &FieldError{Field: p.String(), Value: strconv.Itoa(n), Reason: "must be at least 2"}
	}
	return nil
}

func nonNegative(p path, d time.Duration) error {
	if d < 0 {
		return &FieldError{Field: p.String(), Value: d.String(), Reason: "must not be negative"}
	}
	return nil
}

func statusCodes(p path, codes []int) error {
	for i, code := range codes {
		if code < 100 || code > 599 {
			return &FieldError{Field: p.index(i).String(), Value: strconv.Itoa(code), Reason: "must be in 100..599"}
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
