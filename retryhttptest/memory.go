package retryhttptest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// RoundTrip implements [http.RoundTripper]: it answers req in memory by
// the script, as an HTTP/1.1 server on a connection of its own would,
// with no socket and no goroutine of its own. The request's host does
// not matter. Every wait (Delay, Trickle, Hang) goes through the time
// package and ends when the request's context does, so that inside a
// testing/synctest bubble it takes virtual time only.
//
// RoundTrip reads the request body to its end (up to MaxBody) and closes
// it, before the step acts. When the request's context ends, a body read
// in progress is unblocked by closing the body, as net/http does.
//
// Unlike net/http's transport, it adds no header to the request, calls
// no httptrace hooks (there is no connection), and leaves the response
// body as the script gives it: no decompression.
func (s *Server) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.URL == nil {
		closeBody(req) // as net/http's transport refuses it
		return nil, errors.New("retryhttptest: nil Request.URL")
	}
	if err := s.checkScript(); err != nil {
		closeBody(req)
		return nil, err
	}
	if ctx.Err() != nil {
		closeBody(req) // a transport sends nothing for a request already ended
		return nil, context.Cause(ctx)
	}
	v := s.arrive(req, "HTTP/1.1")
	got := s.receiveMemory(ctx, req)
	if got.err == nil && req.ContentLength > 0 && got.size != req.ContentLength {
		// net/http refuses to send such a body; the server sees it cut.
		got.err = fmt.Errorf("retryhttptest: request ContentLength=%d with Body length %d", req.ContentLength, got.size)
		got.kept = nil
	}
	v.received(got)
	if got.err != nil && got.err != ErrBodyTooLarge {
		v.end(ctx.Err() != nil)
		return nil, got.err
	}
	if got.err == ErrBodyTooLarge {
		v.end(false)
		return tooLarge(req), nil
	}
	st, err := s.step(v.n, req, got)
	if err != nil {
		v.end(false)
		return nil, err
	}
	if !sleep(ctx, nil, st.Delay) {
		v.end(true)
		return nil, context.Cause(ctx)
	}
	switch st.Fault {
	case Hang:
		<-ctx.Done()
		v.end(true)
		return nil, context.Cause(ctx)
	case Reset:
		v.end(false)
		return nil, resetError(req)
	}
	return memoryResponse(req, &st, v), nil
}

// receiveMemory reads and closes the request body. A body whose Read
// blocks is closed when the request's context ends, which unblocks it.
func (s *Server) receiveMemory(ctx context.Context, req *http.Request) received {
	keep, max := s.limits()
	if req.Body == nil || req.Body == http.NoBody {
		return receive(ctx, nil, keep, max)
	}
	stop := context.AfterFunc(ctx, func() { req.Body.Close() })
	got := receive(ctx, req.Body, keep, max)
	if stop() {
		req.Body.Close()
	}
	got.unknown = req.ContentLength <= 0
	return got
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// resetError is what net/http's transport returns for a connection reset
// by the server: a *net.OpError wrapping ECONNRESET, addressed to the
// request's host.
func resetError(req *http.Request) error {
	return &net.OpError{Op: "read", Net: "tcp", Addr: hostAddr(canonicalAddr(req)),
		Err: os.NewSyscallError("read", syscall.ECONNRESET)}
}

// hostAddr is a request's host and port, as a [net.Addr].
type hostAddr string

func (a hostAddr) Network() string { return "tcp" }
func (a hostAddr) String() string  { return string(a) }

// canonicalAddr returns the request URL's host with its port, explicit or
// implied by the scheme.
func canonicalAddr(req *http.Request) string {
	if req.URL.Port() != "" {
		return req.URL.Host
	}
	port := "80"
	if req.URL.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(req.URL.Hostname(), port)
}

// tooLarge is the answer to a request whose body passed MaxBody.
func tooLarge(req *http.Request) *http.Response {
	st := Step{Status: http.StatusRequestEntityTooLarge, Body: ErrBodyTooLarge.Error()}
	return &http.Response{Status: statusLine(st.Status), StatusCode: st.Status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: replyHeader(&st, true),
		ContentLength: int64(len(st.Body)), Body: io.NopCloser(strings.NewReader(st.Body)), Request: req}
}

// memoryResponse builds the response of a step that answers, whose body
// the visit v's attempt goes on sending, trickled or cut by a fault.
func memoryResponse(req *http.Request, st *Step, v *visit) *http.Response {
	code := st.status()
	resp := &http.Response{Status: statusLine(code), StatusCode: code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: replyHeader(st, true),
		ContentLength: int64(len(st.Body)), Body: http.NoBody, Request: req}
	if !bodyAllowed(code) {
		resp.ContentLength = 0
	}
	if req.Method == http.MethodHead || st.Body == "" {
		v.end(false)
		return resp
	}
	b := &replyBody{ctx: req.Context(), data: st.Body, end: io.EOF, rate: st.Trickle,
		closed: make(chan struct{})}
	switch st.Fault {
	case ResetMidBody:
		b.data, b.end = st.Body[:st.After], resetError(req)
	case CloseMidBody:
		b.data, b.end = st.Body[:st.After], io.ErrUnexpectedEOF
	}
	if st.Trickle.Every > 0 {
		// The server is still sending: the attempt ends with the body, or
		// with the request, as a server on a socket sees the client's
		// transport close the connection when the request ends, whether
		// or not the body is being read.
		b.v = v
		// Set under b.mu: a request whose context has ended already
		// runs the function at once, on a goroutine of its own, which
		// calls b.stop through finish.
		b.mu.Lock()
		b.stop = context.AfterFunc(req.Context(), func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.finish(len(b.data) > 0)
		})
		b.mu.Unlock()
	} else {
		v.end(false)
	}
	resp.Body = b
	return resp
}

// statusLine is the Status of a response, as net/http's client shows it.
func statusLine(code int) string {
	text := http.StatusText(code)
	if text == "" {
		text = "status code " + strconv.Itoa(code)
	}
	return strconv.Itoa(code) + " " + text
}

// replyHeader returns the header a step's reply carries, its keys in
// canonical form as a client reading it off a connection finds them, with
// what net/http's server adds: Content-Length, Content-Type from the body
// and, when date is set, Date.
func replyHeader(st *Step, date bool) http.Header {
	h := make(http.Header, len(st.Header)+3)
	for k, vs := range st.Header {
		key := http.CanonicalHeaderKey(k)
		h[key] = append(h[key], vs...)
	}
	if bodyAllowed(st.status()) {
		h.Set("Content-Length", strconv.Itoa(len(st.Body)))
		if _, ok := h["Content-Type"]; !ok && st.Body != "" {
			h.Set("Content-Type", http.DetectContentType([]byte(st.Body)))
		}
	}
	if _, ok := h["Date"]; !ok && date {
		h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	return h
}

// replyBody is a scripted response body in memory: data, then end, each
// piece of a trickle after its wait. A Read returns the request context's
// cause once that has ended, as a body on a connection does. Close may
// be called while a Read waits, which then returns.
type replyBody struct {
	ctx    context.Context
	end    error // after data: io.EOF, or a fault's error
	rate   Rate
	v      *visit        // the attempt, when the body ends it
	stop   func() bool   // stops ending v when the request ends; nil without v
	closed chan struct{} // closed by Close

	mu       sync.Mutex // Read and Close may run at once
	data     string     // still to send
	arrived  int        // of a trickle, the bytes of data that its last piece brought and no Read took yet
	isClosed bool
}

func (b *replyBody) Read(p []byte) (int, error) {
	n, wait, err := b.next(len(p))
	if err != nil || n == 0 {
		return 0, err
	}
	if wait {
		if err := b.wait(); err != nil {
			return 0, err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.isClosed {
		return 0, http.ErrBodyReadAfterClose
	}
	n = copy(p, b.data[:n])
	b.data = b.data[n:]
	b.arrived = max(b.arrived-n, 0)
	return n, nil
}

// next returns the size of the next read into a buffer of size n, and
// whether it waits for the next piece of a trickle first, or the error
// that ends the body. A trickle's piece is Bytes bytes, however the
// reader's buffer cuts it: a piece that arrived is read without a wait,
// as from a socket, so that a body takes the same time in memory as
// over one, whatever the reads.
func (b *replyBody) next(n int) (int, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	wait := false
	switch {
	case b.isClosed:
		return 0, false, http.ErrBodyReadAfterClose
	case b.ctx.Err() != nil:
		b.finish(true)
		return 0, false, context.Cause(b.ctx)
	case len(b.data) == 0:
		b.finish(false)
		return 0, false, b.end
	case b.rate.Every > 0:
		if b.arrived == 0 {
			wait, b.arrived = true, b.rate.piece()
		}
		n = min(n, b.arrived)
	}
	return min(n, len(b.data)), wait, nil
}

// wait waits for the next piece of a trickle, and returns the error that
// ends the body when the request or the body ends first.
func (b *replyBody) wait() error {
	t := time.NewTimer(b.rate.Every)
	defer t.Stop()
	select {
	case <-t.C:
		if b.ctx.Err() == nil {
			return nil
		}
	case <-b.ctx.Done():
	case <-b.closed:
		return http.ErrBodyReadAfterClose
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.finish(true)
	return context.Cause(b.ctx)
}

// Close ends the body; the attempt counts as cancelled if its trickle
// had not finished.
func (b *replyBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.isClosed {
		b.isClosed = true
		close(b.closed)
		b.finish(len(b.data) > 0)
	}
	return nil
}

// finish ends the attempt, if the body is what ends it. b.mu is held, so
// that the attempt ends once, with the state the body had then.
func (b *replyBody) finish(cancelled bool) {
	if b.v != nil {
		b.v.end(cancelled)
		b.stop()
	}
}
