package retryhttp

import (
	"time"

	"github.com/retryhttp/retryhttp/policy"
)

// Fleet is state that the Transports of a fleet of processes share, so
// that the fleet as a whole keeps to one retry budget per host, and one
// member's hold (a Retry-After, a spent quota) holds every member.
//
// A per-Transport budget cannot protect a server from a fleet of small
// clients: each spends about maxTokens/3 extra attempts on a host that
// is down before its own bucket reacts, so a thousand clients sending ten
// requests each triple the load. With a Fleet, the Transport asks the
// fleet's budget too before a retry or a hedge starts (and again when a
// retry's backoff ends), reports every attempt's outcome to it, and
// waits out the holds it carries as its own, within its own policy's
// limits (see [FleetView.HoldUntil]).
//
// Its methods are called on the request path, by any number of
// goroutines at once. They must be safe for concurrent use, return at
// once, do no I/O and allocate nothing; when they cannot tell (the
// shared store is slow, down, or has not answered yet) they answer as if
// there were no fleet: allow, no hold. The per-Transport budget and holds
// keep working whatever the Fleet says. A Fleet that panics ends the
// request it was called for as a Classify that panics does (see
// [Transport.Classify]): its panic reaches the goroutine that called
// RoundTrip (or ResetBackoff, which asks Look too) with its value. The
// module
// github.com/retryhttp/retryhttp/redisfleet implements it over Redis or
// Valkey.
type Fleet interface {
	// Report tells the fleet what one attempt to host (a URL host,
	// lowercased, port kept) showed. It is called once per attempt whose
	// outcome counts in the budget (not for the first try of one resent
	// transparently, nor for a dial its backoff window refused), or
	// whose answer set a hold, after its outcome is known.
	Report(host string, r FleetReport)
	// Look returns what the fleet knows of host now, for the requests
	// of rule (a key of [Stats.Rules]). It is called before each
	// attempt of a request under a policy with holds, and before each
	// retry or hedge.
	Look(host, rule string) FleetView
}

// FleetReport is what one attempt showed, for a [Fleet].
type FleetReport struct {
	// Rule is the key, in [Stats.Rules], of the policy rule the request
	// matched ("(none)" when it matched none); holds are kept per host and
	// rule.
	Rule string
	// Budget is what the attempt does to the host's budget, with the
	// accounting of gRPC's retry throttling: [FleetFailure] takes a
	// token, [FleetSuccess] adds Throttle.TokenRatio, and the zero value
	// changes nothing.
	Budget FleetBudget
	// Throttle is the throttle in force when the attempt ended: the
	// bucket's capacity and refill. Nil means the policy has none, and
	// Budget is then the zero value.
	Throttle *policy.Throttle
	// HoldUntil, when not zero, is the end of the hold the attempt's
	// answer set on its host and Rule: no request under it may be sent
	// before then. HoldStatus is that answer's status.
	HoldUntil  time.Time
	HoldStatus int
}

// FleetBudget is what an attempt does to a host's budget.
type FleetBudget uint8

// The effects an attempt has on a host's budget.
const (
	// FleetNoChange: the attempt does not count, as a transparent resend
	// or an attempt the dialer refused does not.
	FleetNoChange FleetBudget = iota
	// FleetFailure: a retryable or non-fatal status, a retryable network
	// error, or a pushback that forbids retrying: one token is taken.
	FleetFailure
	// FleetSuccess: any other answer: the refill ratio is added.
	FleetSuccess
)

// FleetView is what a [Fleet] knows of a host. Its zero value means
// "allow, no hold", the answer of a fleet that cannot tell.
type FleetView struct {
	// Spent says that the fleet's budget for the host is spent (it holds
	// maxTokens/2 or less): no retry or hedge may start.
	Spent bool
	// HoldUntil, when not zero, is when the fleet's hold on the host and
	// rule ends; HoldStatus is the status of the answer that set it.
	//
	// A Transport takes a hold the first time one of its requests meets
	// it as if its own request had met the answer then: it holds the
	// rule's requests at most the policy's maxServerDelay past that
	// moment, whoever set the hold and for however long (a member whose
	// policy waits longer, a caller of Report, a broken store), and when
	// such a capped hold ends, one request goes first and the others wait
	// for its answer, as after a capped hold of its own. That answer
	// decides for this Transport: one that sets no hold ends the fleet's
	// hold for it, though the fleet still shows it; one that sets a hold
	// holds it anew, and goes to the fleet. The same HoldUntil shown
	// again, or an earlier one, is the hold met already, even after a
	// while the fleet could not tell: its cap does not start again, and
	// once ended it stays ended. A later HoldUntil is a new hold (a member
	// met a new answer), met afresh.
	HoldUntil  time.Time
	HoldStatus int
}
