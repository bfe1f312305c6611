package retryhttp

import (
	"context"
	"fmt"

	"github.com/retryhttp/retryhttp/policy"
)

// options are what a request's context asks of the Transport for that
// request alone. They travel under one context key, so that a request
// pays one lookup for all of them; each With function copies them.
type options struct {
	rule         *policy.Rule // nil: the Transport's policy decides
	ruleErr      error        // why rule is invalid, found when it was set
	noRetries    bool
	waitForReady bool
	prepare      preparer // nil: none
}

type optionsKey struct{}

func optionsOf(ctx context.Context) *options {
	o, _ := ctx.Value(optionsKey{}).(*options)
	return o
}

// with returns ctx carrying a copy of its options changed by f.
func with(ctx context.Context, f func(*options)) context.Context {
	var o options
	if old := optionsOf(ctx); old != nil {
		o = *old
	}
	f(&o)
	return context.WithValue(ctx, optionsKey{}, &o)
}

// WithPolicy returns a context under which a request follows rule instead
// of the rule its Transport's policy matches for it. The rule's Name is
// not used. A nil rule means the Transport's policy again. WithPolicy
// checks the rule as a rule of a Config would be checked, without
// requiring names; an invalid one makes [Transport.RoundTrip] of a request
// carrying the context fail at once, before anything is sent, with an
// error naming the field, after closing the request's body. rule must not
// be modified once a request uses it.
//
// [WithoutRetries] wins over WithPolicy, whichever was applied last.
func WithPolicy(ctx context.Context, rule *policy.Rule) context.Context {
	var err error
	if rule != nil {
		if err = rule.Validate(); err != nil {
			err = fmt.Errorf("retryhttp: invalid per-call rule: %w", err)
		}
	}
	return with(ctx, func(o *options) { o.rule, o.ruleErr = rule, err })
}

// WithoutRetries returns a context under which a request is sent once: no
// retry and no hedge, whatever the policy says. An attempt that provably
// never reached the server may still be resent once, at once, as for any
// request.
func WithoutRetries(ctx context.Context) context.Context {
	return with(ctx, func(o *options) { o.noRetries = true })
}

// WithWaitForReady returns a context under which a request waits out a
// dial backoff window of its host (within its deadline) instead of
// failing at once, as a gRPC call marked wait-for-ready does. Under a
// retry rule the wait spends no attempt; under a hedging rule the hedge
// the window refused is spent, and the next one goes when the window
// ends.
func WithWaitForReady(ctx context.Context) context.Context {
	return with(ctx, func(o *options) { o.waitForReady = true })
}
