package retryhttp

import (
	"context"
	"net/http"
	"strconv"
)

// preparer is the caller's function that prepares an attempt's request
// before it is sent: [Transport.Prepare], or a request's own
// ([WithPrepare]).
type preparer = func(attempt int, req *http.Request) error

// WithPrepare returns a context under which each attempt of a request is
// prepared by f just before it is sent, after the Transport's own Prepare,
// with the same arguments and rules (see [Transport.Prepare]): for what
// one call alone needs, such as a token of its own. A nil f means the
// Transport's Prepare alone; a second WithPrepare replaces the first.
func WithPrepare(ctx context.Context, f func(attempt int, req *http.Request) error) context.Context {
	return with(ctx, func(o *options) { o.prepare = f })
}

// errUnprepared ends what else a request had in flight, and the attempt
// itself, when a Prepare failed: nothing of the attempt is sent.
var errUnprepared = &ownCause{msg: "retryhttp: an attempt's Prepare failed"}

// prepareError is the error of a request whose attempt n its Prepare
// failed: the request ends with it, nothing of the attempt sent, inside
// an [Error], whose text names the package.
type prepareError struct {
	n   int
	err error
}

func (e *prepareError) Error() string {
	return "preparing attempt " + strconv.Itoa(e.n) + ": " + e.err.Error()
}

func (e *prepareError) Unwrap() error { return e.err }

// preparing reports whether the request's attempts are prepared: each is
// then a copy of the caller's request with a header of its own.
func (c *call) preparing() bool { return c.prepares[0] != nil || c.prepares[1] != nil }

// prepare calls the Transport's Prepare, then the request's, on attempt
// a, which goes next. When one fails, or panics, a is let go of (its body
// reader closed, its context ended) and left zero, so that letting go of
// it again does nothing; the failure is returned as a *prepareError, and
// a panic goes on up to the caller of RoundTrip.
func (c *call) prepare(a *attempt) error {
	if !c.preparing() {
		return nil
	}
	var err error
	done := false
	defer func() {
		if !done || err != nil {
			a.abandon(errUnprepared)
			*a = attempt{}
		}
	}()
	for _, f := range c.prepares {
		if f == nil {
			continue
		}
		if err = f(a.n, a.req); err != nil {
			err = &prepareError{n: a.n, err: err}
			break
		}
	}
	done = true
	return err
}

// start reports the start of attempt a, going as w says, letting a go
// of should a hook panic.
func (c *call) start(a *attempt, w how) {
	done := false
	defer func() {
		if !done {
			a.abandon(errPanicked)
		}
	}()
	c.attemptStarted(a.n, w)
	done = true
}
