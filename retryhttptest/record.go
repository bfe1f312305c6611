package retryhttptest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// Attempt is the record of one request that reached a [Server]. Records
// returned by [Server.Attempts] are copies, free to keep and modify.
type Attempt struct {
	// N is the attempt's 1-based number, in order of arrival.
	N int
	// At is when the attempt arrived, counted from the arrival of the
	// first: 0 for the first. In a synctest bubble it is virtual time.
	At time.Duration
	// Proto is "HTTP/1.1" in memory and over Start, "HTTP/2.0" over
	// StartHTTP2.
	Proto string
	// Method, Host, Path and RawQuery are the request's.
	Method   string
	Host     string
	Path     string
	RawQuery string
	// Header is the request's header, X-Retry-Attempts included. Over a
	// socket it holds what net/http adds (User-Agent, Accept-Encoding);
	// in memory it is what the client's transport was given.
	Header http.Header
	// ContentLength is the body's declared length, -1 when unknown.
	ContentLength int64
	// Body is the request body when it was received whole and is at
	// most KeepBody bytes long; otherwise nil: see BodySize and
	// BodySHA256.
	Body []byte
	// BodySize is the number of body bytes received.
	BodySize int64
	// BodySHA256 is the SHA-256 of the body bytes received.
	BodySHA256 [sha256.Size]byte
	// BodyErr is why the body was not received to its end: the request
	// ended, the connection failed, the body did not match its declared
	// length, or it was longer than MaxBody ([ErrBodyTooLarge]). Nil when
	// it was received whole.
	BodyErr error
	// Cancelled reports that the request ended (cancelled, timed out, or
	// its connection closed by the client) before the server had
	// finished with it: while its body was read, during a Delay or a
	// Hang, or while its reply body was trickled. Over a socket the
	// server learns of it a moment after the client acts: see
	// [Server.Wait].
	Cancelled bool
}

// ErrBodyTooLarge is the [Attempt.BodyErr] of a request body longer than
// [Server.MaxBody].
var ErrBodyTooLarge = errors.New("retryhttptest: request body over the server's MaxBody")

// visit is the server's handle on one attempt while it serves it.
type visit struct {
	s     *Server
	n     int
	i     int // index in s.records, or -1 past MaxRecords
	ended bool
}

// arrive counts and records a request as it reaches the server.
func (s *Server) arrive(req *http.Request, proto string) *visit {
	host := req.Host
	if host == "" && req.URL != nil {
		host = req.URL.Host
	}
	a := Attempt{Proto: proto, Method: req.Method, Host: host, Path: req.URL.Path,
		RawQuery: req.URL.RawQuery, Header: req.Header.Clone(), ContentLength: req.ContentLength}
	if a.Header == nil {
		a.Header = http.Header{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now() // under the lock, so that At grows with N
	s.count++
	if s.count == 1 {
		s.first = now
	}
	a.N, a.At = s.count, now.Sub(s.first)
	v := &visit{s: s, n: s.count, i: -1}
	if len(s.records) < MaxRecords {
		v.i = len(s.records)
		s.records = append(s.records, a)
	}
	s.inflight++
	return v
}

// received records what the server read of the request body.
func (v *visit) received(got received) {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if v.i < 0 {
		return
	}
	a := &s.records[v.i]
	a.Body, a.BodySize, a.BodySHA256, a.BodyErr = got.kept, got.size, got.sum, got.err
	if got.unknown {
		a.ContentLength = -1
		if got.err == nil && got.size == 0 {
			// net/http sends an empty body of unknown length as none.
			a.ContentLength = 0
		}
	}
}

// end marks the attempt as finished by the server, cancelled or not. It
// may be called more than once; the first call counts.
func (v *visit) end(cancelled bool) {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if v.ended {
		return
	}
	v.ended = true
	if v.i >= 0 {
		s.records[v.i].Cancelled = cancelled
	}
	s.inflight--
	if s.inflight == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// Attempts returns copies of the records of the attempts received so far,
// in order of arrival; at most [MaxRecords]. An attempt still being
// served may not yet have its body or its Cancelled mark: call
// [Server.Wait] first when that matters.
func (s *Server) Attempts() []Attempt {
	_, as := s.snapshot()
	return as
}

// snapshot returns the number of requests received and copies of the
// records of the attempts, read together: a check that compares them
// sees no attempt arrive in between.
func (s *Server) snapshot() (int, []Attempt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Attempt, len(s.records))
	for i, a := range s.records {
		a.Header = a.Header.Clone()
		a.Body = bytes.Clone(a.Body)
		out[i] = a
	}
	return s.count, out
}

// Count returns the number of requests the server has received, whether
// recorded or past [MaxRecords].
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// Wait blocks until the server has finished with every attempt received
// so far, or ctx ends, in which case it returns ctx's cause. An attempt
// is finished when its answer has been sent whole, or cut by its fault,
// or when its request ended. Over a socket a hedge that the client
// cancelled is marked Cancelled only once the server has noticed, which
// Wait awaits. In a synctest bubble, Wait is durably blocking. A Server
// may serve tests in several bubbles at once, but Wait in one bubble
// must not be left waiting for attempts of another: Go forbids a bubble
// to wait on another's goroutines.
func (s *Server) Wait(ctx context.Context) error {
	s.mu.Lock()
	if s.inflight == 0 {
		s.mu.Unlock()
		return nil
	}
	if s.idle == nil {
		// Made by a waiter, not by an attempt: in a synctest bubble a
		// channel belongs to the bubble that made it, and attempts of
		// tests in other bubbles sharing the Server must not touch it.
		s.idle = make(chan struct{})
	}
	idle := s.idle
	s.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// received is what the server read of a request body.
type received struct {
	kept    []byte // the whole body, when at most keep bytes
	size    int64
	sum     [sha256.Size]byte
	err     error
	unknown bool // the client declared no length
}

// readBuffer is the size of receive's read buffer.
const readBuffer = 32 << 10

// readBuffers holds receive's read buffers, so that a Server answering
// many requests does not allocate and clear one for each.
var readBuffers = sync.Pool{New: func() any { return new([readBuffer]byte) }}

// receive reads body to its end, or to max bytes past which it reports
// ErrBodyTooLarge, hashing all of it and keeping it whole when it is at
// most keep bytes long. Memory stays within keep plus one read buffer,
// however long the body. It stops when ctx ends, reporting ctx's cause.
func receive(ctx context.Context, body io.Reader, keep, max int64) received {
	var got received
	h := sha256.New()
	if body == http.NoBody {
		body = nil // what net/http gives a handler for a request without one
	}
	var buf []byte
	if body != nil {
		b := readBuffers.Get().(*[readBuffer]byte)
		defer readBuffers.Put(b)
		buf = b[:]
	}
	var kept bytes.Buffer
	for body != nil && got.err == nil {
		if ctx.Err() != nil {
			got.err = context.Cause(ctx)
			break
		}
		n, err := body.Read(buf)
		if int64(n) > max-got.size {
			n, err = int(max-got.size), ErrBodyTooLarge
		}
		h.Write(buf[:n])
		got.size += int64(n)
		if got.size <= keep {
			kept.Write(buf[:n])
		} else {
			kept = bytes.Buffer{} // too long to keep: free it now
		}
		switch {
		case err == io.EOF:
			body = nil
		case err != nil && ctx.Err() != nil:
			got.err = context.Cause(ctx) // the read failed because the request ended
		case err != nil:
			got.err = err
		}
	}
	h.Sum(got.sum[:0])
	if got.err == nil && got.size <= keep {
		got.kept = kept.Bytes()
		if got.kept == nil {
			got.kept = []byte{}
		}
	}
	return got
}

// limits returns the server's body limits with their defaults.
func (s *Server) limits() (keep, max int64) {
	keep, max = s.KeepBody, s.MaxBody
	if keep == 0 {
		keep = DefaultKeepBody
	}
	if max <= 0 {
		max = DefaultMaxBody
	}
	return keep, max
}

// chooseRequest returns the copy of req that Choose is given: its body
// reads what the server kept of it.
func chooseRequest(req *http.Request, got received) *http.Request {
	r := req.Clone(req.Context())
	r.Body = http.NoBody
	if len(got.kept) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(got.kept))
	}
	return r
}
