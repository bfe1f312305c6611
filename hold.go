package retryhttp

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// ErrHeld is matched by the error of a request that was not sent because
// its host is held: a rate limit or an outage the host announced has not
// ended, and would not end within the request's deadline or the policy's
// maxServerDelay. A [*HoldError] gives the details.
var ErrHeld = errors.New("retryhttp: host held")

// HoldError is the cause of a request refused for a hold on its host,
// found through errors.As in the [*Error] RoundTrip returns. It matches
// [ErrHeld].
type HoldError struct {
	// Host is the held host: the request's URL host, lowercased, its
	// port kept.
	Host string
	// Remaining is how long the hold still lasted when the request was
	// refused.
	Remaining time.Duration
	// Status is the status of the response that set the hold.
	Status int
}

// Error says which host is held, for how long and why.
func (e *HoldError) Error() string {
	return fmt.Sprintf("host %s held for another %v after a %d (%v)", e.Host, e.Remaining.Round(time.Millisecond), e.Status, ErrHeld)
}

// Is reports whether target is [ErrHeld].
func (e *HoldError) Is(target error) bool { return target == ErrHeld }

// Hold is a hold in force on a host, as [HostStats] gives it: no request
// of Rule is sent to the host before Until.
type Hold struct {
	// Rule is the key of the rule held, as in [Stats.Rules].
	Rule string
	// Status is the status of the answer that set the hold.
	Status int
	// Since is when the hold was set, or last extended; Until when it
	// ends.
	Since, Until time.Time
}

// maxHoldsPerHost bounds the rules a host keeps holds for apart: a policy
// with more rules than that, all held at once, replaces the hold that
// ends first.
const maxHoldsPerHost = 64

// maxHold is the longest hold kept: a century, so that a hold's end
// stays representable in nanoseconds, whatever a server asks for.
const maxHold = 100 * 365 * 24 * time.Hour

// hold is a host's "not before" for the requests of one rule: no attempt
// under it is sent before until. since is when it was set (or last
// extended), status the status of the answer that set it.
//
// A hold is never longer than the policy's maxServerDelay from the answer
// that set it: a server cannot hold a host longer than the policy would
// wait for it. One cut to that length is capped: when it ends, one
// request goes first (the probe), and the others wait for an answer of
// the rule, which may set the hold again. wake is closed when that answer
// comes; lapse is when the others stop waiting for it, should the probe
// never be answered.
type hold struct {
	rule         string
	since, until time.Time
	status       int
	capped       bool
	wake         chan struct{} // nil until a probe goes
	lapse        time.Time
}

// holdState is where a request of a rule stands against its host's hold.
type holdState uint8

const (
	holdNone    holdState = iota // no hold: go
	holdHeld                     // held until the hold's end
	holdProbe                    // a capped hold ended: the request may go first
	holdProbing                  // a capped hold ended and a probe is out: wait for its answer
)

// length is how long the hold was set for.
func (h hold) length() time.Duration { return h.until.Sub(h.since) }

// release is when a request that waited out h goes: at its own point of
// [until, until + min(length/10, 1 s)], r in [0, 1) choosing it, so that
// the requests a hold gathered do not all reach the host in one instant;
// but before deadline (zero: none), which until is before, so that a
// request that can wait out the hold goes out in time. The hold itself
// ends exactly when its answer said.
func (h hold) release(r float64, deadline time.Time) time.Time {
	spread := min(h.length()/10, time.Second)
	if !deadline.IsZero() {
		spread = min(spread, deadline.Sub(h.until)-1)
	}
	return h.until.Add(time.Duration(min(max(r, 0), 1) * float64(max(spread, 0))))
}

// state is where a request of h's rule stands at now.
func (h hold) state(now time.Time) holdState {
	switch {
	case h.until.After(now):
		return holdHeld
	case !h.capped:
		return holdNone
	case h.wake == nil || !h.lapse.After(now):
		return holdProbe
	}
	return holdProbing
}

// capping is the value of holds.latest while a capped hold is kept: such
// a hold matters after its end too, until an answer settles it, so the
// list must be read.
const capping = math.MaxInt64

// holds are the holds on one host, one per rule. The common case, a host
// never held or no longer held, costs one atomic load: latest is the
// latest end of any hold (or capping), and the list under mu is read only
// while a hold may matter.
type holds struct {
	latest atomic.Int64 // UnixNano of the latest end of any hold; 0: none
	// mu guards list: holds are set by one request's answer while other
	// requests read them.
	mu   sync.Mutex
	list []hold
}

// any reports whether a hold on the host may matter at now.
func (hs *holds) any(now time.Time) bool {
	return hs.latest.Load() > now.UnixNano()
}

// get returns the hold on rule at now, and where a request of the rule
// stands against it.
func (hs *holds) get(rule string, now time.Time) (hold, holdState) {
	if !hs.any(now) {
		return hold{}, holdNone
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for _, h := range hs.list {
		if h.rule == rule {
			return h, h.state(now)
		}
	}
	return hold{}, holdNone
}

// inForce returns the holds in force at now, in no order, for Stats.
func (hs *holds) inForce(now time.Time) []hold {
	if !hs.any(now) {
		return nil
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	var out []hold
	for _, h := range hs.list {
		if h.until.After(now) {
			out = append(out, h)
		}
	}
	return out
}

// set holds rule's requests for wait from now, status being the status of
// the answer that asks for it, and limit the longest hold the policy
// keeps: a longer wait is capped to it. A hold in force that ends later is
// kept: a later answer may extend a hold, never shorten it. It reports
// the hold now in force, and whether this answer set or extended it.
func (hs *holds) set(rule string, now time.Time, wait, limit time.Duration, status int) (hold, bool) {
	h := hold{rule: rule, since: now, until: now.Add(min(wait, limit, maxHold)), status: status, capped: wait > limit}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	i := hs.slot(rule, now)
	old := hs.list[i]
	if old.rule == rule && !old.until.Before(h.until) {
		return old, false
	}
	if old.wake != nil {
		close(old.wake) // its probe is answered: by this hold
	}
	hs.list[i] = h
	hs.note()
	return h, true
}

// answered settles rule's capped hold, if it has ended, with an outcome
// that set no hold: after a response the hold is over, and the requests
// waiting for the probe go; after an error, which says nothing of the
// hold, another request may go first.
func (hs *holds) answered(rule string, now time.Time, response bool) {
	if hs.latest.Load() != capping {
		return // no capped hold: the common case
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for i, h := range hs.list {
		if h.rule == rule && h.capped && !h.until.After(now) {
			if h.wake != nil {
				close(h.wake)
			}
			if !response {
				hs.list[i].wake = nil
				return
			}
			hs.list[i] = hold{}
			hs.note()
			return
		}
	}
}

// probe makes the request that asks it go first after rule's capped hold,
// which ended at until, if no other request went first since lapse; it
// reports whether it does, and the channel its answer closes.
func (hs *holds) probe(rule string, until, now, lapse time.Time) (chan struct{}, bool) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for i, h := range hs.list {
		if h.rule == rule && h.until.Equal(until) && h.state(now) == holdProbe {
			if h.wake != nil {
				close(h.wake) // the last probe lapsed: its waiters look again
			}
			hs.list[i].wake, hs.list[i].lapse = make(chan struct{}), lapse
			return hs.list[i].wake, true
		}
	}
	return nil, false
}

// clear ends every hold: the host is back, its owner says.
func (hs *holds) clear() {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for _, h := range hs.list {
		if h.wake != nil {
			close(h.wake)
		}
	}
	hs.list = hs.list[:0]
	hs.latest.Store(0)
}

// note sets latest from the list. hs.mu must be held.
func (hs *holds) note() {
	latest := int64(0)
	for _, h := range hs.list {
		if h.capped {
			latest = capping
			break
		}
		if h.rule != "" {
			latest = max(latest, h.until.UnixNano())
		}
	}
	hs.latest.Store(latest)
}

// slot returns the index of rule's hold in the list, or of the entry it
// may take: one whose hold has ended, a new one, or, with the list full,
// the one ending first. hs.mu must be held.
func (hs *holds) slot(rule string, now time.Time) int {
	free, first := -1, 0
	for i, h := range hs.list {
		switch {
		case h.rule == rule:
			return i
		case h.state(now) == holdNone && free < 0:
			free = i
		case h.until.Before(hs.list[first].until):
			first = i
		}
	}
	switch {
	case free >= 0:
		hs.list[free] = hold{}
		return free
	case len(hs.list) < maxHoldsPerHost:
		hs.list = append(hs.list, hold{})
		return len(hs.list) - 1
	}
	if w := hs.list[first].wake; w != nil {
		close(w)
	}
	hs.list[first] = hold{}
	return first
}
