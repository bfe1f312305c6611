package retryhttp

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/internal/holdlist"
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
	// refused. Once a hold cut to maxServerDelay has ended, while the
	// request that went first waits for its answer, it is how long the
	// others would wait for that answer at most.
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
	// ends. For a hold from the fleet, Since is when a request of this
	// Transport first met it as it stands, and Until is no later than
	// this Transport's maxServerDelay past Since (see [FleetView]). Once
	// a hold cut to maxServerDelay has ended, while the request that went
	// first waits for its answer and the others wait for it, the hold is
	// listed still, Until the latest they wait (as [HoldError.Remaining]
	// says): the answer may end it sooner, or set it again.
	Since, Until time.Time
	// Fleet says the hold came from the Transport's [Fleet]: another
	// member met the answer that set it, and the requests here are held
	// all the same. A fleet is asked only by requests, so its holds are
	// listed once a request of the host's rule met one.
	Fleet bool
}

// maxHoldsPerHost bounds the rules a host keeps holds for apart: when a
// policy has more rules than that held at once, of those holds the one
// that ends first is not kept, a new one included (see [holdlist.List.Set]).
const maxHoldsPerHost = 64

// maxHold is the longest hold kept: a century, so that a hold's end
// stays representable in nanoseconds, whatever a server asks for.
const maxHold = 100 * 365 * 24 * time.Hour

// hold is a host's "not before" for the requests of one rule: no attempt
// under it is sent before Until. since is when it was set (or last
// extended), Status the status of the answer that set it.
//
// A hold is never longer than the policy's maxServerDelay from the answer
// that set it: a server cannot hold a host longer than the policy would
// wait for it. One cut to that length is Capped: when it ends, one
// request goes first (the probe), and the others wait for an answer of
// the rule, which may set the hold again. wake is closed when that answer
// comes, or when the probe's attempt ends with none (it was not sent, or
// got no answer), so that another goes first at once. lapse is when the
// others stop waiting for it: when the probe's own request gives up on
// the answer (its deadline, its attempt's timeout), at most
// maxServerDelay after it went, the longest the policy waits for a
// server. The end of the probe's attempt is learnt at once as a rule, so
// the lapse only bounds the wait should it not be (a base that ignores
// its context). A request that cannot wait until the lapse is refused at
// once, as under the hold.
//
// A fleet's hold that a request meets is kept as one of the Transport's
// own, set by an answer at that instant (see meet), and marked fleet.
type hold struct {
	holdlist.Hold
	since time.Time
	wake  chan struct{} // nil until a probe goes
	lapse time.Time
	fleet bool
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
func (h hold) length() time.Duration { return h.Until.Sub(h.since) }

// release is when a request that waited out h goes: at its own point of
// [until, until + min(length/10, 1 s)], r in [0, 1) choosing it, so that
// the requests a hold gathered do not all reach the host in one instant;
// but before deadline (zero: none), which until is before, so that a
// request that can wait out the hold goes out in time. The hold itself
// ends exactly when its answer said.
func (h hold) release(r float64, deadline time.Time) time.Time {
	spread := min(h.length()/10, time.Second)
	if !deadline.IsZero() {
		spread = min(spread, deadline.Sub(h.Until)-1)
	}
	return h.Until.Add(time.Duration(min(max(r, 0), 1) * float64(max(spread, 0))))
}

// state is where a request of h's rule stands at now.
func (h hold) state(now time.Time) holdState {
	switch {
	case h.Until.After(now):
		return holdHeld
	case !h.Capped:
		return holdNone
	case h.wake == nil || !h.lapse.After(now):
		return holdProbe
	}
	return holdProbing
}

// holds are the holds on one host, one per rule (see [holdlist.List]).
// The common case, a host never held or no longer held, costs one atomic
// load; the list is read only while a hold may matter, which a capped
// hold does after its end too, until an answer settles it.
type holds struct {
	list holdlist.List[hold]
	// forgotten are the fleet's holds on the host that its owner ended
	// (see forget), by rule and end; nil: none. They are read only
	// when the fleet reports a hold in force.
	forgotten atomic.Pointer[[]holdlist.Hold]
	// fleet are the fleet's holds on the host that requests met (see
	// meet), each with its end as the fleet gave it and when it was first
	// met: a hold the fleet shows again is not met again, and its owner's
	// reset ends it (see forget).
	fleet holdlist.List[hold]
	// meeting makes meeting a fleet's hold one step: a request that finds
	// the hold met finds it in force too (see meet).
	meeting sync.Mutex
}

// any reports whether a hold on the host may matter at now: its own, a
// fleet's that its requests met, or a fleet's that its owner ended for
// it (see forget), which forgetting the host would bring back.
func (hs *holds) any(now time.Time) bool {
	if hs.list.Any(now) || hs.fleet.Any(now) {
		return true
	}
	if gone := hs.forgotten.Load(); gone != nil {
		for _, h := range *gone {
			if h.Until.After(now) {
				return true
			}
		}
	}
	return false
}

// get returns the hold on rule at now, and where a request of the rule
// stands against it.
func (hs *holds) get(rule string, now time.Time) (hold, holdState) {
	if !hs.list.Any(now) {
		return hold{}, holdNone // the common case, inlined: no call, no lock
	}
	if h, ok := hs.list.Get(rule, now); ok {
		return h, h.state(now)
	}
	return hold{}, holdNone
}

// inForce returns the holds in force at now, in no order, for Stats: the
// Transport's own, among them the fleet's that requests met (see meet).
// A capped hold whose probe is out holds the rule's other requests still,
// until its lapse at most, and is listed until then; once its probe may
// go, nothing is held.
func (hs *holds) inForce(now time.Time) []Hold {
	var out []Hold
	for _, h := range hs.list.Matter(now) {
		until := h.Until
		switch h.state(now) {
		case holdHeld:
		case holdProbing:
			until = h.lapse
		default:
			continue
		}
		out = append(out, Hold{Rule: h.Rule, Status: h.Status, Since: h.since, Until: until, Fleet: h.fleet})
	}
	return out
}

// meet takes the fleet's hold v on rule, which a request met at now, as
// if an answer at now had asked for it (see set): limit, the policy's
// maxServerDelay, caps it past now, and a capped one ends with one
// request going first. The fleet cannot say when, nor under whose policy,
// its hold was set: the moment this Transport first meets it stands for
// the answer, so that a hold it never chose (set by a member that waits
// longer, a caller of Report, a broken store) holds its requests no
// longer than its own policy would. A hold is met once as it stands: the
// same end shown again, or an earlier one, meets nothing, so that its cap
// runs from when it was first met, and a capped hold that its probe's
// answer settled stays settled. A later end is a new hold (a member met a
// new answer), met afresh. With holds met on maxHoldsPerHost rules, the
// one that ends first, v's among them, is not met.
func (hs *holds) meet(rule string, v FleetView, now time.Time, limit time.Duration) {
	m := hold{Hold: holdlist.Hold{Rule: rule, Until: v.HoldUntil, Status: v.HoldStatus}, since: now}
	hs.meeting.Lock()
	defer hs.meeting.Unlock()
	if _, _, ok := hs.fleet.Set(m, now, maxHoldsPerHost); !ok {
		return // met already, and in force: the common case while a fleet's hold lasts
	}
	h := holdFor(rule, now, v.HoldUntil.Sub(now), limit, v.HoldStatus)
	h.fleet = true
	hs.put(h, now)
}

// set holds rule's requests for wait from now, status being the status of
// the answer that asks for it, and limit the longest hold the policy
// keeps: a longer wait is capped to it (see holdFor). It reports the hold
// now in force, and whether this answer set or extended it (see put).
func (hs *holds) set(rule string, now time.Time, wait, limit time.Duration, status int) (hold, bool) {
	return hs.put(holdFor(rule, now, wait, limit, status), now)
}

// holdFor is the hold on rule that an answer at now asks for: wait,
// capped at limit, the longest hold the policy keeps; status is the
// answer's.
func holdFor(rule string, now time.Time, wait, limit time.Duration, status int) hold {
	return hold{Hold: holdlist.Hold{Rule: rule, Until: now.Add(min(wait, limit, maxHold)), Status: status, Capped: wait > limit},
		since: now}
}

// put puts h in force at now. A hold in force that ends later is kept: a
// later answer may extend a hold, never shorten it. With holds on
// maxHoldsPerHost rules, the one that ends first, h among them, is not
// kept. It reports the hold now in force, and whether h set or extended
// it.
func (hs *holds) put(h hold, now time.Time) (hold, bool) {
	in, old, set := hs.list.Set(h, now, maxHoldsPerHost)
	if old.wake != nil {
		close(old.wake) // its probe is answered (by this hold), or its hold made room
	}
	return in, set
}

// answered settles rule's capped hold, if it has ended, with an outcome
// that set no hold: after a response the hold is over, and the requests
// waiting for the probe go; after an error, which says nothing of the
// hold, another request may go first.
func (hs *holds) answered(rule string, now time.Time, response bool) {
	if !hs.list.Capping() {
		return // no capped hold: the common case
	}
	hs.list.Edit(func(list []hold) []hold {
		for i, h := range list {
			if h.Rule == rule && h.Capped && !h.Until.After(now) {
				if h.wake != nil {
					close(h.wake)
				}
				if response {
					list[i] = hold{}
				} else {
					list[i].wake = nil
				}
				break
			}
		}
		return list
	})
}

// probe makes the request that asks it go first after rule's capped hold,
// which ended at until, if no other request went first since its lapse;
// the others wait for its answer until lapse. It reports whether it does,
// and the channel its answer closes, which names its turn for unprobe.
func (hs *holds) probe(rule string, until, now, lapse time.Time) (wake chan struct{}, ok bool) {
	hs.list.Edit(func(list []hold) []hold {
		for i, h := range list {
			if h.Rule == rule && h.Until.Equal(until) && h.state(now) == holdProbe {
				if h.wake != nil {
					close(h.wake) // the last probe lapsed: its waiters look again
				}
				list[i].wake, list[i].lapse = make(chan struct{}), lapse
				wake, ok = list[i].wake, true
				break
			}
		}
		return list
	})
	return wake, ok
}

// unprobe gives back the turn that probe gave with wake, when the
// probe's attempt ended with nothing to settle the hold (it was not
// sent, or not answered): the requests waiting for its answer look
// again at once, and one goes first in its place. A turn settled
// already, by an answer, a new hold or a reset, is left alone.
func (hs *holds) unprobe(rule string, wake chan struct{}) {
	if !hs.list.Capping() {
		return // the hold was settled, or cleared
	}
	hs.list.Edit(func(list []hold) []hold {
		for i, h := range list {
			if h.Rule == rule && h.wake == wake {
				close(wake)
				list[i].wake = nil
				break
			}
		}
		return list
	})
}

// forget ends, for this Transport, the fleet's holds on the host in force
// at now, as the host's owner asks (see [Transport.ResetBackoff]): those
// its requests met, and those look, the fleet's view of each of rules,
// gives (a fleet that cannot tell at that instant shows none, and may
// show them again later). A fleet hold of a rule that ends no later than
// the one forgotten is over; one that ends later was set since, and
// counts. (A fleet keeps a hold's latest end, so a hold set after the
// reset shows as a later end.) Holds forgotten before and still in force
// stay forgotten, should the fleet not tell now. It is called before
// clear, which lets the holds met go.
func (hs *holds) forget(rules []string, look func(rule string) FleetView, now time.Time) {
	var gone []holdlist.Hold
	if old := hs.forgotten.Load(); old != nil {
		for _, h := range *old {
			if h.Until.After(now) {
				gone = append(gone, h)
			}
		}
	}
	note := func(h holdlist.Hold) {
		i := slices.IndexFunc(gone, func(g holdlist.Hold) bool { return g.Rule == h.Rule })
		switch {
		case i < 0:
			gone = append(gone, h)
		case h.Until.After(gone[i].Until):
			gone[i].Until = h.Until
		}
	}
	for _, h := range hs.fleet.InForce(now) {
		note(h.Hold)
	}
	for _, rule := range rules {
		if v := look(rule); v.HoldUntil.After(now) {
			note(holdlist.Hold{Rule: rule, Until: v.HoldUntil, Status: v.HoldStatus})
		}
	}
	if len(gone) == 0 {
		hs.forgotten.Store(nil)
		return
	}
	hs.forgotten.Store(&gone)
}

// forgot reports whether the fleet's hold on rule that ends at until is
// one the host's owner ended (see forget).
func (hs *holds) forgot(rule string, until time.Time) bool {
	gone := hs.forgotten.Load()
	if gone == nil {
		return false
	}
	for _, h := range *gone {
		if h.Rule == rule {
			return !until.After(h.Until)
		}
	}
	return false
}

// clear ends every hold: the host is back, its owner says.
func (hs *holds) clear() {
	hs.list.Edit(func(list []hold) []hold {
		for _, h := range list {
			if h.wake != nil {
				close(h.wake)
			}
		}
		return list[:0]
	})
	hs.fleet.Edit(func(list []hold) []hold { return list[:0] })
}
