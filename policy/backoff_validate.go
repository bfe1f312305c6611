package policy

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// maxTableSteps bounds Table.Steps in a validated Config: a retry policy
// that needs more distinct waits than this is better described by a
// formula, and the bound keeps a JSON table from growing without limit.
const maxTableSteps = 100

// numericBackoff lists, by their names as p spells them, the fields of r
// that describe an Exponential and are set.
func (r *Retry) numericBackoff(p path) []string {
	var set []string
	if r.InitialBackoff != 0 {
		set = append(set, p.name("initialBackoff", "InitialBackoff"))
	}
	if r.MaxBackoff != 0 {
		set = append(set, p.name("maxBackoff", "MaxBackoff"))
	}
	if r.BackoffMultiplier != 0 {
		set = append(set, p.name("backoffMultiplier", "BackoffMultiplier"))
	}
	if r.Jitter != 0 {
		set = append(set, p.name("jitter", "Jitter"))
	}
	return set
}

// backoffConflict is the error for the retry policy at p that sets both
// Backoff and some of the numeric fields it replaces, named in set. Go and
// JSON share it, so that both forms of one mistake read alike.
func backoffConflict(p path, set []string) error {
	return &FieldError{
		Field: p.key("backoff", "Backoff").String(),
		Reason: "replaces " + p.name("initialBackoff, maxBackoff, backoffMultiplier and jitter",
			"InitialBackoff, MaxBackoff, BackoffMultiplier and Jitter") + "; leave out " + strings.Join(set, ", "),
	}
}

// validateBackoff checks b, the Backoff of a retry policy at p. The
// package's own backoffs, by value or by pointer, have their fields
// checked under the JSON name of their form ("backoff.table.steps[1]"),
// or in Go under the type assertion that reaches them
// ("Backoff.(policy.Table).Steps[1]"); a caller's own is taken as it is,
// once it is known not to be nil.
func validateBackoff(p path, b Backoff) error {
	if isNil(b) {
		return &FieldError{Field: p.String(), Value: fmt.Sprintf("%#v", b), Reason: "must not be a nil pointer or func"}
	}
	form := func(jsonKey string) path { return p.key(jsonKey, fmt.Sprintf("(%T)", b)) }
	switch b := b.(type) {
	case Exponential:
		return b.validate(form("exponential"))
	case *Exponential:
		return b.validate(form("exponential"))
	case FullJitter:
		return b.validate(form("fullJitter"))
	case *FullJitter:
		return b.validate(form("fullJitter"))
	case GoogleAPI:
		return b.validate(form("googleApi"))
	case *GoogleAPI:
		return b.validate(form("googleApi"))
	case Table:
		return b.validate(form("table"))
	case *Table:
		return b.validate(form("table"))
	}
	return nil
}

// isNil reports whether the interface b holds a nil pointer or func:
// calling Duration on either would panic in the middle of a request, long
// after the configuration was accepted. This is the one use of reflect on
// a Backoff; a nil interface is reported too.
func isNil(b Backoff) bool {
	if b == nil {
		return true
	}
	v := reflect.ValueOf(b)
	switch v.Kind() {
	case reflect.Pointer, reflect.Func:
		return v.IsNil()
	}
	return false
}

func (e Exponential) validate(p path) error {
	return growth{e.Initial, e.Max, e.Multiplier, e.Jitter}.validate(p, growthFields{
		initial: p.name("initial", "Initial"), max: p.name("max", "Max"), multiplier: p.name("multiplier", "Multiplier"),
		jitter: p.name("jitter", "Jitter"), noCap: true,
	})
}

func (f FullJitter) validate(p path) error {
	return growth{f.Initial, f.Max, f.Multiplier, 0}.validate(p, growthFields{
		initial: p.name("initial", "Initial"), max: p.name("max", "Max"), multiplier: p.name("multiplier", "Multiplier"),
		noCap: true,
	})
}

// growth is a backoff that grows from initial by multiplier up to max,
// jittered by jitter: an [Exponential], a [FullJitter], or the four
// numeric fields of a [Retry]. Each names its fields its own way, so one
// check serves them all with their names passed in.
type growth struct {
	initial, max       time.Duration
	multiplier, jitter float64
}

// growthFields names a growth's fields as one form spells them.
type growthFields struct {
	initial, max, multiplier string
	// jitter names the jitter field; "" for a form without one, whose
	// jitter is not checked.
	jitter string
	// noCap says that a max of 0 means no cap, as Exponential and
	// FullJitter document; a Retry's maxBackoff has no such value, as in
	// gRPC's retry policy.
	noCap bool
	// orElse, when set, ends the reason of a bad initial: what the
	// author may do instead of setting it.
	orElse string
}

// validate checks g, found at p with its fields named by f, against
// the limits of gRPC's retry policy: initial above 0, max at least
// initial (or 0 when f allows no cap), multiplier at least 1 and finite,
// jitter in [0, 1]. The first bad field, in that order, is reported.
func (g growth) validate(p path, f growthFields) error {
	if g.initial <= 0 {
		reason := "must be greater than 0"
		if f.orElse != "" {
			reason += ", " + f.orElse
		}
		return &FieldError{Field: join(p.at, f.initial), Value: g.initial.String(), Reason: reason}
	}
	if g.max < g.initial && !(f.noCap && g.max == 0) {
		reason := "must be at least " + f.initial + " (" + g.initial.String() + ")"
		if f.noCap {
			reason = "must be 0 (no cap) or at least " + f.initial + " (" + g.initial.String() + ")"
		}
		return &FieldError{Field: join(p.at, f.max), Value: g.max.String(), Reason: reason}
	}
	// Written as !(x >= 1) so that NaN fails too.
	if m := g.multiplier; !(m >= 1) || math.IsInf(m, 1) {
		return &FieldError{Field: join(p.at, f.multiplier), Value: formatFloat(m), Reason: "must be at least 1 and finite"}
	}
	if j := g.jitter; f.jitter != "" && !(j >= 0 && j <= 1) { // NaN fails too
		return &FieldError{Field: join(p.at, f.jitter), Value: formatFloat(j), Reason: "must be in [0, 1]"}
	}
	return nil
}

func (g GoogleAPI) validate(p path) error {
	if g.Max < 0 {
		return &FieldError{Field: p.key("max", "Max").String(), Value: g.Max.String(),
			Reason: "must not be negative (0 means " + DefaultGoogleAPIMax.String() + ")"}
	}
	return nil
}

func (t Table) validate(p path) error {
	p = p.key("steps", "Steps")
	switch {
	case len(t.Steps) == 0:
		return &FieldError{Field: p.String(), Reason: "must list at least one step"}
	case len(t.Steps) > maxTableSteps:
		return &FieldError{Field: p.String(), Value: strconv.Itoa(len(t.Steps)) + " steps",
			Reason: "must list at most " + strconv.Itoa(maxTableSteps) + " steps"}
	}
	for i, d := range t.Steps {
		if d < 0 {
			return &FieldError{Field: p.index(i).String(), Value: d.String(), Reason: "must not be negative"}
		}
	}
	return nil
}
