// Package retrytrace reports what a [github.com/retryhttp/retryhttp.Transport]
// does for each request, as [net/http/httptrace] reports what net/http
// does: [Hooks] are called as each attempt is sent and answered, before
// each wait, for each attempt the policy would make and does not, and once
// as the request ends. Set them as the Transport's Hooks for every
// request, or give them to one request with [WithHooks]; [JoinHooks] runs
// several sets as one.
//
// An attempt's result is named by an [Outcome], a wait by a [WaitReason]
// and a refusal by a [RefusalReason]: short strings that [LogHooks] and
// the otel module record as they are.
//
// [LogHooks] logs with log/slog what a request costs beyond one attempt,
// and, above Debug, nothing for a request answered at once. Nothing is
// reported unless hooks are set.
package retrytrace
