package retryhttp

import (
	"net/http"

	"github.com/retryhttp/retryhttp/policy"
)

// A request's plan: what is done with it, decided once, when it starts,
// from the rule that governs it and the request itself.

// planKind is what is done with a request: decided once, when it starts.
type planKind uint8

const (
	planNone  planKind = iota // one attempt, and the transparent resend
	planRetry                 // the retry loop
	planHedge                 // the hedge loop
)

// plan is the rule chosen for a request, reduced to what the loops read.
type plan struct {
	kind     planKind
	attempts int           // the most attempts the plan makes
	retry    *policy.Retry // set for planRetry under a retry rule; nil: no backoff
	hedge    *policy.Hedge // set for planHedge
	// listed are the statuses that are retried (or are non-fatal, under
	// a hedging policy).
	listed []int
	// idem says the request may be sent again after it may have reached
	// the server.
	idem bool
	// codes is the rule's error table; nil: none.
	codes *policy.ErrorCodes
}

// maxHedgeAttempts bounds the attempts of a hedged request, as gRPC bounds
// maxAttempts: a policy's larger MaxAttempts counts as this many. Every
// attempt of a hedged request may be in flight at once, so the bound keeps
// one request from flooding its host and its memory from growing with a
// policy's figure. Retries, one at a time, are bounded by the policy
// package (policy.MaxRetryAttempts).
const maxHedgeAttempts = 5

// newPlan reduces rule, matched for req, to a plan. A hedging rule hedges
// only what may be sent more than once. Any other request goes one
// attempt at a time, up to the rule's attempts, and again only when the
// server says it did not act on it (a 429 or a pushback among the rule's
// non-fatal statuses, a verdict of RetryableUnprocessed) or the attempt
// never reached it: the retries every rule gives a request that is not
// idempotent. It waits as the server asks, at least a second after a 429
// that names no delay, and otherwise goes at once, as a hedge would.
func newPlan(rule *policy.Rule, req *http.Request) plan {
	idem := idempotent(req)
	p := plan{attempts: 1, idem: idem}
	switch {
	case rule == nil:
		return p
	case rule.Retry != nil:
		p = plan{kind: planRetry, attempts: rule.Retry.Attempts(), retry: rule.Retry,
			listed: rule.Retry.RetryableStatusCodes, idem: idem || rule.Retry.RetryNonIdempotent}
	case rule.Hedge != nil && idem:
		p = plan{kind: planHedge, attempts: min(rule.Hedge.MaxAttempts, maxHedgeAttempts), hedge: rule.Hedge,
			listed: rule.Hedge.NonFatalStatusCodes, idem: true}
	case rule.Hedge != nil:
		p = plan{kind: planRetry, attempts: min(rule.Hedge.MaxAttempts, maxHedgeAttempts),
			listed: rule.Hedge.NonFatalStatusCodes}
	}
	p.codes = rule.ErrorCodes
	return p
}

// idempotent reports whether req may be sent more than once by the rules
// of RFC 9110 section 9.2.2, or because it carries an idempotency key. A
// key is read as net/http reads it: present in the header, whatever its
// value, since a nil one is net/http's way to mark a request idempotent
// without sending the header.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xKey := req.Header["X-Idempotency-Key"]
	return key || xKey
}
