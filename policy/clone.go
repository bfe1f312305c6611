package policy

import "slices"

// Clone returns a deep copy of c: every slice and every pointer in it is
// copied, down to the steps of a [Table], so that nothing done to c
// afterwards changes the copy, nor the other way round. A Backoff of the
// caller's own is the one exception: its value is shared, so it must be
// stateless, as [Backoff] requires. A nil c gives nil.
//
// A Transport clones the Config it is given, at its first use and at
// SetPolicy. Clone only reads c, so it is safe for concurrent use.
func (c *Config) Clone() *Config {
	if c == nil {
		return nil
	}
	d := *c
	if c.Rules != nil {
		d.Rules = make([]Rule, len(c.Rules))
		for i := range c.Rules {
			d.Rules[i] = c.Rules[i].clone()
		}
	}
	d.Throttle = clonePointer(c.Throttle)
	d.Hold = clonePointer(c.Hold)
	d.Pace = clonePointer(c.Pace)
	d.Admission = clonePointer(c.Admission)
	d.DelayHeaders = slices.Clone(c.DelayHeaders)
	return &d
}

func (r Rule) clone() Rule {
	r.Name = slices.Clone(r.Name)
	if r.Retry != nil {
		retry := *r.Retry
		retry.RetryableStatusCodes = slices.Clone(retry.RetryableStatusCodes)
		retry.Backoff = cloneBackoff(retry.Backoff)
		r.Retry = &retry
	}
	if r.Hedge != nil {
		hedge := *r.Hedge
		hedge.NonFatalStatusCodes = slices.Clone(hedge.NonFatalStatusCodes)
		r.Hedge = &hedge
	}
	r.ErrorCodes = r.ErrorCodes.clone()
	return r
}

// clonePointer returns a pointer to a copy of *p, or nil for a nil p: for
// the structs with no slice or pointer in them.
func clonePointer[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// cloneBackoff copies the package's own backoffs, which a caller may hold
// by pointer and edit; a nil pointer stays one, for Validate to refuse. A
// caller's own Backoff is shared: the package cannot know how to copy it.
func cloneBackoff(b Backoff) Backoff {
	switch b := b.(type) {
	case *Exponential:
		return clonePointer(b)
	case *FullJitter:
		return clonePointer(b)
	case *GoogleAPI:
		return clonePointer(b)
	case Table:
		return Table{Steps: slices.Clone(b.Steps)}
	case *Table:
		if b == nil {
			return b
		}
		return &Table{Steps: slices.Clone(b.Steps)}
	}
	return b
}
