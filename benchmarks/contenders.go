package benchmarks

import (
	"errors"
	"net/http"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/adaptivethrottler"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
)

// Contender is one client setup in the overload scenarios ([Scenario.Run]): how
// each client of a run, a process of its own, is built over the host. A
// new setup is one value: see [Retryhttp].
type Contender struct {
	// Name is short and has no spaces or slashes: it names the contender
	// in benchmark names. Label names it in tables.
	Name, Label string
	// Notes say how the setup is configured where it is not obvious.
	Notes []string
	// New returns one client that sends each attempt through base.
	New func(base http.RoundTripper) http.RoundTripper
	// InFleet, when set, returns one client over base that shares fleet
	// with the run's other clients. Nil means the contender cannot share
	// one; the scenarios of a fleet leave it out.
	InFleet func(base http.RoundTripper, fleet retryhttp.Fleet) http.RoundTripper
	// Refusal, when set, names the local refusal that err is ("held",
	// "shed", ...): a request the client failed on its own, sending it
	// no further. It returns "" for any other error. It is not asked
	// about a request whose deadline had passed.
	Refusal func(err error) string
}

// OverloadSpec is the policy the contenders mapped from a [Spec] follow:
// [EverydaySpec], policy.Default's retry (3 attempts, 100 ms doubling to
// 2 s, jitter 0.2, statuses 429, 502, 503, 504), so that they retry as
// the zero Transport does.
func OverloadSpec() Spec { return EverydaySpec() }

// Contenders returns the contenders of every overload scenario, bare
// net/http first.
func Contenders() []Contender {
	return []Contender{Bare(), ZeroTransport(), Admission(), Static(), Retryablehttp(),
		Failsafe(), FailsafeThrottler(), FailsafeLimiter()}
}

// Admission is retryhttp's zero Transport with admission turned on, at
// its defaults: policy.Default and "admission": {}.
func Admission() Contender {
	cfg := policy.Default()
	cfg.Admission = &policy.Admission{}
	c := Retryhttp("retryhttp-admission", "retryhttp with admission", cfg)
	c.Notes = []string{`policy.Default() with "admission": {} (maxConcurrency 1000, maxWait 0.5 s), one Transport per client`}
	return c
}

// Bare sends each request once through the host: the baseline.
func Bare() Contender {
	return Contender{Name: "bare", Label: "net/http",
		Notes: []string{"each request sent once, no retries"},
		New:   func(base http.RoundTripper) http.RoundTripper { return base }}
}

// ZeroTransport is retryhttp's zero Transport over the host:
// policy.Default.
func ZeroTransport() Contender {
	c := Retryhttp("retryhttp", "retryhttp zero Transport", nil)
	c.Notes = []string{"policy.Default() (3 attempts, a retry budget, holds and pace per host), one Transport per client"}
	return c
}

// Retryhttp is a retryhttp Transport with policy cfg (nil: the zero
// Transport's, policy.Default), one per client; in a fleet, each with
// the run's Fleet. cfg is shared by the clients and must not change.
func Retryhttp(name, label string, cfg *policy.Config) Contender {
	return Contender{Name: name, Label: label,
		New: func(base http.RoundTripper) http.RoundTripper {
			return &retryhttp.Transport{Base: base, Policy: cfg}
		},
		InFleet: func(base http.RoundTripper, fleet retryhttp.Fleet) http.RoundTripper {
			return &retryhttp.Transport{Base: base, Policy: cfg, Fleet: fleet}
		},
		Refusal: retryhttpRefusal,
	}
}

// retryhttpRefusal names retryhttp's local refusals: a hold, or any
// other request failed with no attempt sent.
func retryhttpRefusal(err error) string {
	var e *retryhttp.Error
	switch {
	case errors.Is(err, retryhttp.ErrHeld):
		return "held"
	case errors.As(err, &e) && e.Attempts == 0:
		return "unsent"
	}
	return ""
}

// Static is a hand-written retry loop with a fixed schedule: up to
// [StaticAttempts] attempts, [StaticBackoff] apart, each cut at
// [StaticAttemptTimeout]; no Retry-After, no budget.
func Static() Contender {
	return Contender{Name: "static", Label: "static retries",
		Notes: []string{"3 attempts, 100 ms apart, 300 ms per attempt; 429, 502-504 and errors retried"},
		New:   func(base http.RoundTripper) http.RoundTripper { return static{base} }}
}

// Retryablehttp is go-retryablehttp mapped from [OverloadSpec]: its
// DefaultBackoff, which sleeps out a Retry-After on 429 and 503.
func Retryablehttp() Contender {
	return Contender{Name: "retryablehttp", Label: "go-retryablehttp",
		Notes: retryablehttpPeer().Notes,
		New: func(base http.RoundTripper) http.RoundTripper {
			return newRetryablehttp(OverloadSpec(), base)
		}}
}

// Failsafe is failsafe-go's retry policy mapped from [OverloadSpec],
// with Retry-After through failsafehttp.DelayFunc.
func Failsafe() Contender {
	return Contender{Name: "failsafe", Label: "failsafe-go retry",
		Notes: failsafeRetry(false).Notes,
		New: func(base http.RoundTripper) http.RoundTripper {
			return failsafehttp.NewRoundTripper(base, failsafeRetryBuilder(OverloadSpec()).Build())
		}}
}

// FailsafeThrottler is failsafe-go's retry policy around its adaptive
// throttler (the SRE book's client-side throttling) at its defaults
// (failure rate threshold 0.1 over 1 minute, rejection at most 0.9),
// counting the spec's statuses and errors as failures. Each attempt goes
// through the throttler; a rejection ends the request.
func FailsafeThrottler() Contender {
	return Contender{Name: "failsafe-throttler", Label: "failsafe-go retry + adaptive throttler",
		Notes: []string{"retry as failsafe-go retry, around adaptivethrottler.NewBuilder() at its defaults, one per client",
			"failures: the spec's statuses and errors; a rejection (ErrExceeded) is not retried"},
		New: func(base http.RoundTripper) http.RoundTripper {
			s := OverloadSpec()
			th := adaptivethrottler.NewBuilder[*http.Response]().
				HandleIf(func(resp *http.Response, err error) bool {
					return err != nil || s.Retries(resp.StatusCode)
				}).Build()
			retry := failsafeRetryBuilder(s).AbortOnErrors(adaptivethrottler.ErrExceeded).Build()
			return failsafehttp.NewRoundTripper(base, retry, th)
		},
		Refusal: func(err error) string {
			if errors.Is(err, adaptivethrottler.ErrExceeded) {
				return "throttled"
			}
			return ""
		}}
}

// FailsafeLimiter is failsafe-go's retry policy around its adaptive
// concurrency limiter at its defaults (limit 1 to 200, 20 at first, from
// latency; no queueing: an attempt over the limit is rejected at once).
// Each attempt holds a permit; a rejection ends the request.
func FailsafeLimiter() Contender {
	return Contender{Name: "failsafe-limiter", Label: "failsafe-go retry + adaptive limiter",
		Notes: []string{"retry as failsafe-go retry, around adaptivelimiter.NewWithDefaults(), one per client",
			"a rejection (ErrExceeded) is not retried"},
		New: func(base http.RoundTripper) http.RoundTripper {
			lim := adaptivelimiter.NewWithDefaults[*http.Response]()
			retry := failsafeRetryBuilder(OverloadSpec()).AbortOnErrors(adaptivelimiter.ErrExceeded).Build()
			return failsafehttp.NewRoundTripper(base, retry, lim)
		},
		Refusal: func(err error) string {
			if errors.Is(err, adaptivelimiter.ErrExceeded) {
				return "shed"
			}
			return ""
		}}
}
