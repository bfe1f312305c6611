package otel

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/retryhttp/retryhttp/internal/redact"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// Attribute keys of this package's own, beside the semantic conventions'.
const (
	// RuleKey is the rule that governed the request, as in
	// [retryhttp.Stats.Rules]: the rule's key (policy.Rule.Key), or "(none)".
	RuleKey = attribute.Key("retryhttp.rule")
	// AttemptKey is the attempt's number, 1 for the first; a transparent
	// resend repeats the number of the attempt it resends.
	AttemptKey = attribute.Key("retryhttp.attempt")
	// OutcomeKey is what the attempt's result meant: one of the values of
	// [retrytrace.Outcome].
	OutcomeKey = attribute.Key("retryhttp.outcome")
	// HedgeKey tells whether the attempt was sent as a hedge.
	HedgeKey = attribute.Key("retryhttp.hedge")
	// ResendKey tells whether the attempt was sent again under its number
	// (a retrytrace.AttemptStartInfo's Resend): the transparent resend of
	// one that never reached the server, or, for a request that waits for
	// ready, the attempt a dial backoff window held back.
	ResendKey = attribute.Key("retryhttp.resend")
	// WaitDelayKey is the delay announced before the attempt (a
	// retrytrace.WaitInfo's Delay), in
	// seconds; absent when none was.
	WaitDelayKey = attribute.Key("retryhttp.wait.delay")
	// WaitReasonKey says why the wait was as long as it was: one of the
	// values of [retrytrace.WaitReason].
	WaitReasonKey = attribute.Key("retryhttp.wait.reason")
	// RefusalReasonKey says why an attempt was not made: one of the
	// values of [retrytrace.RefusalReason].
	RefusalReasonKey = attribute.Key("retryhttp.refusal.reason")
	// ErrorCodeKey is the error code that the rule's error table
	// (policy.Rule.ErrorCodes) read from the attempt's answer, listed or
	// not (a retrytrace.AttemptDoneInfo's ErrorCode); absent when none
	// was read.
	ErrorCodeKey = attribute.Key("retryhttp.error_code")
)

// RefusedEvent is the name of the event added to the span in the
// request's context when an attempt the policy would make is not made,
// with [AttemptKey] (the attempt not made) and [RefusalReasonKey].
const RefusedEvent = "retryhttp.refused"

// knownMethods are the methods the semantic conventions know; any other is
// recorded as "_OTHER", so that a client that sends odd methods cannot
// make the number of series grow.
var knownMethods = map[string]bool{
	http.MethodConnect: true, http.MethodDelete: true, http.MethodGet: true,
	http.MethodHead: true, http.MethodOptions: true, http.MethodPatch: true,
	http.MethodPost: true, http.MethodPut: true, http.MethodTrace: true,
}

// method returns the request's method as the semantic conventions record
// it, and whether it is one they know.
func method(req *http.Request) (string, bool) {
	m := req.Method
	if m == "" {
		return http.MethodGet, true // as net/http sends it
	}
	if knownMethods[m] {
		return m, true
	}
	return "_OTHER", false
}

// server returns server.address and, when known, server.port: the URL's
// own port, or the default port of http and https.
func server(u *url.URL) []attribute.KeyValue {
	kv := []attribute.KeyValue{semconv.ServerAddress(strings.ToLower(u.Hostname()))}
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return append(kv, semconv.ServerPort(p))
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		kv = append(kv, semconv.ServerPort(80))
	case "https":
		kv = append(kv, semconv.ServerPort(443))
	}
	return kv
}

// fullURL returns url.full for u without what may be secret: the query
// and fragment are left out, and userinfo is replaced as the semantic
// conventions ask.
func fullURL(u *url.URL) string { return redact.URL(u) }

// errorType returns the attempt's error.type, or "" when it succeeded:
// "cancelled" for an attempt cut off (a hedge another won, even with a
// response in hand as it was cut off), the status code for a status of
// 400 or more, else for an error "timeout" for a timeout, and otherwise
// the attempt's outcome ("network", "never-sent", "fatal" or
// "retryable").
func errorType(a retrytrace.AttemptDoneInfo) string {
	switch {
	case a.Outcome == retrytrace.OutcomeCancelled:
		return "cancelled"
	case a.Err == nil && a.StatusCode >= 400:
		return strconv.Itoa(a.StatusCode)
	case a.Err == nil:
		return ""
	case timeout(a.Err):
		return "timeout"
	}
	return string(a.Outcome)
}

// timeout reports whether err is a deadline that passed or says it is a
// timeout, as a net.Error does.
func timeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &t) && t.Timeout()
}

// scrub returns err's text with every URL in it cut down as url.full
// is, and at most redact.MaxText bytes of it.
func scrub(err error) string { return redact.Text(err.Error()) }
