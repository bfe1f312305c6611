package retrytrace

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/retryhttp/retryhttp/internal/redact"
)

// LogHooks returns hooks that log, with l, what a retryhttp.Transport does
// for a request beyond sending it once. A nil l means [slog.Default], as
// it is when each record is made. Set them as the Transport's Hooks, or
// pass them to [WithHooks].
//
// The levels:
//   - Debug: each attempt that did not succeed, with its outcome and its
//     status or error (and the error code its rule's table read, if
//     any); an attempt sent again under its number (a transparent
//     resend, or one a dial backoff window held back); a hedging delay
//     as it starts, which every hedged request reports.
//   - Info: a wait before an attempt (a backoff, a server delay, a
//     hold, the pace, a place in line, a dial backoff window), with its
//     announced length and reason; a hedge sent; a request answered
//     after more than one attempt, a transparent resend or a wait, with
//     the time its waits lasted (retry_delay).
//   - Warn: an attempt the policy would make that is refused (see
//     [RefusalReason]); a request that ends, after more than one attempt,
//     a resend or a wait, in an error or in a 429 or 5xx.
//
// A request whose first attempt is sent at once and succeeds logs
// nothing above Debug (a hedged one logs its hedging delay there), and
// costs nothing but the hook calls. One that waited first, for a hold,
// the pace or a place in line, logs its end, so that the time it was
// held shows as it lasted, not only as announced.
//
// Each record carries the request's method, host (lowercased, as Stats
// names it) and path, then those of attempt, delay, reason, outcome,
// status_code, error, error_code, latency, attempts, hedges,
// transparent_retries, retry_delay, pace_rate, concurrency_limit and
// in_flight that apply: the names of the fields of the hooks' payloads,
// in snake case (error for Err). No record holds
// a query string, a fragment, userinfo or a header value: every URL in an
// error's text is cut down to its scheme, host and path. An error's text
// is at most 8 KiB, a longer one shortened and ending in " …", so that
// what a server makes an error say costs each record little.
//
// The hooks are safe for concurrent use and keep no state.
func LogHooks(l *slog.Logger) *Hooks {
	h := logHooks{l: l}
	return &Hooks{
		AttemptStart: h.attemptStart,
		AttemptDone:  h.attemptDone,
		Wait:         h.wait,
		Refused:      h.refused,
		Done:         h.done,
	}
}

type logHooks struct{ l *slog.Logger }

// log makes a record about req, if l is enabled at level.
func (h logHooks) log(req *http.Request, level slog.Level, msg string, attrs ...slog.Attr) {
	l := h.l
	if l == nil {
		l = slog.Default()
	}
	ctx := req.Context()
	if !l.Enabled(ctx, level) {
		return
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	path := req.URL.Path
	if path == "" {
		path = "/" // as net/http sends it
	}
	all := make([]slog.Attr, 0, 3+len(attrs))
	all = append(all, slog.String("method", method), slog.String("host", strings.ToLower(req.URL.Host)), slog.String("path", path))
	l.LogAttrs(ctx, level, msg, append(all, attrs...)...)
}

func (h logHooks) attemptStart(a AttemptStartInfo) {
	switch {
	case a.Resend:
		h.log(a.Request, slog.LevelDebug, "retryhttp: resending", slog.Int("attempt", a.Attempt))
	case a.Hedge:
		h.log(a.Request, slog.LevelInfo, "retryhttp: hedging", slog.Int("attempt", a.Attempt))
	}
}

func (h logHooks) attemptDone(a AttemptDoneInfo) {
	if a.Outcome == OutcomeSuccess {
		return
	}
	var code slog.Attr // empty, which handlers leave out, when no code was read
	if a.ErrorCode != "" {
		code = slog.String("error_code", a.ErrorCode)
	}
	h.log(a.Request, slog.LevelDebug, "retryhttp: attempt failed", slog.Int("attempt", a.Attempt),
		slog.String("outcome", string(a.Outcome)), statusOrError(a.StatusCode, a.Err), slog.Duration("latency", a.Latency), code)
}

func (h logHooks) wait(w WaitInfo) {
	level := slog.LevelInfo
	if w.Reason == WaitHedgeDelay {
		level = slog.LevelDebug // every hedged request reports one, whether a hedge follows or not
	}
	h.log(w.Request, level, "retryhttp: waiting", w.Gauges.attrs(slog.Int("attempt", w.Attempt),
		slog.Duration("delay", w.Delay), slog.String("reason", string(w.Reason)))...)
}

func (h logHooks) refused(r RefusedInfo) {
	h.log(r.Request, slog.LevelWarn, "retryhttp: attempt refused", r.Gauges.attrs(slog.Int("attempt", r.Attempt),
		slog.String("reason", string(r.Reason)))...)
}

// attrs returns attrs followed by those of g that apply.
func (g Gauges) attrs(attrs ...slog.Attr) []slog.Attr {
	if g.PaceRate > 0 {
		attrs = append(attrs, slog.Float64("pace_rate", g.PaceRate))
	}
	if g.ConcurrencyLimit > 0 {
		attrs = append(attrs, slog.Int("concurrency_limit", g.ConcurrencyLimit), slog.Int("in_flight", g.InFlight))
	}
	return attrs
}

func (h logHooks) done(d DoneInfo) {
	if d.Attempts <= 1 && d.TransparentRetries == 0 && d.RetryDelay == 0 {
		return // answered, or failed, as a plain client would have
	}
	attrs := []slog.Attr{slog.Int("attempts", d.Attempts)}
	if d.Hedges > 0 {
		attrs = append(attrs, slog.Int("hedges", d.Hedges))
	}
	if d.TransparentRetries > 0 {
		attrs = append(attrs, slog.Int("transparent_retries", d.TransparentRetries))
	}
	attrs = append(attrs, slog.Duration("retry_delay", d.RetryDelay), statusOrError(d.StatusCode, d.Err))
	if d.Err != nil || d.StatusCode == http.StatusTooManyRequests || d.StatusCode >= 500 {
		h.log(d.Request, slog.LevelWarn, "retryhttp: gave up", attrs...)
		return
	}
	h.log(d.Request, slog.LevelInfo, "retryhttp: answered", attrs...)
}

// statusOrError is the error when there is one, else the status.
func statusOrError(status int, err error) slog.Attr {
	if err != nil {
		return slog.String("error", redact.Text(err.Error()))
	}
	return slog.Int("status_code", status)
}
