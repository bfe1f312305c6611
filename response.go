package retryhttp

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"
)

// tiedBody cancels its attempt's context once the body is read to its
// end or closed. Cancelling any earlier would cut the body short; never
// cancelling would leave the context registered with the caller's until
// that ends. net/http hands the connection back to its pool before the
// final Read returns io.EOF, so cancelling then costs no reuse.
type tiedBody struct {
	rc     io.ReadCloser
	cancel context.CancelCauseFunc
}

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

// dropKept discards k, the body of a response kept through a wait: its
// read-ahead, usually over long since, is given what is left of its drain
// bound, then the attempt is cancelled and the body closed under it, on a
// goroutine of its own since Close may wait for the read in progress; a
// little longer, at most, for the read to end.
func (r *result) dropKept(k *keptBody) {
	if left := time.Until(k.until); !k.over() && left > 0 {
		t := time.NewTimer(left)
		select {
		case <-k.done:
		case <-t.C:
		}
		t.Stop()
	}
	if k.over() {
		k.Close()
		return
	}
	if r.cancel != nil {
		r.cancel(errDrainTimeout)
	}
	go k.Close()
	// A body that honours its context or Close ends its read now; one
	// that ignores both is left to its goroutine.
	t := time.NewTimer(drainTimeout / 10)
	defer t.Stop()
	select {
	case <-k.done:
	case <-t.C:
	}
}

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
	if k, ok := body.(*keptBody); ok {
		r.dropKept(k)
		return
	}
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

// keep makes r's response fit to be handed back after a wait, the latest
// outcome kept in case no further attempt does better: its body is read
// ahead into memory, up to drainLimit, on a goroutine of its own, so that
// its connection goes back to the pool while the request waits. Once the
// body is read whole, the attempt's request body is stopped too, as the
// server has answered it, so that an attempt the server refused does not
// go on sending. (That it never pushes a body replayed from the buffer
// past its limit under the next attempt is the buffer's own rule: see
// startPullLocked.) A body longer than the bound is kept as it is after
// the bytes read ahead. When the response is discarded, a read-ahead
// still going after drainTimeout is cut off, as a drain is.
func (r *result) keep() {
	if r.resp == nil {
		return
	}
	k := &keptBody{rest: r.resp.Body, done: make(chan struct{}), until: time.Now().Add(drainTimeout)}
	r.resp.Body = k
	go k.readAhead(r.body)
}

// keptBody is a response body read ahead by keep: the bytes read ahead,
// then the rest of the body unless it ended. Read waits for the read-ahead
// to stop, which it does at drainLimit bytes, at the end of the body, or
// once the body is cut off under it.
type keptBody struct {
	rest  io.ReadCloser
	done  chan struct{} // closed when the read-ahead has stopped
	until time.Time     // when a discard cuts the read-ahead off
	// Written by the read-ahead before done is closed.
	ahead bytes.Buffer
	whole bool  // the body ended within the read-ahead, and rest is closed
	err   error // what ended the read-ahead short, the end of the body aside
	// closed says Close has been called; only the owner of the response
	// reads and writes it.
	closed bool
	// restOnce closes rest once: the read-ahead closes it when the body
	// ends, and the owner's Close may come first, or meanwhile; a body
	// that ends as it is closed would otherwise be closed twice, which
	// io.Closer leaves undefined.
	restOnce sync.Once
}

// readAhead reads the body ahead; sending, the attempt's request body
// from the buffer, is stopped once the body is whole.
func (k *keptBody) readAhead(sending *bodyReader) {
	defer close(k.done)
	_, err := io.CopyN(&k.ahead, k.rest, drainLimit+1)
	switch {
	case err == io.EOF:
		k.whole = true
		k.closeRest()
		if sending != nil {
			sending.Close()
		}
	case err != nil:
		k.err = err
	}
}

func (k *keptBody) Read(p []byte) (int, error) {
	<-k.done
	if k.ahead.Len() > 0 {
		return k.ahead.Read(p)
	}
	switch {
	case k.whole:
		return 0, io.EOF
	case k.err != nil:
		return 0, k.err
	}
	return k.rest.Read(p)
}

// over reports whether the read-ahead has stopped.
func (k *keptBody) over() bool {
	select {
	case <-k.done:
		return true
	default:
		return false
	}
}

// Close closes the body under the read-ahead, if it is still open; a
// read-ahead in progress then ends with the body's error.
func (k *keptBody) Close() error {
	if k.closed {
		return nil
	}
	k.closed = true
	return k.closeRest()
}

// closeRest closes rest unless it was closed already, by the read-ahead
// or by Close, and returns its error to the one that closed it.
func (k *keptBody) closeRest() error {
	var err error
	k.restOnce.Do(func() { err = k.rest.Close() })
	return err
}
