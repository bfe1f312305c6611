package policy

import "strings"

// A switch is a field of [Config] that turns a protection on or off and
// that a Config which says nothing of it has on, as [Default] has it: a
// first config, written for the sake of a retry policy, must never turn
// off what the zero Transport had. Config.Throttle and Config.Hold are
// switches, each a pointer to a struct with an Off field, read alike in
// Go and in JSON:
//
//   - nil (in JSON, the key left out or null): Default's value;
//   - Off set, every other field zero (in JSON, {"off": true}): off;
//   - anything else: on, as its fields say.
//
// A new switch follows the same form: a type with an Off field and an off
// method, a default below, a line in InForce, an offWith check in its
// validate, and "off" in its JSON mirror.

// toggle is a switch's type: off reports whether the switch is set to
// off.
type toggle interface{ off() bool }

func (t *Throttle) off() bool { return t.Off }
func (h *Hold) off() bool     { return h.Off }

// defaultThrottle is the throttle of Default, in force where a Config's
// Throttle is nil.
func defaultThrottle() *Throttle { return &Throttle{MaxTokens: 100, TokenRatio: 0.25} }

// defaultHold is the Hold of Default, in force where a Config's Hold is
// nil: holds on.
func defaultHold() *Hold { return &Hold{} }

// InForce returns a copy of c, as deep as [Config.Clone]'s, whose switches
// say directly what is in force, for code that carries a Config out, as a
// Transport does: Throttle, Hold and Pace are each set when on (to [Default]'s
// value where c left them nil) and nil when off, so that a nil switch can
// be read as "off". A nil c gives nil.
//
// The copy is for reading, not for configuring with: given to a
// Transport, or to InForce again, its nil switches would mean the
// defaults again. InForce only reads c, so it is safe for concurrent use.
func (c *Config) InForce() *Config {
	in := c.Clone()
	if in == nil {
		return nil
	}
	in.Throttle = inForce(in.Throttle, defaultThrottle)
	in.Hold = inForce(in.Hold, defaultHold)
	in.Pace = inForce(in.Pace, defaultPace)
	return in
}

// inForce returns what the switch s puts in force: def() when s is nil,
// nil when it is off, and s itself otherwise.
func inForce[T any, S interface {
	*T
	toggle
}](s S, def func() S) S {
	switch {
	case s == nil:
		return def()
	case s.off():
		return nil
	}
	return s
}

// offWith is the error for the switch at p that is off and yet sets the
// fields named in set, or nil when set is empty: those fields would say
// that it is on, and which one its author meant is not for the package
// to guess.
func offWith(p path, set []string) error {
	if len(set) == 0 {
		return nil
	}
	return &FieldError{Field: p.key("off", "Off").String(), Value: "true",
		Reason: "turns it off, so it must not be set with " + strings.Join(set, ", ")}
}
