package retryhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// AttemptsHeader is set on attempt k >= 2 of a request to k-1, and on the
// response returned to the caller to the number of attempts sent before the
// one that produced it. [Transport.OmitAttemptsHeader] turns both off.
const AttemptsHeader = "X-Retry-Attempts"

// errAttemptTimeout is the cause of an attempt cut by its per-attempt
// timeout. It is a timeout in the sense of [net.Error].
var errAttemptTimeout error = timeoutError("retryhttp: per-attempt timeout")

type timeoutError string

func (e timeoutError) Error() string   { return string(e) }
func (e timeoutError) Timeout() bool   { return true }
func (e timeoutError) Temporary() bool { return true }

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
}

// result is the outcome of one attempt.
type result struct {
	n         int
	hedge     bool
	resend    bool
	resp      *http.Response
	err       error
	unwritten bool // the base showed it never wrote the request
	// unprocessed says the caller's classifier found that the server did
	// not act on the request, so that it may be sent again whatever its
	// method.
	unprocessed bool
	latency     time.Duration // until the response headers, or the error
	delay       serverDelay   // what the response's headers ask of the next attempt
	ctx         context.Context
	cancel      context.CancelCauseFunc // nil: the attempt ran under the caller's context
	addr        string
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

// abandon lets go of an attempt that will not be sent: its body reader
// and its context.
func (a *attempt) abandon() {
	if a.req != nil && a.req.Body != nil {
		a.req.Body.Close()
	}
	if a.cancel != nil {
		a.cancel(context.Canceled)
	}
}

// send sends the attempt and makes its result obey the RoundTripper
// contract whatever the base did. An attempt with a context of its own
// keeps it until its response body is read to its end or closed.
func (a *attempt) send() result {
	r := result{n: a.n, hedge: a.hedge, resend: a.resend, ctx: a.ctx, cancel: a.cancel, addr: a.addr}
	var timer *time.Timer
	if a.timeout > 0 {
		cancel := a.cancel // not a, which would then escape on every attempt
		timer = time.AfterFunc(a.timeout, func() { cancel(errAttemptTimeout) })
	}
	start := time.Now()
	r.resp, r.err = a.base.RoundTrip(a.req)
	r.latency = time.Since(start)
	r.unwritten = a.trace.unwritten()
	if timer != nil && !timer.Stop() && r.err == nil {
		// The timeout fired as the headers arrived: the context is, or
		// is about to be, gone, so the body could not be read. Count it
		// as the timeout it was. The timer's function runs on a
		// goroutine of its own and may not have cancelled yet: cancel
		// here too, so that the cause is there (the first one stays).
		a.cancel(errAttemptTimeout)
		r.resp.Body.Close()
		r.resp, r.err = nil, context.Cause(a.ctx)
	}
	r.settle()
	return r
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
	if r.cancel != nil {
		r.resp.Body = tie(r.resp.Body, r.cancel)
	}
}

// causeError is a base transport's error for an attempt whose context was
// cancelled, together with the reason for the cancellation.
type causeError struct{ err, cause error }

func (e *causeError) Error() string   { return e.err.Error() + " (" + e.cause.Error() + ")" }
func (e *causeError) Unwrap() []error { return []error{e.err, e.cause} }

// othersCancellation reports whether err, reported for an attempt whose own
// context is live, is the cancellation of another request: one of the
// causes this package cancels attempts with, or net/http's own "request
// canceled", which it gives a request cancelled through Request.Cancel.
// A bare context error is not taken for one: a base may time out on its
// own (a middleware's context.WithTimeout), and its error keeps its
// identity, transient as any timeout.
func othersCancellation(err error) bool {
	return errors.Is(err, errHedgeLost) || errors.Is(err, errHedgeCut) || errors.Is(err, errAttemptTimeout) ||
		errors.Is(err, errDrainTimeout) || errors.Is(err, errBodyDone) || errors.Is(err, errCallDone) ||
		errors.Is(err, errRequestCanceled) || stdlibText(err) == textCancelled
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

// tiedBody cancels its attempt's context once the body is read to its
// end or closed. Cancelling any earlier would cut the body short; never
// cancelling would leave the context registered with the caller's until
// that ends. net/http hands the connection back to its pool before the
// final Read returns io.EOF, so cancelling then costs no reuse.
type tiedBody struct {
	rc     io.ReadCloser
	cancel context.CancelCauseFunc
}

var errBodyDone = errors.New("retryhttp: response body closed")

func (b *tiedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.cancel(errBodyDone)
	}
	return n, err
}

func (b *tiedBody) Close() error {
	err := b.rc.Close()
	b.cancel(errBodyDone)
	return err
}

// tiedRWBody keeps the io.Writer of a 101 Switching Protocols body, which
// net/http exposes as an io.ReadWriteCloser for the upgraded connection.
type tiedRWBody struct {
	tiedBody
	w io.Writer
}

func (b *tiedRWBody) Write(p []byte) (int, error) { return b.w.Write(p) }

func tie(rc io.ReadCloser, cancel context.CancelCauseFunc) io.ReadCloser {
	if rw, ok := rc.(io.ReadWriteCloser); ok {
		return &tiedRWBody{tiedBody{rc, cancel}, rw}
	}
	return &tiedBody{rc, cancel}
}

// Bounds on draining a response that is discarded: up to drainLimit bytes
// within drainTimeout keep its connection for reuse; past either the
// attempt is cancelled and its body closed instead, so that a slow or
// endless body cannot hold the request up.
const (
	drainLimit   = 64 << 10
	drainTimeout = 100 * time.Millisecond
)

var errDrainTimeout = errors.New("retryhttp: draining a discarded response took too long")

// abort closes the response of an attempt that lost, cancelling the attempt
// first, so that a body still arriving cannot hold anyone up: no drain, at
// the cost of its connection.
func (r *result) abort(cause error) {
	if r.resp == nil {
		return
	}
	if r.cancel != nil {
		r.cancel(cause)
	}
	r.resp.Body.Close()
	r.resp = nil
}

// discard drains and closes the response of an attempt that lost or is
// being retried, waiting drainTimeout at most whatever the body does. A
// body of known length over drainLimit is closed at once. The drain runs
// on a goroutine of its own, so that a body that ignores both its context
// and Close delays the request by drainTimeout only: that goroutine ends
// when the body's Read returns, which for net/http is at once once the
// attempt is cancelled or the body closed.
func (r *result) discard() {
	if r.resp == nil {
		return
	}
	body, length := r.resp.Body, r.resp.ContentLength
	r.resp = nil
	if length > drainLimit {
		body.Close()
		return
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		io.CopyN(io.Discard, body, drainLimit+1)
	}()
	timer := time.NewTimer(drainTimeout)
	defer timer.Stop()
	select {
	case <-drained:
		body.Close()
	case <-timer.C:
		if r.cancel != nil {
			r.cancel(errDrainTimeout)
		}
		// Close may wait for the Read in progress, as net/http's own
		// body does; it must not hold the request up.
		go body.Close()
	}
}
