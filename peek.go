package retryhttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// maxPeek is the most bytes [PeekBody] reads: a larger n counts as this
// many, so that a classifier's peek never holds more than 1 MiB of a body.
const maxPeek = 1 << 20

// PeekBody returns up to n bytes from the start of resp's body (or, if
// some of it was read already, from where its next reader would read) and
// leaves the body whole: whoever reads it next, the caller or another PeekBody,
// reads those bytes again and then the rest. It reads until it has n
// bytes, the body ends, or reading fails; a failure other than the end of
// the body is returned with the bytes read before it, and the next reader
// meets it again after them. The bytes returned are the body's own: do not
// modify them.
//
// An n of 0 or less reads nothing and returns nil, nil; an n above
// 1 MiB counts as 1 MiB. A nil resp or body, http.NoBody, or the
// connection of a 101 Switching Protocols response gives nil, nil. PeekBody respects the context of resp.Request, when it has
// one: once that ends, the body is closed, which ends a read that the
// context alone does not (as for a body from a custom base that ignores
// it), and the context's cause is returned. Nothing else bounds the
// wait: a Transport's per-attempt timeout ends with the response headers,
// so a body that trickles holds a classifier as long as the request's
// deadline allows. It is meant for
// [Transport.Classify], and for any code that must look into a body before
// handing the response on; it is not safe for concurrent use with other
// readers of the same body.
func PeekBody(resp *http.Response, n int) ([]byte, error) {
	ctx := context.Background()
	if resp != nil && resp.Request != nil {
		ctx = resp.Request.Context()
	}
	return peekBody(ctx, resp, min(n, maxPeek))
}

// peekBody is PeekBody with no bound on n, its read bounded by ctx: the
// Transport's own peeks (an error code, a read-ahead) know the context of
// their attempt, whatever the base set as the response's Request.
func peekBody(ctx context.Context, resp *http.Response, n int) ([]byte, error) {
	pb := peekable(resp, n)
	if pb == nil {
		return nil, nil
	}
	if pb.filling == nil && pb.has(n) {
		return pb.peeked(n)
	}
	stop := context.AfterFunc(ctx, func() { pb.Close() })
	pb.wait() // a fill that peekWithin left going
	if !pb.has(n) {
		pb.fill(n)
	}
	if !stop() && pb.err != nil && pb.err != io.EOF {
		// The read ended because the body was closed: say why.
		pb.err = errors.Join(context.Cause(ctx), pb.err)
	}
	return pb.peeked(n)
}

// peekWithin is peekBody bounded by wait as well, and ok is false when
// the bytes did not come within it: a body that trickles or stalls then
// goes on filling on a goroutine of its own, up to n bytes, its end, or
// its Close, and its next reader waits for that fill and reads every
// byte, so that giving up on a peek loses nothing. The Transport reads
// error codes so: whether to retry is not kept waiting on a body longer
// than a drain would wait for it.
func peekWithin(ctx context.Context, resp *http.Response, n int, wait time.Duration) (read []byte, ok bool) {
	pb := peekable(resp, n)
	switch {
	case pb == nil:
		return nil, true
	case pb.filling != nil:
		return nil, false // an earlier peek gave up on this body already
	case pb.has(n):
		read, _ = pb.peeked(n)
		return read, true
	}
	filled := make(chan struct{})
	pb.filling = filled
	go func() {
		defer close(filled)
		pb.fill(n)
	}()
	stop := context.AfterFunc(ctx, func() { pb.Close() })
	defer stop()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-filled:
		pb.filling = nil
		read, _ = pb.peeked(n)
		return read, true
	case <-t.C:
		return nil, false
	}
}

// peekable returns resp's body as a peekedBody, put in its place if it
// was not one, ready to read ahead n bytes from where its next reader
// would read; nil when there is nothing to read ahead.
func peekable(resp *http.Response, n int) *peekedBody {
	if resp == nil || resp.Body == nil || resp.Body == http.NoBody || n <= 0 ||
		resp.StatusCode == http.StatusSwitchingProtocols { // its body is a connection
		return nil
	}
	pb, ok := resp.Body.(*peekedBody)
	if !ok {
		pb = &peekedBody{rc: resp.Body}
		resp.Body = pb
	}
	return pb
}

// peekedBody is a response body with its first bytes read ahead: Read
// returns buf, then the error that ended the peek if there was one, then
// the rest of rc.
type peekedBody struct {
	rc  io.ReadCloser
	buf []byte
	off int   // bytes of buf already read
	err error // what ended the peek short of its bytes: io.EOF or a failure
	// filling, when not nil, is closed once a fill that peekWithin left
	// going has stopped: buf and err are that fill's until then, and
	// every reader waits for it first (see wait).
	filling chan struct{}

	// closeOnce closes rc once: a peek whose context ended closes it
	// from the context's goroutine, and its reader closes it again;
	// io.Closer leaves a second Close undefined, and a base's body may
	// mind it.
	closeOnce sync.Once
	closeErr  error
}

// wait waits for a fill that peekWithin left going, if there is one.
func (b *peekedBody) wait() {
	if b.filling != nil {
		<-b.filling
		b.filling = nil
	}
}

// has reports whether b holds n bytes read ahead, or the read ahead has
// stopped short of them, once the bytes a reader took since the last
// peek are dropped: they are no longer the body's to give.
func (b *peekedBody) has(n int) bool {
	b.buf, b.off = b.buf[b.off:], 0
	return len(b.buf) >= n || b.err != nil
}

// peeked returns up to n bytes read ahead, and what ended the reading
// short of them, the end of the body not counting.
func (b *peekedBody) peeked(n int) ([]byte, error) {
	err := b.err
	if err == io.EOF {
		err = nil
	}
	return b.buf[:min(n, len(b.buf))], err
}

// fill reads from rc until buf holds n bytes or reading stops. buf grows
// as bytes arrive, never to more than n, so that a short body costs a
// short buffer whatever n is.
func (b *peekedBody) fill(n int) {
	for len(b.buf) < n && b.err == nil {
		if len(b.buf) == cap(b.buf) {
			grown := make([]byte, len(b.buf), min(max(512, 2*cap(b.buf)), n))
			copy(grown, b.buf)
			b.buf = grown
		}
		m, err := b.rc.Read(b.buf[len(b.buf):min(cap(b.buf), n)])
		b.buf = b.buf[:len(b.buf)+m]
		if err != nil {
			b.err = err
		}
	}
}

// Read implements io.Reader.
func (b *peekedBody) Read(p []byte) (int, error) {
	b.wait()
	if b.off < len(b.buf) {
		n := copy(p, b.buf[b.off:])
		b.off += n
		return n, nil
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.rc.Read(p)
}

// Close implements io.Closer. It closes rc once, however many times it
// is called and from whichever goroutines; each call returns rc's error.
func (b *peekedBody) Close() error {
	b.closeOnce.Do(func() { b.closeErr = b.rc.Close() })
	return b.closeErr
}

// WriteTo lets io.Copy take the peeked bytes and the rest without a
// buffer of its own.
func (b *peekedBody) WriteTo(w io.Writer) (int64, error) {
	b.wait()
	n, err := bytes.NewReader(b.buf[b.off:]).WriteTo(w)
	b.off = len(b.buf)
	if err != nil {
		return n, err
	}
	if b.err != nil {
		if b.err == io.EOF {
			return n, nil
		}
		return n, b.err
	}
	m, err := io.Copy(w, b.rc)
	return n + m, err
}
