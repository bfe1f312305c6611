package retryhttp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/policy"

	"github.com/retryhttp/retryhttp/dial"
)

// AttemptsHeader is set on attempt k >= 2 of a request to k-1, and on the
// response returned to the caller to the number of attempts sent before the
// one that produced it. [Transport.OmitAttemptsHeader] turns both off.
const AttemptsHeader = "X-Retry-Attempts"

// ownCause is why this package ended the context of an attempt (or of a
// request): a hedge that lost, a per-attempt timeout, a drain that took
// too long, a body done with. Every such cause is one, so that an attempt
// that meets one while its own context is live knows it for another
// request's cancellation (see lostError) without a list to keep.
type ownCause struct {
	msg     string
	timeout bool  // a timeout, in the sense of net.Error
	is      error // matched too by errors.Is, when set
}

func (e *ownCause) Error() string   { return e.msg }
func (e *ownCause) Timeout() bool   { return e.timeout }
func (e *ownCause) Temporary() bool { return e.timeout }
func (e *ownCause) Unwrap() error   { return e.is }

// The package's causes.
var (
	// errAttemptTimeout cuts an attempt at its per-attempt timeout. It is
	// a timeout in the sense of [net.Error].
	errAttemptTimeout = &ownCause{msg: "retryhttp: per-attempt timeout", timeout: true}
	// errHedgeLost cancels the attempts that lost to another.
	errHedgeLost = &ownCause{msg: "retryhttp: another hedge won"}
	// errHedgeCut cancels the attempts that cannot send a body which
	// outgrew its buffer under another attempt. It matches
	// errBodyCommitted, yet is distinct from a body reader's own
	// errBodyCommitted: net/http may hand it to another request (see
	// lostError), which must take it for a lost connection, not for the
	// end of its own body.
	errHedgeCut = &ownCause{msg: "retryhttp: request body cannot be replayed: another attempt is sending it", is: errBodyCommitted}
	// errDrainTimeout cuts a discarded response whose drain took too long.
	errDrainTimeout = &ownCause{msg: "retryhttp: draining a discarded response took too long"}
	// errBodyDone ends an attempt whose response body was read or closed.
	errBodyDone = &ownCause{msg: "retryhttp: response body closed"}
	// errCallDone ends the context of a request that is over.
	errCallDone = &ownCause{msg: "retryhttp: request done"}
	// errRequestCanceled is the cause of a request whose caller closed
	// its Request.Cancel: http.Client does, on its Timeout, for every
	// request, so the text says what net/http's own does and names no
	// field the caller may never have set.
	errRequestCanceled = &ownCause{msg: "retryhttp: request canceled"}
	// errSuperseded closes an outcome kept for the caller that a later
	// one replaced.
	errSuperseded = &ownCause{msg: "retryhttp: a later answer superseded it"}
	// errPanicked ends the attempts of a request that a panic cut short:
	// of the caller's classifier, a hook, GetBody or the base.
	errPanicked = &ownCause{msg: "retryhttp: request ended by a panic"}
)

// how says how an attempt goes: under a hedging policy (beside others,
// with a context of its own to be cut off by), and as the resend of the
// attempt under its number rather than a new one.
type how struct{ hedged, resend bool }

// hedge reports whether attempt n, going how says, counts as a hedge.
func (w how) hedge(n int) bool { return w.hedged && n > 1 }

// attempt is one attempt of a request, ready to go.
type attempt struct {
	n      int
	hedge  bool
	resend bool // a transparent resend of attempt n
	req    *http.Request
	base   http.RoundTripper
	// ctx is req's context. cancel ends it; it is nil for an attempt that
	// runs under the caller's own context, which the Transport never
	// cancels.
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timeout time.Duration // until the response headers; 0: none
	trace   *writeTrace   // nil: none
	addr    string        // the backend it was routed to, if any
	reading reading       // how its answer is read
}

// reading is what an attempt needs to read its own answer: the caller's
// context, the statuses its rule lists, the server delay headers its
// policy names, and whether it holds hosts.
type reading struct {
	caller context.Context
	listed []int
	delays []policy.DelayHeader
	holds  bool
	pace   bool
	codes  *policy.ErrorCodes // the rule's error table; nil: none
}

// result is the outcome of one attempt.
type result struct {
	n         int
	hedge     bool
	resend    bool
	resp      *http.Response
	err       error
	unwritten bool // the base showed it never wrote the request
	// class is what the outcome means by the rule's lists and the kind
	// of error, before any verdict; coded is the verdict of its error
	// code by the rule's error table (code, "" when none was read), server
	// the server's own verdict
	// (X-Should-Retry), and delay what the response's headers ask of the
	// next attempt. The attempt reads them itself, on its goroutine.
	class       outcome
	coded       Verdict
	code        string
	server      Verdict
	serverDelay serverDelay
	// quota is the wait until the host's quota is given again, when
	// quotaSpent says the answer, of whatever status, spent it.
	quota      time.Duration
	quotaSpent bool
	// fields is what the answer's rate-limit fields say of a quota that
	// is not spent, read when the policy paces hosts.
	fields quota
	// verdict is what the caller's classifier, or the server, said of it:
	// its kind and any wait it asks for.
	verdict Verdict
	latency time.Duration // until the response headers, or the error
	ctx     context.Context
	cancel  context.CancelCauseFunc // nil: the attempt ran under the caller's context
	addr    string
	// body is the attempt's request body, when it is replayed from the
	// buffer, which net/http may go on reading after the response came.
	// It is retired as soon as the attempt has its outcome, so that it
	// never pushes the body past its buffer under a later attempt, and
	// closed once the response kept for a retry has been read, so that
	// an attempt the server refused stops sending.
	body *bodyReader
	// panicked is what the base panicked with, for an attempt sent on a
	// goroutine of its own, to be raised again on the caller's.
	panicked any
	// unprepared says that a Prepare failed, with err, for the attempt,
	// which was not sent: the request ends with err.
	unprepared bool
}

// writeTrace learns from httptrace whether an attempt wrote its request.
type writeTrace struct {
	traced, wrote atomic.Bool
	ct            httptrace.ClientTrace
}

func newWriteTrace() *writeTrace {
	t := &writeTrace{}
	t.ct.GetConn = func(string) { t.traced.Store(true) }
	t.ct.WroteHeaders = func() { t.wrote.Store(true) }
	return t
}

// unwritten reports whether the base asked for a connection and wrote no
// headers on it. Only a base that reports through httptrace can prove it
// wrote nothing: one that never asked for a connection proves nothing.
func (t *writeTrace) unwritten() bool {
	return t != nil && t.traced.Load() && !t.wrote.Load()
}

// abandon lets go of an attempt that will not be sent, or whose base
// panicked: its body reader and its context, with cause.
func (a *attempt) abandon(cause error) {
	if a.req != nil && a.req.Body != nil {
		a.req.Body.Close()
	}
	if a.cancel != nil {
		a.cancel(cause)
	}
}

// fly sends the attempt on a goroutine of its own, a hedge's, and hands
// its result to results, which has room for it: the goroutine ends once
// the attempt has its response headers or its error. A panic of the base
// is handed over too, so that it is raised again on the caller's
// goroutine rather than kill the process.
func (a *attempt) fly(results chan<- result) {
	defer func() {
		if p := recover(); p != nil {
			results <- result{n: a.n, hedge: a.hedge, resend: a.resend, ctx: a.ctx, panicked: p}
		}
	}()
	results <- a.send()
}

// send sends the attempt and makes its result obey the RoundTripper
// contract whatever the base did. An attempt with a context of its own
// keeps it until its response body is read to its end or closed.
func (a *attempt) send() result {
	r := result{n: a.n, hedge: a.hedge, resend: a.resend, ctx: a.ctx, cancel: a.cancel, addr: a.addr}
	if br, ok := a.req.Body.(*bodyReader); ok {
		r.body = br // one of the Transport's own, safe to close while net/http reads it
		// An HTTP/1 base whose context ends waits, before it returns,
		// for its writer to stop reading the body: a caller's body that
		// keeps returning 0, nil would hold it, and the request, for
		// ever. Closing the reader ends the writer's next Read.
		stop := context.AfterFunc(a.ctx, func() { br.Close() })
		defer stop()
	}
	var timer *time.Timer
	if a.timeout > 0 {
		cancel := a.cancel // not a, which would then escape on every attempt
		timer = time.AfterFunc(a.timeout, func() { cancel(errAttemptTimeout) })
	}
	start := time.Now()
	returned := false
	defer func() {
		if !returned { // the base panicked: its attempt ends here
			a.abandon(errPanicked)
		}
	}()
	r.resp, r.err = a.base.RoundTrip(a.req)
	returned = true
	if r.body != nil {
		// Before anyone acts on the outcome, another attempt above all.
		r.body.retire()
	}
	r.latency = time.Since(start)
	r.unwritten = a.trace.unwritten()
	if timer != nil && !timer.Stop() && r.err == nil {
		// The timeout fired as the headers arrived: the context is, or
		// is about to be, gone, so the body could not be read. Count it
		// as the timeout it was. The timer's function runs on a
		// goroutine of its own and may not have cancelled yet: cancel
		// here too, so that the cause is there (the first one stays).
		a.cancel(errAttemptTimeout)
		if r.resp.Body != nil { // settle, not yet run, mends a nil one
			r.resp.Body.Close()
		}
		r.resp, r.err = nil, context.Cause(a.ctx)
	}
	r.settle()
	r.read(a.reading)
	return r
}

// read says what r's outcome means by the rule's lists and the kind of
// error, and reads what the server says of the next attempt: its delay
// signals and its own verdict, on any response that is not a plain
// success, and its error code, on one of status 400 or above, when the
// rule has an error table; and, when the policy holds hosts, whether the
// answer, of any status, says the host's quota is spent, which costs a
// success nothing when it carries no rate-limit field.
func (r *result) read(rd reading) {
	r.class = classify(r, rd.listed, rd.caller.Err() != nil)
	if r.resp == nil {
		return
	}
	now := time.Now()
	if r.class != outDone || r.resp.StatusCode >= 400 {
		r.serverDelay = parseServerDelay(r.resp.Header, now, rd.delays)
		r.server = serverVerdict(r.resp)
	}
	if rd.codes != nil && r.resp.StatusCode >= 400 && rd.caller.Err() == nil {
		r.code, r.coded = codeVerdict(r.ctx, r.resp, rd.codes)
	}
	if rd.holds {
		r.quota, r.quotaSpent = quotaSpent(r.resp.Header, now, rd.delays)
	}
	if rd.pace {
		r.fields = quotaLeft(r.resp.Header, now, rd.delays)
	}
}

// settle makes r obey the RoundTripper contract whatever the base did, and
// ties the attempt's context to its response body.
func (r *result) settle() {
	switch {
	case r.err != nil && r.resp != nil:
		r.resp.Body.Close()
		r.resp = nil
	case r.err == nil && r.resp == nil:
		r.err = errors.New("retryhttp: base transport returned neither response nor error")
	}
	if r.err != nil {
		cause := context.Cause(r.ctx)
		switch {
		case cause == nil && othersCancellation(r.err):
			r.err = &lostError{err: r.err}
		case cause != nil && !errors.Is(r.err, cause):
			// The base reports a bare "context canceled"; keep why.
			r.err = &causeError{err: r.err, cause: cause}
		}
		if r.cancel != nil {
			r.cancel(r.err)
		}
		return
	}
	if r.resp.Body == nil {
		r.resp.Body = http.NoBody
	}
	if r.resp.Header == nil {
		r.resp.Header = make(http.Header)
	}
	if r.cancel != nil {
		r.resp.Body = tie(r.resp.Body, r.cancel)
	}
}

// causeError is a base transport's error for an attempt whose context was
// cancelled, together with the reason for the cancellation.
type causeError struct{ err, cause error }

func (e *causeError) Error() string { return e.err.Error() + " (" + e.cause.Error() + ")" }

// Timeout reports whether the cause was a timeout (the per-attempt
// timeout, a deadline), whatever error the base carried it out with (a
// dial cut short reports a *net.OpError that is no timeout of its own),
// or the base's error was one.
func (e *causeError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.cause, &t) && t.Timeout() || errors.As(e.err, &t) && t.Timeout()
}

// Unwrap returns the base's error and the cause. When the cause is a
// timeout of this package's (the per-attempt timeout), the base's
// context.Canceled (net/http's bare one over HTTP/2, or one a dial of the
// caller's own base wraps in a *net.OpError) is only how the timeout was
// carried out: the base's error then no longer matches it, so that
// errors.Is(err, context.Canceled), in a Classify or in the caller, never
// takes the timeout for a cancellation by the caller, while the rest of
// it (the dial that never reached the server) still counts.
func (e *causeError) Unwrap() []error {
	if own, ok := e.cause.(*ownCause); ok && own.timeout && errors.Is(e.err, context.Canceled) {
		return []error{notCanceled{e.err}, e.cause}
	}
	return []error{e.err, e.cause}
}

// notCanceled is err, matching all that err matches but context.Canceled.
// It has no Unwrap, so that errors.Is asks it and never finds the
// cancellation beneath; errors.As still reaches every error in err.
type notCanceled struct{ err error }

func (e notCanceled) Error() string { return e.err.Error() }

// Is reports whether err matches target, unless target is
// context.Canceled.
func (e notCanceled) Is(target error) bool {
	return target != context.Canceled && errors.Is(e.err, target)
}

// As finds in err the first error that matches target.
func (e notCanceled) As(target any) bool { return errors.As(e.err, target) }

// othersCancellation reports whether err, reported for an attempt whose own
// context is live, is the cancellation of another request: one of the
// causes this package cancels attempts with, or net/http's own "request
// canceled", which it gives a request cancelled through Request.Cancel.
// A bare context error is not taken for one: a base may time out on its
// own (a middleware's context.WithTimeout), and its error keeps its
// identity, transient as any timeout.
func othersCancellation(err error) bool {
	var own *ownCause
	return errors.As(err, &own) || stdlibText(err) == textCancelled
}

// lostError is a cancellation that the base reported for an attempt whose
// own context was live: another request's cancellation reached it. net/http
// does this when a request is cancelled just as its bodiless response
// arrives: the connection has gone back to the idle pool, another request
// takes it, and the cancellation then closes it under that request, which
// gets the first one's cause. For this attempt it is a lost connection,
// transient like any other, never the cancellation it names.
type lostError struct{ err error }

func (e *lostError) Error() string {
	return "retryhttp: connection lost to another request's cancellation: " + e.err.Error()
}

// Unwrap returns nothing: the cancellation named inside is not this
// attempt's, and errors.Is must not find it.
func (e *lostError) Unwrap() error { return nil }

// isLost reports whether err is a connection lost to another request's
// cancellation (see lostError).
func isLost(err error) bool {
	var lost *lostError
	return errors.As(err, &lost)
}

// dialWindow returns how long the address of an attempt that err ended
// stays closed, when its dialer's backoff window refused it, or 0 for any
// other outcome.
func dialWindow(err error) time.Duration {
	if err == nil {
		return 0 // the common case, without the allocation of errors.As
	}
	var dbe *dial.BackoffError
	if errors.As(err, &dbe) {
		return max(dbe.Remaining, time.Nanosecond)
	}
	return 0
}
