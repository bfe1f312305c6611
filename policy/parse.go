package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// ParseConfig reads a configuration in the JSON shape of gRPC's service
// config (see the package documentation) and checks it with
// [Config.Validate].
//
// Keys are matched exactly, case included; an unknown or repeated key is
// an error. Durations are strings in Go or protobuf JSON form ("0.1s",
// "250ms", "1m30s") and may not be negative. A retryPolicy that leaves out
// "jitter" gets [DefaultJitter]; an explicit 0 means no jitter. A JSON
// null reads as a left-out key. Data after the top-level object is an
// error.
//
// A retryPolicy may give its waits as "backoff", an object with exactly
// one of these keys, read into [Retry.Backoff]; it must then leave out
// initialBackoff, maxBackoff, backoffMultiplier and jitter:
//
//   - {"exponential": {"initial": "0.1s", "max": "2s", "multiplier": 2, "jitter": 0.2}}:
//     an [Exponential]; every key is needed, "max": "0s" meaning no cap
//     and "jitter": 0 no jitter.
//   - {"fullJitter": {"initial": "0.1s", "max": "2s", "multiplier": 2}}:
//     a [FullJitter]; every key is needed.
//   - {"googleApi": {"max": "32s"}}: a [GoogleAPI]; "max" may be left
//     out, for [DefaultGoogleAPIMax].
//   - {"table": {"steps": ["1s", "2s", "5s"]}}: a [Table].
//
// Every error matches [ErrInvalid] through [errors.Is]; an error about one
// field is a *[FieldError] naming it, and a syntax error wraps the
// *[json.SyntaxError]. On error the returned Config is nil.
func ParseConfig(data []byte) (*Config, error) {
	c, err := parseConfig(data)
	if err != nil {
		return nil, clipped(err)
	}
	return c, nil
}

func parseConfig(data []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FieldError{Reason: "no JSON object in input"}
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
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
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// The mirror types below hold the JSON as written. Nested objects stay raw
// so that each is decoded on its own with its path known, and errors can
// name "methodConfig[1].retryPolicy.maxAttempts" rather than a path
// without indices.

type configJSON struct {
	MethodConfig    []json.RawMessage `json:"methodConfig"`
	RetryThrottling json.RawMessage   `json:"retryThrottling"`
	MaxServerDelay  *durationJSON     `json:"maxServerDelay"`
}

type ruleJSON struct {
	Name          []json.RawMessage `json:"name"`
	RetryPolicy   json.RawMessage   `json:"retryPolicy"`
	HedgingPolicy json.RawMessage   `json:"hedgingPolicy"`
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
}

type hedgeJSON struct {
	MaxAttempts          int           `json:"maxAttempts"`
	HedgingDelay         *durationJSON `json:"hedgingDelay"`
	HedgingDelayQuantile float64       `json:"hedgingDelayQuantile"`
	NonFatalStatusCodes  []int         `json:"nonFatalStatusCodes"`
}

type throttleJSON struct {
	MaxTokens  float64 `json:"maxTokens"`
	TokenRatio float64 `json:"tokenRatio"`
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
	if !isNull(m.RetryThrottling) {
		var t throttleJSON
		if err := decodeObject("retryThrottling", m.RetryThrottling, &t); err != nil {
			return nil, err
		}
		c.Throttle = &Throttle{MaxTokens: t.MaxTokens, TokenRatio: t.TokenRatio}
	}
	var err error
	c.MaxServerDelay, err = parseDuration("maxServerDelay", m.MaxServerDelay)
	if err != nil {
		return nil, err
	}
	return c, nil
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
	}
	var err error
	if isNull(m.Backoff) {
		err = m.numeric(path, r)
	} else if set := m.numericBackoff(); len(set) > 0 {
		err = backoffConflict(path, set)
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
	r.Jitter = DefaultJitter
	if m.Jitter != nil {
		r.Jitter = *m.Jitter
	}
	if m.BackoffMultiplier != nil {
		r.BackoffMultiplier = *m.BackoffMultiplier
	}
	var err error
	if r.InitialBackoff, err = parseDuration(path+".initialBackoff", m.InitialBackoff); err != nil {
		return err
	}
	r.MaxBackoff, err = parseDuration(path+".maxBackoff", m.MaxBackoff)
	return err
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
	if s == nil {
		return 0, nil
	}
	d, err := time.ParseDuration(string(*s))
	if err != nil {
		return 0, &FieldError{Field: path, Value: strconv.Quote(string(*s)), Reason: `must be a duration such as "0.1s" or "250ms"`}
	}
	if d < 0 {
		return 0, &FieldError{Field: path, Value: strconv.Quote(string(*s)), Reason: "must not be negative"}
	}
	return d, nil
}

// decodeObject decodes raw, which must be a JSON object, into dst, a
// pointer to a mirror struct. It first walks the keys in document order to
// refuse unknown and repeated ones by their exact spelling: encoding/json
// alone would accept "MaxAttempts" for "maxAttempts", keep the last of two
// repeated keys, and name an unknown key without its path.
func decodeObject(path string, raw json.RawMessage, dst any) error {
	fields, err := objectFields(path, raw, dst)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return fmt.Errorf("%w: %s: %w", ErrInvalid, path, err)
		}
		// Nested objects are raw in the mirrors, so the field is always a
		// key of this object.
		key, _, _ := strings.Cut(te.Field, ".")
		t, _ := fieldType(dst, key)
		return &FieldError{Field: join(path, key), Value: excerpt(fields[key]), Reason: "must be " + describe(t)}
	}
	return nil
}

// objectFields returns the members of the JSON object raw, checking each
// key against the json tags of *dst.
func objectFields(path string, raw json.RawMessage, dst any) (map[string]json.RawMessage, error) {
	notObject := &FieldError{Field: path, Value: excerpt(raw), Reason: "must be an object"}
	if path == "" {
		notObject.Reason = "config must be a JSON object"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, notObject
	}
	fields := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		var val json.RawMessage
		if err != nil || !ok || dec.Decode(&val) != nil {
			// raw was checked as a whole by ParseConfig; this is
			// unreachable unless that changes.
			return nil, notObject
		}
		if _, known := fieldType(dst, key); !known {
			return nil, &FieldError{Field: join(path, key), Value: excerpt(val), Reason: "unknown field"}
		}
		if _, dup := fields[key]; dup {
			return nil, &FieldError{Field: join(path, key), Value: excerpt(val), Reason: "repeated field"}
		}
		fields[key] = val
	}
	return fields, nil
}

// fieldType returns the type of the field of the struct *dst whose json
// tag names key exactly.
func fieldType(dst any, key string) (reflect.Type, bool) {
	t := reflect.TypeOf(dst).Elem()
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == key {
			return f.Type, true
		}
	}
	return nil, false
}

// describe names the JSON a mirror field of type t accepts.
func describe(t reflect.Type) string {
	if t == nil {
		return "valid"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[durationJSON]():
		return `a duration string such as "0.1s"`
	case t == reflect.TypeFor[json.RawMessage]():
		return "an object"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Int:
		return "an array of integers"
	case t.Kind() == reflect.Slice:
		return "an array"
	case t.Kind() == reflect.Int:
		return "an integer"
	case t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.String:
		return "a string"
	}
	return "of type " + t.String()
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func isNull(raw json.RawMessage) bool {
	return raw == nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// excerpt returns raw compacted, for an error message; the message's
// value is cut to length on the way out, by clipped.
func excerpt(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
