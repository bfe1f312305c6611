package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"
)

// ParseConfig reads a configuration in the JSON shape of gRPC's service
// config (see the package documentation) and checks it with
// [Config.Validate].
//
// Keys are matched exactly, case included; an unknown or repeated key is
// an error. Durations are strings in Go or protobuf JSON form ("0.1s",
// "250ms", "1m30s") and may not be negative. A JSON null reads as a
// left-out key. Data after the top-level object is an error, and so is
// input that is not UTF-8, as JSON must be.
//
// A retryPolicy that leaves out "jitter" gets [DefaultJitter]. An explicit
// "jitter": 0 means none: as a Retry's zero Jitter means DefaultJitter,
// such a policy is read into Backoff as the [Exponential] of its numeric
// fields, with no jitter, and the four fields are left zero.
//
// A retryPolicy may give its waits as "backoff", an object with exactly
// one of these keys, read into [Retry.Backoff]; it must then leave out
// initialBackoff, maxBackoff, backoffMultiplier and jitter:
//
//   - "exponential", an [Exponential]: {"initial": "0.1s", "max": "2s",
//     "multiplier": 2, "jitter": 0.2}, every key needed, "max": "0s"
//     meaning no cap and "jitter": 0 no jitter.
//   - "fullJitter", a [FullJitter]: {"initial": "0.1s", "max": "2s",
//     "multiplier": 2}, every key needed.
//   - "googleApi", a [GoogleAPI]: {"max": "32s"}, or {} for
//     [DefaultGoogleAPIMax].
//   - "table", a [Table]: {"steps": ["1s", "2s", "5s"]}.
//
// A hedgingPolicy's "maxExtraLoad" is [Hedge.MaxExtraLoad], a number in
// [0, 1]; left out, it is 0, no cap. A retryPolicy's "readAhead" is
// [Retry.ReadAhead], in bytes; left out, it is 0, none.
//
// A methodConfig entry's "errorCodes" is [Rule.ErrorCodes]: {"json":
// "error.code", "xml": "Error/Code", "header": "X-Amzn-ErrorType",
// "retryable": [...], "throttled": [...], "unprocessed": [...], "final":
// [...]}, each key optional but for one of the first three and one list.
//
// "serverDelayHeaders" lists [Config.DelayHeaders] as
// [{"name": "X-RateLimit-Reset", "format": "unixSeconds", "remaining":
// "X-RateLimit-Remaining"}, ...], "format" one of "seconds",
// "milliseconds", "unixSeconds", "httpDate", "duration" and "rfc3339" (see
// [DelayFormat]), "remaining" optional: the header that must read 0 for
// the entry to count (see [DelayHeader]).
//
// "retryThrottling" and "hold" are switches ([Config.Throttle],
// [Config.Hold]): left out, or null, each is [Default]'s, so that a first
// config keeps the protection a Transport has with none; {"off": true}
// turns each off, and "off": true beside another key of its object is an
// error naming both. "hold": {} turns holds on; "off" is its only key.
// "pace" is a switch too ([Config.Pace]), read as "hold" is. "admission"
// ([Config.Admission]) is not: left out, there is none; {} turns it on,
// with "maxConcurrency" (an integer) and "maxWait" (a duration string)
// optional. A negative "maxWait" such as "-1s" means no wait, as a
// negative [Admission.MaxWait] does.
//
// A "maxAttempts" above [MaxRetryAttempts] is read as it is written, and
// counts as MaxRetryAttempts (see [Retry.Attempts]), as gRPC takes a
// figure above 5 as 5.
//
// Every error matches [ErrInvalid] through [errors.Is]; an error about one
// field is a *[FieldError] naming it by its JSON path, and a syntax error
// (NaN, Infinity and other values JSON cannot hold, or a document nested
// deeper than encoding/json reads) wraps the *[json.SyntaxError], after
// the path of the value it lies in and the text there, as in
// "policy: invalid config: methodConfig[0].retryPolicy.jitter: NaN: ...".
// On error the returned Config is nil. A Config that ParseConfig returns
// passes [Config.Validate] too, so it is reported in Go's words only if
// its caller edits it.
func ParseConfig(data []byte) (*Config, error) {
	c, err := parseConfig(data)
	if err != nil {
		return nil, clipped(err)
	}
	return c, nil
}

func parseConfig(data []byte) (*Config, error) {
	// encoding/json would read each byte that is not UTF-8 as U+FFFD: a
	// value changed without a word, which no request then matches.
	if at := invalidUTF8(data); at >= 0 {
		return nil, &FieldError{Reason: fmt.Sprintf("input is not valid UTF-8 at offset %d", at)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FieldError{Reason: "no JSON object in input"}
		}
		var se *json.SyntaxError
		if !errors.As(err, &se) {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		// A value JSON cannot hold (NaN, Infinity) or a document nested
		// too deep is a syntax error to encoding/json, which names only
		// an offset: say where it is as every other error does.
		field, value := syntaxPlace(data, se.Offset)
		return nil, fmt.Errorf("%w: %s%s%w", ErrInvalid, field, value, err)
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &FieldError{Reason: fmt.Sprintf("data after the end of the JSON value at offset %d", end)}
	}
	var m configJSON
	if err := decodeObject("", raw, &m); err != nil {
		return nil, err
	}
	c, err := m.config()
	if err != nil {
		return nil, err
	}
	// Checked in JSON's words: the author wrote JSON, and a Config that
	// passes here passes Config.Validate too, so it never fails later in
	// Go's words unless its caller edits it.
	if err := c.validateAt(jsonPath("")); err != nil {
		return nil, asWritten("", raw, err)
	}
	return c, nil
}

// invalidUTF8 returns the offset of the first byte of data that does not
// begin a valid UTF-8 sequence, or -1 when data is valid UTF-8.
func invalidUTF8(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// The mirror types below hold the JSON as written. Nested objects stay raw
// so that each is decoded on its own with its path known, and errors can
// name "methodConfig[1].retryPolicy.maxAttempts" rather than a path
// without indices.

type configJSON struct {
	MethodConfig       []json.RawMessage `json:"methodConfig"`
	RetryThrottling    json.RawMessage   `json:"retryThrottling"`
	MaxServerDelay     *durationJSON     `json:"maxServerDelay"`
	ServerDelayHeaders []json.RawMessage `json:"serverDelayHeaders"`
	Hold               json.RawMessage   `json:"hold"`
	Pace               json.RawMessage   `json:"pace"`
	Admission          json.RawMessage   `json:"admission"`
}

type ruleJSON struct {
	Name          []json.RawMessage `json:"name"`
	RetryPolicy   json.RawMessage   `json:"retryPolicy"`
	HedgingPolicy json.RawMessage   `json:"hedgingPolicy"`
	ErrorCodes    json.RawMessage   `json:"errorCodes"`
}

type nameJSON struct {
	Host   string `json:"host"`
	Method string `json:"method"`
	Path   string `json:"path"`
}

// retryJSON keeps the four numeric backoff fields as pointers, to tell a
// left-out key from a zero: "backoff" requires them all left out, and a
// left-out jitter is DefaultJitter.
type retryJSON struct {
	MaxAttempts          int             `json:"maxAttempts"`
	Backoff              json.RawMessage `json:"backoff"`
	InitialBackoff       *durationJSON   `json:"initialBackoff"`
	MaxBackoff           *durationJSON   `json:"maxBackoff"`
	BackoffMultiplier    *float64        `json:"backoffMultiplier"`
	Jitter               *float64        `json:"jitter"`
	RetryableStatusCodes []int           `json:"retryableStatusCodes"`
	PerAttemptTimeout    *durationJSON   `json:"perAttemptTimeout"`
	RetryNonIdempotent   bool            `json:"retryNonIdempotent"`
	ReadAhead            int64           `json:"readAhead"`
}

type hedgeJSON struct {
	MaxAttempts          int           `json:"maxAttempts"`
	HedgingDelay         *durationJSON `json:"hedgingDelay"`
	HedgingDelayQuantile float64       `json:"hedgingDelayQuantile"`
	NonFatalStatusCodes  []int         `json:"nonFatalStatusCodes"`
	MaxExtraLoad         float64       `json:"maxExtraLoad"`
}

// holdJSON has only "off", so that any other key in "hold" (or "pace",
// which reads the same) is refused by name.
type holdJSON struct {
	Off bool `json:"off"`
}

type admissionJSON struct {
	MaxConcurrency int           `json:"maxConcurrency"`
	MaxWait        *durationJSON `json:"maxWait"`
}

// throttleJSON keeps its figures as pointers, to tell a key given with
// "off" from one left out, even when its value is 0.
type throttleJSON struct {
	MaxTokens  *float64 `json:"maxTokens"`
	TokenRatio *float64 `json:"tokenRatio"`
	Off        bool     `json:"off"`
}

// durationJSON is a duration string; its own type lets a type error say
// that a duration was expected rather than any string.
type durationJSON string

func (m *configJSON) config() (*Config, error) {
	c := &Config{}
	for i, raw := range m.MethodConfig {
		r, err := parseRule(fmt.Sprintf("methodConfig[%d]", i), raw)
		if err != nil {
			return nil, err
		}
		c.Rules = append(c.Rules, r)
	}
	var err error
	if !isNull(m.RetryThrottling) {
		if c.Throttle, err = parseThrottle("retryThrottling", m.RetryThrottling); err != nil {
			return nil, err
		}
	}
	if c.MaxServerDelay, err = parseDuration("maxServerDelay", m.MaxServerDelay); err != nil {
		return nil, err
	}
	if c.DelayHeaders, err = parseDelayHeaders("serverDelayHeaders", m.ServerDelayHeaders); err != nil {
		return nil, err
	}
	if !isNull(m.Hold) {
		var h holdJSON
		if err := decodeObject("hold", m.Hold, &h); err != nil {
			return nil, err
		}
		c.Hold = &Hold{Off: h.Off}
	}
	if !isNull(m.Pace) {
		var h holdJSON
		if err := decodeObject("pace", m.Pace, &h); err != nil {
			return nil, err
		}
		c.Pace = &Pace{Off: h.Off}
	}
	if !isNull(m.Admission) {
		var a admissionJSON
		if err := decodeObject("admission", m.Admission, &a); err != nil {
			return nil, err
		}
		c.Admission = &Admission{MaxConcurrency: a.MaxConcurrency}
		if c.Admission.MaxWait, err = parseSignedDuration("admission.maxWait", a.MaxWait); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// parseThrottle reads "retryThrottling". With "off": true, a figure given
// as well is an error even when it is 0, which Validate could not tell
// from one left out.
func parseThrottle(path string, raw json.RawMessage) (*Throttle, error) {
	var m throttleJSON
	if err := decodeObject(path, raw, &m); err != nil {
		return nil, err
	}
	t := &Throttle{Off: m.Off}
	var given []string
	if m.MaxTokens != nil {
		t.MaxTokens = *m.MaxTokens
		given = append(given, "maxTokens")
	}
	if m.TokenRatio != nil {
		t.TokenRatio = *m.TokenRatio
		given = append(given, "tokenRatio")
	}
	if t.Off {
		if err := offWith(jsonPath(path), given); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func parseRule(path string, raw json.RawMessage) (Rule, error) {
	var m ruleJSON
	if err := decodeObject(path, raw, &m); err != nil {
		return Rule{}, err
	}
	var r Rule
	if m.Name != nil {
		r.Name = make([]Name, len(m.Name))
	}
	for i, raw := range m.Name {
		var n nameJSON
		if err := decodeObject(fmt.Sprintf("%s.name[%d]", path, i), raw, &n); err != nil {
			return Rule{}, err
		}
		r.Name[i] = Name(n)
	}
	var err error
	if !isNull(m.RetryPolicy) {
		if r.Retry, err = parseRetry(path+".retryPolicy", m.RetryPolicy); err != nil {
			return Rule{}, err
		}
	}
	if !isNull(m.HedgingPolicy) {
		if r.Hedge, err = parseHedge(path+".hedgingPolicy", m.HedgingPolicy); err != nil {
			return Rule{}, err
		}
	}
	if !isNull(m.ErrorCodes) {
		if r.ErrorCodes, err = parseErrorCodes(path+".errorCodes", m.ErrorCodes); err != nil {
			return Rule{}, err
		}
	}
	return r, nil
}

func parseRetry(path string, raw json.RawMessage) (*Retry, error) {
	var m retryJSON
	if err := decodeObject(path, raw, &m); err != nil {
		return nil, err
	}
	r := &Retry{
		MaxAttempts:          m.MaxAttempts,
		RetryableStatusCodes: m.RetryableStatusCodes,
		RetryNonIdempotent:   m.RetryNonIdempotent,
		ReadAhead:            m.ReadAhead,
	}
	var err error
	if isNull(m.Backoff) {
		err = asWritten(path, raw, m.numeric(path, r))
	} else if set := m.numericBackoff(); len(set) > 0 {
		err = backoffConflict(jsonPath(path), set)
	} else {
		r.Backoff, err = parseBackoff(path+".backoff", m.Backoff)
	}
	if err != nil {
		return nil, err
	}
	if r.PerAttemptTimeout, err = parseDuration(path+".perAttemptTimeout", m.PerAttemptTimeout); err != nil {
		return nil, err
	}
	return r, nil
}

// numeric copies the four numeric backoff fields into r, a left-out
// jitter as DefaultJitter.
func (m *retryJSON) numeric(path string, r *Retry) error {
	var err error
	if r.InitialBackoff, err = parseDuration(path+".initialBackoff", m.InitialBackoff); err != nil {
		return err
	}
	if r.MaxBackoff, err = parseDuration(path+".maxBackoff", m.MaxBackoff); err != nil {
		return err
	}
	if m.BackoffMultiplier != nil {
		r.BackoffMultiplier = *m.BackoffMultiplier
	}
	r.Jitter = DefaultJitter
	if m.Jitter == nil || *m.Jitter != 0 {
		if m.Jitter != nil {
			r.Jitter = *m.Jitter
		}
		return nil
	}
	// An explicit "jitter": 0 asks for none, which a Retry's numeric
	// fields cannot say: their zero Jitter is DefaultJitter, as in JSON
	// when it is left out. The waits become the Exponential that says
	// it, once the fields have been checked under their own names.
	if err := r.validateNumeric(jsonPath(path)); err != nil {
		return err
	}
	r.Backoff = Exponential{Initial: r.InitialBackoff, Max: r.MaxBackoff, Multiplier: r.BackoffMultiplier}
	r.InitialBackoff, r.MaxBackoff, r.BackoffMultiplier, r.Jitter = 0, 0, 0, 0
	return nil
}

// numericBackoff lists the numeric backoff fields that m gives, by name.
func (m *retryJSON) numericBackoff() []string {
	var set []string
	for _, f := range []struct {
		name  string
		given bool
	}{
		{"initialBackoff", m.InitialBackoff != nil},
		{"maxBackoff", m.MaxBackoff != nil},
		{"backoffMultiplier", m.BackoffMultiplier != nil},
		{"jitter", m.Jitter != nil},
	} {
		if f.given {
			set = append(set, f.name)
		}
	}
	return set
}

func parseHedge(path string, raw json.RawMessage) (*Hedge, error) {
	var m hedgeJSON
	if err := decodeObject(path, raw, &m); err != nil {
		return nil, err
	}
	h := &Hedge{
		MaxAttempts:          m.MaxAttempts,
		HedgingDelayQuantile: m.HedgingDelayQuantile,
		NonFatalStatusCodes:  m.NonFatalStatusCodes,
		MaxExtraLoad:         m.MaxExtraLoad,
	}
	var err error
	if h.HedgingDelay, err = parseDuration(path+".hedgingDelay", m.HedgingDelay); err != nil {
		return nil, err
	}
	return h, nil
}

// parseDuration reads a Go duration string, which covers the protobuf JSON
// form too (decimal seconds with an "s" suffix). A left-out value is 0.
func parseDuration(path string, s *durationJSON) (time.Duration, error) {
	d, err := parseSignedDuration(path, s)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, &FieldError{Field: path, Value: strconv.Quote(string(*s)), Reason: "must not be negative"}
	}
	return d, nil
}

// parseSignedDuration reads a duration string as parseDuration does, a
// negative one included, for a field to which a negative value means
// what it means in Go (admission.maxWait: no wait).
func parseSignedDuration(path string, s *durationJSON) (time.Duration, error) {
	if s == nil {
		return 0, nil
	}
	d, err := time.ParseDuration(string(*s))
	if err != nil {
		return 0, &FieldError{Field: path, Value: strconv.Quote(string(*s)), Reason: `must be a duration such as "0.1s" or "250ms"`}
	}
	return d, nil
}
