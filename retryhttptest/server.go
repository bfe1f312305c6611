package retryhttptest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Defaults and bounds of a [Server].
const (
	// DefaultKeepBody is the longest request body a Server keeps whole in
	// its record of an attempt when [Server.KeepBody] is zero.
	DefaultKeepBody = 64 << 10
	// DefaultMaxBody is the most a Server reads of one request body when
	// [Server.MaxBody] is zero or less.
	DefaultMaxBody = 16 << 20
	// MaxRecords is the number of attempts a Server records. Later
	// attempts are answered and counted by [Server.Count], not recorded,
	// so that a long load test cannot grow a Server's memory without
	// bound.
	MaxRecords = 10000
)

// Server is a scripted HTTP server. Each request it receives is an
// attempt; the server reads the attempt's body, records it (see
// [Attempt]), and answers it with a [Step]: a reply, a fault, or both.
//
// A Server runs two ways with the same script. As an
// [http.RoundTripper] it answers in memory, with no socket and no
// goroutine, so that it can be the Base of a retryhttp.Transport inside a
// testing/synctest bubble, where every wait runs in virtual time. Started
// with [Server.Start] or [Server.StartHTTP2] it serves on a loopback
// socket. A fault looks the same to an HTTP/1.1 client both ways; see
// [Fault] for what the client sees in each mode.
//
// The zero Server has an empty script: every request fails with an error
// that says so. Set Script or Choose. A Server is safe for concurrent use,
// by hedged attempts in particular; its fields must not change after its
// first request. It must not be copied after its first request.
type Server struct {
	// Script is played in order: attempt n gets Script[n-1], and the last
	// step repeats for every attempt after it.
	Script []Step

	// Choose, when set instead of Script, picks the step of each attempt:
	// attempt is the 1-based number of the request among those the
	// server has received, req a copy of the request whose body reads
	// as much of it as the server kept (see KeepBody). Choose may be
	// called concurrently, for hedged attempts, and must not keep req.
	Choose func(attempt int, req *http.Request) Step

	// KeepBody is the longest request body kept whole in an attempt's
	// record; a longer one is recorded by its size and SHA-256 only.
	// Zero means DefaultKeepBody; a negative value keeps no body.
	KeepBody int64

	// MaxBody bounds what the server reads of a request body. An attempt
	// whose body is longer is answered 413 Request Entity Too Large in
	// place of its step, as a server with a body limit does (over a
	// socket the client may instead see the connection closed under its
	// upload, as with any such server). Zero or less means
	// DefaultMaxBody.
	MaxBody int64

	checked   sync.Once
	scriptErr error // a fault of the Script as a whole, found once

	// mu guards the records: attempts arrive, end and are read
	// concurrently (hedges, loopback handlers, the test).
	mu       sync.Mutex
	count    int
	first    time.Time
	records  []Attempt
	inflight int
	idle     chan struct{} // made by Wait, closed when inflight falls to 0
	failure  error         // the first bad step met while serving
}

// Step is what the server does with one attempt: a reply, optionally
// delayed, trickled or cut by a fault, or a fault alone. The zero Step
// replies 200 OK with an empty body at once.
//
// The server reads the request body first, whatever the step, as a
// server that acts on whole requests does.
type Step struct {
	// Status is the reply's status code, in 200..999; zero means 200.
	// Informational (1xx) statuses are not final answers and are
	// refused.
	Status int
	// Header is sent with the reply, e.g. Retry-After or
	// X-Retry-Pushback-Ms. The server sets Content-Length to the length
	// of Body; a Content-Length given here must agree with it (to cut a
	// body short, use CloseMidBody). Transfer-Encoding may not be set,
	// nor a field that no server can send (a name that is no HTTP token,
	// a value with a control byte other than a tab): over a socket
	// net/http would drop or blank it, so it is a bad script.
	// Content-Type defaults to what [http.DetectContentType] makes of
	// Body, and Date to the time of the reply.
	Header http.Header
	// Body is the reply's body. It must be empty for 204 and 304.
	Body string
	// Delay is waited before the reply's headers, or before the fault.
	// A request that ends during the delay gets no answer: the client
	// sees what it sees of a Hang, and the attempt is recorded as
	// Cancelled.
	Delay time.Duration
	// Fault, when set, makes the step misbehave; see [Fault].
	Fault Fault
	// After is the number of body bytes sent before a ResetMidBody or
	// CloseMidBody fault: 0 <= After < len(Body). It must be zero for
	// any other step.
	After int
	// Trickle, when set, sends the body slowly; see [Rate].
	Trickle Rate
}

// Rate is the pace of a trickled body: Bytes bytes, then the next Bytes
// after Every, and so on. A body of n bytes thus takes
// ceil(n/Bytes)*Every, the wait coming before each piece; the headers go
// at once. The zero Rate sends the body at once.
//
// When the request ends while its body trickles, the body's Read fails
// with the request context's cause (context.Cause) in memory and over
// HTTP/1.1, with its error (ctx.Err()) over HTTP/2; closing the body
// ends the trickle too. Either way the attempt is recorded as Cancelled.
type Rate struct {
	// Bytes is the size of each piece; zero means 1.
	Bytes int
	// Every is the wait before each piece; zero means no trickle.
	Every time.Duration
}

func (r Rate) piece() int {
	if r.Bytes == 0 {
		return 1
	}
	return r.Bytes
}

// Fault is a way for a step to misbehave. What a client sees of each is
// documented with it, for the three modes: in memory (the Server as an
// http.RoundTripper), over HTTP/1.1 on loopback ([Server.Start]), and
// over HTTP/2 with TLS on loopback ([Server.StartHTTP2]). In memory the
// server plays an HTTP/1.1 server, so both HTTP/1.1 modes give errors of
// the same types, which errors.Is and errors.As tell apart alike.
type Fault int

// The faults. A fault that cuts a body needs a Body longer than After.
const (
	// NoFault is the zero Fault: the step is a plain reply.
	NoFault Fault = iota

	// Reset drops the connection with a TCP reset once the request has
	// been read, before any byte of an answer. Status, Header, Body and
	// Trickle must be left out. The client's RoundTrip fails:
	//   - in memory and over HTTP/1.1: a *net.OpError (Op "read") that
	//     wraps syscall.ECONNRESET;
	//   - over HTTP/2: the stream alone is reset (RST_STREAM with
	//     INTERNAL_ERROR, net/http's "stream error: ... INTERNAL_ERROR;
	//     received from peer"), not the connection, which other
	//     attempts may share; it does not wrap ECONNRESET.
	Reset

	// ResetMidBody sends the headers and the first After bytes of Body,
	// then drops the connection with a reset. RoundTrip succeeds; the
	// body's Read returns those bytes, then fails as Reset's RoundTrip
	// does in the same mode. Over a socket, bytes still in flight when
	// the reset comes may be lost, as on any network; with small bodies
	// on loopback they arrive.
	ResetMidBody

	// CloseMidBody sends the headers, declaring the whole Body's
	// length, and the first After bytes of it, then ends the answer
	// cleanly: the body is truncated. The body's Read returns those
	// bytes, then io.ErrUnexpectedEOF, in all three modes (HTTP/1.1
	// closes the connection; HTTP/2 ends the stream early).
	CloseMidBody

	// Hang sends nothing until the request ends: the client cancels it,
	// or its deadline or a per-attempt timeout passes. Status, Header,
	// Body and Trickle must be left out. RoundTrip fails with the
	// request context's cause (context.Cause) in memory and over
	// HTTP/1.1, with its error (ctx.Err()) over HTTP/2. The attempt is
	// recorded as Cancelled.
	Hang
)

var faultNames = [...]string{"NoFault", "Reset", "ResetMidBody", "CloseMidBody", "Hang"}

// String returns the fault's name.
func (f Fault) String() string {
	if f < 0 || int(f) >= len(faultNames) {
		return fmt.Sprintf("Fault(%d)", int(f))
	}
	return faultNames[f]
}

func (f Fault) midBody() bool { return f == ResetMidBody || f == CloseMidBody }

// status returns the step's status code, 200 for zero.
func (st *Step) status() int {
	if st.Status == 0 {
		return http.StatusOK
	}
	return st.Status
}

// check reports what is wrong with a step, so that a bad script fails
// with a message instead of a hang or a confusing answer.
func (st *Step) check() error {
	code := st.status()
	switch {
	case code < 200 || code > 999:
		return fmt.Errorf("status %d outside 200..999", st.Status)
	case st.Fault < NoFault || st.Fault > Hang:
		return fmt.Errorf("unknown fault %v", st.Fault)
	case st.Delay < 0:
		return fmt.Errorf("negative Delay %v", st.Delay)
	case st.Trickle.Bytes < 0 || st.Trickle.Every < 0:
		return fmt.Errorf("negative Trickle %+v", st.Trickle)
	case st.Body != "" && !bodyAllowed(code):
		return fmt.Errorf("status %d allows no body, got %d bytes", code, len(st.Body))
	case len(headerValues(st.Header, "Transfer-Encoding")) > 0:
		return errors.New("Transfer-Encoding is set: the server frames the body itself")
	}
	if err := checkHeader(st.Header); err != nil {
		return err
	}
	for _, v := range headerValues(st.Header, "Content-Length") {
		if v != fmt.Sprint(len(st.Body)) {
			return fmt.Errorf("Content-Length %q does not match a body of %d bytes (to cut a body short, use CloseMidBody)", v, len(st.Body))
		}
	}
	return st.checkFault()
}

// checkHeader reports a field of h that no server can send: a name that
// is no HTTP token, a value with a control byte (CR LF among them) other
// than a tab. Over HTTP/1.1 net/http drops such a name and blanks such
// bytes, over HTTP/2 it drops both, and in memory they would reach the
// client as written: the same script would answer three ways. Fields are
// checked in the order of their names, so that the message is the same
// from run to run.
func checkHeader(h http.Header) error {
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if k == "" || strings.ContainsFunc(k, func(r rune) bool { return !isTokenChar(r) }) {
			return fmt.Errorf("header name %q is no HTTP field name: no server can send it", k)
		}
		for _, v := range h[k] {
			if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
				return fmt.Errorf("header %s: value %q holds a control byte: no server can send it", k, v)
			}
		}
	}
	return nil
}

// isTokenChar reports whether r may be part of an HTTP token (RFC 9110,
// section 5.6.2), such as a field name.
func isTokenChar(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// headerValues returns the values of h under key, a canonical key, and
// under each spelling of it: a Header written as a literal may hold
// "content-length", which Header.Values does not find, yet the reply
// sends it under its canonical key (see replyHeader).
func headerValues(h http.Header, key string) []string {
	var vs []string
	for k, v := range h {
		if http.CanonicalHeaderKey(k) == key {
			vs = append(vs, v...)
		}
	}
	return vs
}

func (st *Step) checkFault() error {
	switch {
	case st.Fault.midBody() && (st.After < 0 || st.After >= len(st.Body)):
		return fmt.Errorf("%v after %d bytes of a body of %d: After must be in 0..len(Body)-1", st.Fault, st.After, len(st.Body))
	case !st.Fault.midBody() && st.After != 0:
		return fmt.Errorf("after %d bytes, yet the fault is neither ResetMidBody nor CloseMidBody", st.After)
	case (st.Fault == Reset || st.Fault == Hang) &&
		(st.Status != 0 || st.Header != nil || st.Body != "" || st.Trickle != Rate{}):
		return fmt.Errorf("%v sends no answer: leave Status, Header, Body and Trickle out", st.Fault)
	}
	return nil
}

// bodyAllowed reports whether a response with the status may have a
// body, as net/http's server sees it.
func bodyAllowed(code int) bool {
	return code != http.StatusNoContent && code != http.StatusNotModified
}

// checkScript reports a fault of the Server's configuration as a whole,
// and of each step of its Script, once.
func (s *Server) checkScript() error {
	s.checked.Do(func() {
		switch {
		case len(s.Script) == 0 && s.Choose == nil:
			s.scriptErr = errors.New("retryhttptest: empty script: set Server.Script or Server.Choose")
		case len(s.Script) > 0 && s.Choose != nil:
			s.scriptErr = errors.New("retryhttptest: Server has both Script and Choose: set one")
		}
		for i := range s.Script {
			if s.scriptErr != nil {
				break
			}
			if err := s.Script[i].check(); err != nil {
				s.scriptErr = fmt.Errorf("retryhttptest: Script[%d]: %w", i, err)
			}
		}
	})
	return s.scriptErr
}

// step returns the step of attempt n, whose request is req and whose
// body the server has read as got.
func (s *Server) step(n int, req *http.Request, got received) (Step, error) {
	if s.Choose == nil {
		return s.Script[min(n, len(s.Script))-1], nil
	}
	st := s.Choose(n, chooseRequest(req, got))
	if err := st.check(); err != nil {
		err = fmt.Errorf("retryhttptest: Choose(%d, ...): %w", n, err)
		s.fail(err)
		return Step{}, err
	}
	return st, nil
}

// fail keeps the first bad step met while serving, for the helpers and
// the loopback server's cleanup to report.
func (s *Server) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure == nil {
		s.failure = err
	}
}

// Err returns the first configuration error the Server met: an empty
// script, a bad step, or a step from Choose that was not valid. It is nil
// while every request has been served as scripted. The Want helpers
// report it, and so does the cleanup of [Server.Start].
func (s *Server) Err() error {
	if err := s.checkScript(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failure
}

// sleep waits d, or until ctx ends or stop (which may be nil) is closed;
// it reports whether d passed. It uses the time package only, so that in
// a synctest bubble it waits in virtual time.
func sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return ctx.Err() == nil
	case <-ctx.Done():
	case <-stop:
	}
	return false
}
