package retryhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"
	"time"
)

// AttemptsHeader is set on attempt k >= 2 of a request to k-1, and on the
// response returned to the caller to the number of attempts sent before the
// one that produced it.
const AttemptsHeader = "X-Retry-Attempts"

// errAttemptTimeout is the cause of an attempt cut by its per-attempt
// timeout. It is a timeout in the sense of [net.Error].
var errAttemptTimeout error = timeoutError("retryhttp: per-attempt timeout")

type timeoutError string

func (e timeoutError) Error() string   { return string(e) }
func (e timeoutError) Timeout() bool   { return true }
func (e timeoutError) Temporary() bool { return true }

// result is the outcome of one attempt.
type result struct {
	resp      *http.Response
	err       error
	unwritten bool          // the base showed it never wrote the request
	resend    bool          // a transparent resend of its attempt
	latency   time.Duration // until the response headers, or the error
	delay     serverDelay   // what the response's headers ask of the next attempt
	cancel    context.CancelCauseFunc
	ctx       context.Context
}

// send makes attempt n (1-based) of c's request under ctx, a context of
// its own derived from the caller's, which cancel ends: it lives until the
// response body is read to its end or closed. The attempt has its own body
// reader. base sends it: the Transport's base or, for an attempt of a
// hedged request, one that reaches a distinct backend.
func (c *call) send(ctx context.Context, cancel context.CancelCauseFunc, n int, timeout time.Duration, base http.RoundTripper) result {
	var traced, wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn:      func(string) { traced.Store(true) },
		WroteHeaders: func() { wrote.Store(true) },
	})
	r := result{ctx: ctx, cancel: cancel}
	body, length, err := c.body.newReader(n)
	if err != nil {
		cancel(err)
		r.err = err
		return r
	}
	areq := c.req.WithContext(ctx) // shallow: the caller's header is only read
	areq.Body, areq.ContentLength = body, length
	if n > 1 {
		areq.Header = c.req.Header.Clone()
		areq.Header.Set(AttemptsHeader, strconv.Itoa(n-1))
	}
	var timer *time.Timer
	if timeout > 0 {
		timer = time.AfterFunc(timeout, func() { cancel(errAttemptTimeout) })
	}
	start := time.Now()
	r.resp, r.err = base.RoundTrip(areq)
	r.latency = time.Since(start)
	// Only a base that reports through httptrace can prove it wrote
	// nothing: one that never asked for a connection proves nothing.
	r.unwritten = traced.Load() && !wrote.Load()
	if timer != nil && !timer.Stop() && r.err == nil {
		// The timeout fired as the headers arrived: the context is gone,
		// so the body could not be read. Count it as the timeout it was.
		r.resp.Body.Close()
		r.resp, r.err = nil, context.Cause(ctx)
	}
	c.settle(&r)
	return r
}

// settle makes r obey the RoundTripper contract whatever the base did, and
// ties the attempt's context to its response body.
func (c *call) settle(r *result) {
	switch {
	case r.err != nil && r.resp != nil:
		r.resp.Body.Close()
		r.resp = nil
	case r.err == nil && r.resp == nil:
		r.err = errors.New("retryhttp: base transport returned neither response nor error")
	}
	if r.err != nil {
		if cause := context.Cause(r.ctx); cause != nil && !errors.Is(r.err, cause) {
			// The base reports a bare "context canceled"; keep why.
			r.err = &causeError{err: r.err, cause: cause}
		}
		r.cancel(r.err)
		return
	}
	if r.resp.Body == nil {
		r.resp.Body = http.NoBody
	}
	r.resp.Body = releasing(r.resp.Body, r.cancel)
	r.delay = parseServerDelay(r.resp.Header, time.Now())
}

// causeError is a base transport's error for an attempt whose context was
// cancelled, together with the reason for the cancellation.
type causeError struct{ err, cause error }

func (e *causeError) Error() string   { return e.err.Error() + " (" + e.cause.Error() + ")" }
func (e *causeError) Unwrap() []error { return []error{e.err, e.cause} }

// releaseBody cancels its attempt's context once the body is read to its
// end or closed. Cancelling any earlier would cut the body short; never
// cancelling would leave the context registered with the caller's until
// that ends. net/http hands the connection back to its pool before the
// final Read returns io.EOF, so cancelling then costs no reuse.
type releaseBody struct {
	rc     io.ReadCloser
	cancel context.CancelCauseFunc
}

var errBodyDone = errors.New("retryhttp: response body closed")

func (b *releaseBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.cancel(errBodyDone)
	}
	return n, err
}

func (b *releaseBody) Close() error {
	err := b.rc.Close()
	b.cancel(errBodyDone)
	return err
}

// releaseRWBody keeps the io.Writer of a 101 Switching Protocols body, which
// net/http exposes as an io.ReadWriteCloser for the upgraded connection.
type releaseRWBody struct {
	releaseBody
	w io.Writer
}

func (b *releaseRWBody) Write(p []byte) (int, error) { return b.w.Write(p) }

func releasing(rc io.ReadCloser, cancel context.CancelCauseFunc) io.ReadCloser {
	if rw, ok := rc.(io.ReadWriteCloser); ok {
		return &releaseRWBody{releaseBody{rc, cancel}, rw}
	}
	return &releaseBody{rc, cancel}
}

// Bounds on draining a response that is discarded: up to drainLimit bytes
// within drainTimeout keep its connection for reuse; past either the
// connection is closed instead, so that a slow or endless body cannot hold
// the request up.
const (
	drainLimit   = 64 << 10
	drainTimeout = 100 * time.Millisecond
)

var errDrainTimeout = errors.New("retryhttp: draining a discarded response took too long")

// cut closes the response of an attempt that lost, cancelling the attempt
// first, so that a body still arriving cannot hold anyone up: no drain, at
// the cost of its connection.
func (r *result) cut(cause error) {
	if r.resp == nil {
		return
	}
	r.cancel(cause)
	r.resp.Body.Close()
	r.resp = nil
}

// discard drains (within bounds) and closes the response of an attempt
// that lost or is being retried.
func (r *result) discard() {
	if r.resp == nil {
		return
	}
	resp := r.resp
	r.resp = nil
	body := resp.Body
	if resp.ContentLength > drainLimit {
		body.Close()
		return
	}
	timer := time.AfterFunc(drainTimeout, func() { r.cancel(errDrainTimeout) })
	io.CopyN(io.Discard, body, drainLimit+1)
	timer.Stop()
	body.Close()
}
