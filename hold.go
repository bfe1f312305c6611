package retryhttp

import (
	"errors"
	"fmt"
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
type hold struct {
	rule         string
	since, until time.Time
	status       int
}

// length is how long the hold was set for.
func (h hold) length() time.Duration { return h.until.Sub(h.since) }

// resume is when a request that waited out h goes: at its own point of
// [until, until + min(length/10, 1 s)], r in [0, 1) choosing it, so that
// the requests a hold gathered do not all reach the host in one instant.
// The hold itself ends exactly when its answer said.
func (h hold) resume(r float64) time.Time {
	spread := min(h.length()/10, time.Second)
	return h.until.Add(time.Duration(min(max(r, 0), 1) * float64(spread)))
}

// holds are the holds on one host, one per rule. The common case, a host
// never held or no longer held, costs one atomic load: latest is the
// latest end of any hold, and the list under mu is read only while a
// hold may be in force.
type holds struct {
	latest atomic.Int64 // UnixNano of the latest end of any hold; 0: none
	// mu guards list: holds are set by one request's answer while other
	// requests read them.
	mu   sync.Mutex
	list []hold
}

// any reports whether a hold on the host may be in force at now.
func (hs *holds) any(now time.Time) bool {
	return hs.latest.Load() > now.UnixNano()
}

// get returns the hold on rule in force at now, if any.
func (hs *holds) get(rule string, now time.Time) (hold, bool) {
	if !hs.any(now) {
		return hold{}, false
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for _, h := range hs.list {
		if h.rule == rule && h.until.After(now) {
			return h, true
		}
	}
	return hold{}, false
}

// inForce returns the holds in force at now, in no order, for the
// status page.
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

// clear ends every hold.
func (hs *holds) clear() {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.list = hs.list[:0]
	hs.latest.Store(0)
}

// set holds rule's requests for wait from now, status being the status of
// the answer that asks for it. A hold in force that ends later is kept: a
// later answer may extend a hold, never shorten it. It reports the hold
// now in force, and whether this answer set or extended it.
func (hs *holds) set(rule string, now time.Time, wait time.Duration, status int) (hold, bool) {
	h := hold{rule: rule, since: now, until: now.Add(min(wait, maxHold)), status: status}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	i := hs.slot(rule, now)
	if old := hs.list[i]; old.rule == rule && !old.until.Before(h.until) {
		return old, false
	}
	hs.list[i] = h
	if end := h.until.UnixNano(); end > hs.latest.Load() {
		hs.latest.Store(end) // under mu: set never races with itself
	}
	return h, true
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
		case !h.until.After(now) && free < 0:
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
	hs.list[first] = hold{}
	return first
}
