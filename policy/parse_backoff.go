package policy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// The JSON forms of the package's backoffs, under "backoff" in a
// retryPolicy: an object with exactly one key, naming the form. Their
// values are checked by Validate, under the same paths, so that a Config
// built in Go and one read from JSON are held to the same limits.

type backoffJSON struct {
	Exponential json.RawMessage `json:"exponential"`
	FullJitter  json.RawMessage `json:"fullJitter"`
	GoogleAPI   json.RawMessage `json:"googleApi"`
	Table       json.RawMessage `json:"table"`
}

// exponentialJSON and fullJitterJSON need every key: a left-out "jitter"
// or "max" would have to mean something, and the zero of the Go field
// (no jitter, no cap) is the surprising choice in a file.
type exponentialJSON struct {
	Initial    *durationJSON `json:"initial"`
	Max        *durationJSON `json:"max"`
	Multiplier *float64      `json:"multiplier"`
	Jitter     *float64      `json:"jitter"`
}

type fullJitterJSON struct {
	Initial    *durationJSON `json:"initial"`
	Max        *durationJSON `json:"max"`
	Multiplier *float64      `json:"multiplier"`
}

type googleAPIJSON struct {
	Max *durationJSON `json:"max"`
}

type tableJSON struct {
	Steps []json.RawMessage `json:"steps"`
}

func parseBackoff(path string, raw json.RawMessage) (Backoff, error) {
	var m backoffJSON
	if err := decodeObject(path, raw, &m); err != nil {
		return nil, err
	}
	forms := []struct {
		key   string
		raw   json.RawMessage
		parse func(string, json.RawMessage) (Backoff, error)
	}{
		{"exponential", m.Exponential, parseExponential},
		{"fullJitter", m.FullJitter, parseFullJitter},
		{"googleApi", m.GoogleAPI, parseGoogleAPI},
		{"table", m.Table, parseTable},
	}
	var given []string
	pick := 0
	for i, f := range forms {
		if !isNull(f.raw) {
			given = append(given, f.key)
			pick = i
		}
	}
	if len(given) != 1 {
		had := "none"
		if len(given) > 1 {
			had = strings.Join(given, " and ")
		}
		return nil, &FieldError{Field: path, Value: excerpt(raw),
			Reason: "must have exactly one of exponential, fullJitter, googleApi and table, not " + had}
	}
	f := forms[pick]
	return f.parse(join(path, f.key), f.raw)
}

func parseExponential(path string, raw json.RawMessage) (Backoff, error) {
	var m exponentialJSON
	if err := decodeObject(path, raw, &m); err != nil {
		return nil, err
	}
	initial, max, mult, err := parseGrowth(path, m.Initial, m.Max, m.Multiplier)
	if err != nil {
		return nil, err
	}
	if m.Jitter == nil {
		return nil, missing(path, "jitter", "0 for none, 0.2 as gRPC uses")
	}
	return Exponential{Initial: initial, Max: max, Multiplier: mult, Jitter: *m.Jitter}, nil
}

func parseFullJitter(path string, raw json.RawMessage) (Backoff, error) {
	var m fullJitterJSON
	if err := decodeObject(path, raw, &m); err != nil {
		return nil, err
	}
	initial, max, mult, err := parseGrowth(path, m.Initial, m.Max, m.Multiplier)
	if err != nil {
		return nil, err
	}
	return FullJitter{Initial: initial, Max: max, Multiplier: mult}, nil
}

// parseGrowth reads the keys that the exponential and fullJitter forms
// share, each of which must be given.
func parseGrowth(path string, initial, max *durationJSON, mult *float64) (time.Duration, time.Duration, float64, error) {
	switch {
	case initial == nil:
		return 0, 0, 0, missing(path, "initial", `such as "0.1s"`)
	case max == nil:
		return 0, 0, 0, missing(path, "max", `"0s" for no cap`)
	case mult == nil:
		return 0, 0, 0, missing(path, "multiplier", "1 for a constant wait")
	}
	i, err := parseDuration(path+".initial", initial)
	if err != nil {
		return 0, 0, 0, err
	}
	m, err := parseDuration(path+".max", max)
	if err != nil {
		return 0, 0, 0, err
	}
	return i, m, *mult, nil
}

// parseGoogleAPI reads {"max": "32s"}, max optional: left out or "0s"
// means DefaultGoogleAPIMax, as GoogleAPI's zero Max does.
func parseGoogleAPI(path string, raw json.RawMessage) (Backoff, error) {
	var m googleAPIJSON
	if err := decodeObject(path, raw, &m); err != nil {
		return nil, err
	}
	max, err := parseDuration(path+".max", m.Max)
	if err != nil {
		return nil, err
	}
	return GoogleAPI{Max: max}, nil
}

// parseTable reads {"steps": ["1s", "2s"]}, each step on its own so that
// an error names its index.
func parseTable(path string, raw json.RawMessage) (Backoff, error) {
	var m tableJSON
	if err := decodeObject(path, raw, &m); err != nil {
		return nil, err
	}
	if len(m.Steps) > maxTableSteps {
		// Counted before the steps are read, each with a decoder of
		// its own: a million steps cost 665 MB to read only to be
		// refused by Validate for their count.
		return nil, &FieldError{Field: path + ".steps", Value: strconv.Itoa(len(m.Steps)) + " steps",
			Reason: "must list at most " + strconv.Itoa(maxTableSteps) + " steps"}
	}
	var t Table
	if m.Steps != nil {
		t.Steps = make([]time.Duration, len(m.Steps))
	}
	for i, raw := range m.Steps {
		var s *durationJSON
		step := fmt.Sprintf("%s.steps[%d]", path, i)
		if err := json.Unmarshal(raw, &s); err != nil || s == nil {
			return nil, &FieldError{Field: step, Value: excerpt(raw), Reason: "must be " + describe(reflect.TypeFor[durationJSON]())}
		}
		var err error
		if t.Steps[i], err = parseDuration(step, s); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func missing(path, key, hint string) error {
	return &FieldError{Field: join(path, key), Reason: "must be given (" + hint + ")"}
}
