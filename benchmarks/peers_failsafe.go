package benchmarks

import (
	"context"
	"fmt"
	"net/http"

	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
)

// failsafeRetry is failsafe-go's retry policy through failsafehttp. Its
// budget is not a token bucket: it caps the retries in flight at a share of
// the executions in flight (at least 3 at once), across every host.
func failsafeRetry(withBudget bool) Peer {
	p := Peer{
		Name:    "failsafe",
		Label:   "failsafe-go",
		Library: "failsafe-go",
		Caps: Caps{Retries: true, Statuses: true, Jitter: true, Multiplier: true,
			RetryAfter: true, Body: BodyWhole},
		Notes: []string{"retry policy: HandleIf on the spec's statuses and any error; retries any method",
			"Retry-After through failsafehttp.DelayFunc (429 and 503, delay-seconds only)",
			"final answer handed back (ReturnLastFailure)"},
	}
	if withBudget {
		p.Name, p.Label, p.Caps.Budget = "failsafe+budget", "failsafe-go + budget", true
		p.Notes = append(p.Notes, "budget: retries in flight at most BudgetShare of executions in flight (min 3), one for all hosts")
	}
	p.New = func(s Spec, base http.RoundTripper) http.RoundTripper {
		b := failsafeRetryBuilder(s)
		if withBudget {
			b = b.WithBudget(budgetFor(s))
		}
		return failsafehttp.NewRoundTripper(base, b.Build())
	}
	return p
}

// failsafeRetryBuilder is failsafe-go's retry policy mapped from s: the
// spec's statuses and any error but the caller's context ending are
// retried, Retry-After read as failsafehttp does, and the last answer
// handed back.
func failsafeRetryBuilder(s Spec) retrypolicy.Builder[*http.Response] {
	return retrypolicy.NewBuilder[*http.Response]().
		HandleIf(func(resp *http.Response, err error) bool {
			return err != nil || s.Retries(resp.StatusCode)
		}).
		AbortOnErrors(context.Canceled, context.DeadlineExceeded).
		WithMaxAttempts(s.MaxAttempts).
		WithBackoffFactor(s.InitialBackoff, s.MaxBackoff, s.Multiplier).
		WithJitterFactor(s.Jitter).
		WithDelayFunc(failsafehttp.DelayFunc).
		ReturnLastFailure()
}

// budgetFor maps the Spec's throttle into failsafe-go's budget: the share
// of failures at which the bucket drains becomes the share of retries in
// flight; the floor of 3 concurrent retries is failsafe-go's default.
func budgetFor(s Spec) budget.Budget {
	return budget.NewBuilder().WithMaxRate(s.BudgetShare()).WithMinConcurrency(3).Build()
}

// failsafeHedge is failsafe-go's hedge policy with a fixed delay. A
// non-fatal answer does not end the request, but the next hedge still
// waits for its delay. With withBudget, its budget caps the hedges in
// flight at the spec's MaxExtraLoad of the executions in flight, at least
// 3 at once (failsafe-go's default, as for its retries): a cap on
// concurrency, not on the share of requests hedged over time.
func failsafeHedge(withBudget bool) Peer {
	p := Peer{
		Name:    "failsafe-hedge",
		Label:   "failsafe-go hedge",
		Library: "failsafe-go",
		Caps:    Caps{Hedges: true, Statuses: true, Body: BodyWhole},
		Notes: []string{"non-fatal statuses through CancelIf; the next hedge still waits the delay; hedges any method",
			"no budget set (it has one, shared with retries)"},
	}
	if withBudget {
		p.Name, p.Label = "failsafe-hedge+budget", "failsafe-go hedge + budget"
		p.Caps.Budget, p.Caps.KeepsAnswer = true, true
		p.Notes[1] = "budget: hedges in flight at most the spec's MaxExtraLoad of executions in flight (min 3)"
	}
	p.New = func(s Spec, base http.RoundTripper) http.RoundTripper {
		if s.MaxAttempts < 2 {
			panic(fmt.Sprintf("benchmarks: hedging needs 2 attempts or more, got %d", s.MaxAttempts))
		}
		b := hedgepolicy.NewBuilderWithDelay[*http.Response](s.HedgeDelay).
			WithMaxHedges(s.MaxAttempts - 1).
			CancelIf(func(resp *http.Response, err error) bool {
				return err == nil && !s.Retries(resp.StatusCode)
			})
		if withBudget {
			b = b.WithBudget(budget.NewBuilder().WithMaxRate(s.MaxExtraLoad).WithMinConcurrency(3).Build())
		}
		return failsafehttp.NewRoundTripper(base, b.Build())
	}
	return p
}
