// Package holdlist keeps the holds on one host: for each rule, a "not
// before" that a rate limit or an outage set, which a later answer may
// extend and never shortens, in a list of bounded length, with a
// lock-free answer for the common case of a host that no hold matters
// on. The Transport keeps one list per host, and so does a fleet's
// member.
package holdlist

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Hold is a "not before" on one rule of a host: no request of Rule goes
// before Until. Status is the status of the answer that set it.
//
// A Capped hold was cut short of what its answer asked for: it still
// matters after Until, until its holder settles it (through
// [List.Edit]), so a List reads as held meanwhile.
type Hold struct {
	Rule   string
	Until  time.Time
	Status int
	Capped bool
}

// Held returns h, so that a type that embeds a Hold is an [Entry].
func (h Hold) Held() Hold { return h }

// end is when h stops mattering, in Unix nanoseconds: never while it is
// capped, and at once for an empty slot (a zero Until, whose nanoseconds
// are not representable). An end past the last representable nanosecond
// (the year 2262), which a fleet's store may hand over, reads as that
// nanosecond's predecessor, so that the hold still matters and is not
// taken for a capped one.
func (h Hold) end() int64 {
	switch {
	case h.Capped:
		return math.MaxInt64
	case h.Until.IsZero():
		return 0
	case !h.Until.Before(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64 - 1
	}
	return h.Until.UnixNano()
}

// over reports whether h no longer matters at now: its slot may take
// another rule's hold.
func (h Hold) over(now time.Time) bool { return !h.Capped && !h.Until.After(now) }

// Entry is what a List keeps per rule: a type that embeds a [Hold], with
// what its holder keeps beside it. The zero Entry is an empty slot.
type Entry interface {
	Held() Hold
}

// List is the holds on one host, one per rule, each an E. The zero List
// is empty and ready to use; it must not be copied after first use. Its
// methods are safe for concurrent use.
type List[E Entry] struct {
	// latest is the latest end of any hold, in Unix nanoseconds
	// (MaxInt64 while a capped hold is kept; 0: none), so that a host
	// no hold matters on costs one atomic load.
	latest atomic.Int64
	// mu guards list: holds are set by one request's answer while other
	// requests read them.
	mu   sync.Mutex
	list []E
}

// Any reports whether a hold may matter at now.
func (l *List[E]) Any(now time.Time) bool { return l.latest.Load() > now.UnixNano() }

// Capping reports whether a capped hold is kept, which matters until it
// is settled.
func (l *List[E]) Capping() bool { return l.latest.Load() == math.MaxInt64 }

// Get returns the entry of rule and true, if a hold may matter at now
// ([List.Any]) and the list has one for rule, in force or not; else the
// zero E and false. Without a hold that may matter it takes no lock.
func (l *List[E]) Get(rule string, now time.Time) (E, bool) {
	var zero E
	if !l.Any(now) {
		return zero, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.list {
		if e.Held().Rule == rule {
			return e, true
		}
	}
	return zero, false
}

// InForce returns the entries whose hold ends after now, in no order; nil
// when there are none.
func (l *List[E]) InForce(now time.Time) []E {
	return l.collect(now, func(h Hold) bool { return h.Until.After(now) })
}

// Matter returns the entries that still matter at now, in no order: those
// InForce returns, and the capped ones past their end that their holder
// has not settled; nil when there are none.
func (l *List[E]) Matter(now time.Time) []E {
	return l.collect(now, func(h Hold) bool { return !h.over(now) })
}

// collect returns the entries whose hold keep takes, in no order; nil
// when there are none, or when no hold matters at now.
func (l *List[E]) collect(now time.Time, keep func(Hold) bool) []E {
	if !l.Any(now) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []E
	for _, e := range l.list {
		if keep(e.Held()) {
			out = append(out, e)
		}
	}
	return out
}

// Set puts e's hold in force at now, keeping at most bound holds (at
// least one), and reports the entry in force for e's rule, the entry e
// displaced (the zero E if none), and whether e was taken.
//
// A hold is extended, never shortened: an entry of the rule that ends no
// earlier than e is kept, and e is not taken. Nor is an uncapped e that
// is already over. Otherwise e takes the rule's entry, or else the slot
// of a hold that is over, or a new one while fewer than bound are kept,
// or else, the list being full, the slot of the hold that ends first,
// unless that hold ends no earlier than e: of the holds, e among them,
// the one that ends first is the one not kept.
func (l *List[E]) Set(e E, now time.Time, bound int) (in, displaced E, ok bool) {
	var zero E
	h := e.Held()
	if h.over(now) {
		return zero, zero, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	i, free, first := -1, -1, -1
	for j, k := range l.list {
		switch kh := k.Held(); {
		case kh.Rule == h.Rule:
			i = j
		case free < 0 && kh.over(now):
			free = j
		case first < 0 || kh.Until.Before(l.list[first].Held().Until):
			first = j
		}
	}
	switch {
	case i >= 0 && !l.list[i].Held().Until.Before(h.Until):
		return l.list[i], zero, false // as long a hold on the rule
	case i >= 0:
	case free >= 0:
		i = free
	case len(l.list) < max(bound, 1):
		l.list = append(l.list, zero)
		i = len(l.list) - 1
	case !l.list[first].Held().Until.Before(h.Until):
		return zero, zero, false // a full list of holds that end no earlier
	default:
		i = first
	}
	displaced, l.list[i] = l.list[i], e
	l.note()
	return e, displaced, true
}

// Edit calls f with the list, under the list's lock, and keeps the list f
// returns: f may change entries in place (settle a capped hold, mark a
// hold sent), empty a slot by setting it to the zero E, or truncate the
// list. f must not call l's methods.
func (l *List[E]) Edit(f func(list []E) []E) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = f(l.list)
	l.note()
}

// note sets latest from the list. l.mu must be held.
func (l *List[E]) note() {
	latest := int64(0)
	for _, e := range l.list {
		latest = max(latest, e.Held().end())
	}
	l.latest.Store(latest)
}
