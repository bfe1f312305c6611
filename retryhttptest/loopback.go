package retryhttptest

import (
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Start serves the script over HTTP/1.1 on a loopback address until the
// test ends, and returns the running server: requests go to its URL,
// through any client or its own Client(). A bad script fails the test at
// once; a bad step from Choose fails it when the test ends, and its
// attempt is answered 500 with the error as body.
//
// Each connection carries one request (the server does not keep
// connections alive). A reset thus never hits a connection that net/http
// reused, which its transport would silently resend once, showing the
// server an attempt that the client's code never made.
//
// The server is closed when the test ends, after every request that is
// still waiting (Delay, Hang, Trickle) has been cut off, so that cleanup
// never waits for a client that has gone. Closing it earlier with its
// Close waits for such requests to end.
//
// A loopback server uses real sockets and the wall clock: start it
// outside any synctest bubble, and use the Server in memory inside one.
// Started inside one, the bubble's test hangs until go test's -timeout.
func (s *Server) Start(tb testing.TB) *httptest.Server {
	tb.Helper()
	return s.start(tb, false)
}

// StartHTTP2 is [Server.Start] over HTTP/2 with TLS. The server speaks
// HTTP/2 only; the client must trust its certificate, which the
// transport of its Client() does: use that Client, or its Transport as a
// retryhttp.Transport's Base. That transport also sends requests for
// example.com and its subdomains to the server, so that a client can keep
// a real-looking base URL such as https://api.example.com.
//
// Attempts of one client share one connection, as HTTP/2 multiplexes
// them; faults act on the attempt's stream (see [Fault]).
func (s *Server) StartHTTP2(tb testing.TB) *httptest.Server {
	tb.Helper()
	return s.start(tb, true)
}

func (s *Server) start(tb testing.TB, h2 bool) *httptest.Server {
	tb.Helper()
	if err := s.checkScript(); err != nil {
		tb.Fatal(err)
	}
	stop := make(chan struct{})
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, stop)
	}))
	// Faults make net/http log (TLS handshakes cut, connections reset);
	// what the test must know, the records and Err say.
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	if h2 {
		ts.EnableHTTP2 = true
		ts.StartTLS()
	} else {
		ts.Config.SetKeepAlivesEnabled(false)
		ts.Start()
	}
	tb.Cleanup(func() {
		close(stop)
		ts.Close()
		s.mu.Lock()
		err := s.failure
		s.mu.Unlock()
		if err != nil {
			tb.Error(err)
		}
	})
	return ts
}

// ServeHTTP implements [http.Handler], for a test that runs its own
// server (a custom TLS configuration, say). Faults then depend on that
// server: Reset needs an http.Hijacker under HTTP/1.1, and on a
// connection kept alive net/http's transport may resend an idempotent
// request once after a reset; [Server.Start] avoids both.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, nil)
}

// serve answers one request on a socket. stop, closed when the test ends,
// cuts off waits. Leaving without an answer panics with
// http.ErrAbortHandler, which net/http turns into a closed connection
// (HTTP/1.1) or a reset stream (HTTP/2), never into a reply.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, stop <-chan struct{}) {
	if err := s.checkScript(); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	ctx := r.Context()
	v := s.arrive(r, r.Proto)
	cancelled := false
	defer func() { v.end(cancelled) }()
	keep, max := s.limits()
	got := receive(ctx, r.Body, keep, max)
	v.received(got)
	switch {
	case got.err == ErrBodyTooLarge:
		st := Step{Status: http.StatusRequestEntityTooLarge, Body: ErrBodyTooLarge.Error()}
		s.reply(w, r, stop, &st)
		return
	case got.err != nil:
		cancelled = ctx.Err() != nil
		panic(http.ErrAbortHandler)
	}
	st, err := s.step(v.n, r, got)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if !sleep(ctx, stop, st.Delay) {
		cancelled = ctx.Err() != nil
		panic(http.ErrAbortHandler)
	}
	switch st.Fault {
	case Hang:
		select {
		case <-ctx.Done():
		case <-stop:
		}
		cancelled = ctx.Err() != nil
		panic(http.ErrAbortHandler)
	case Reset:
		reset(w, r, false)
		return
	}
	if !s.reply(w, r, stop, &st) {
		cancelled = ctx.Err() != nil
		panic(http.ErrAbortHandler)
	}
}

// reply sends a step's headers and body, then its mid-body fault if it
// has one. It reports false when the request ended, or the test, before
// the body was sent.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, stop <-chan struct{}, st *Step) bool {
	h := w.Header()
	for k, vs := range replyHeader(st, false) {
		h[k] = vs
	}
	w.WriteHeader(st.status())
	if r.Method == http.MethodHead || !bodyAllowed(st.status()) {
		return true
	}
	body := st.Body
	if st.Fault.midBody() {
		body = body[:st.After]
	}
	if !send(w, r, stop, body, st.Trickle) {
		return false
	}
	switch st.Fault {
	case ResetMidBody:
		reset(w, r, true)
	case CloseMidBody:
		truncate(w, r)
	}
	return true
}

// send writes body, trickled at rate when that is set.
func send(w http.ResponseWriter, r *http.Request, stop <-chan struct{}, body string, rate Rate) bool {
	if rate.Every <= 0 {
		_, err := io.WriteString(w, body)
		return err == nil
	}
	// The headers go at once, as they do in memory; only the body
	// trickles.
	f, _ := w.(http.Flusher)
	if f != nil {
		f.Flush()
	}
	for len(body) > 0 {
		if !sleep(r.Context(), stop, rate.Every) {
			return false
		}
		n := min(rate.piece(), len(body))
		if _, err := io.WriteString(w, body[:n]); err != nil {
			return false
		}
		if f != nil {
			f.Flush()
		}
		body = body[n:]
	}
	return true
}

// reset drops the attempt with a reset: under HTTP/2 its stream (a
// handler's panic with http.ErrAbortHandler makes net/http send
// RST_STREAM), under HTTP/1.1 its connection, closed with SO_LINGER 0 so
// that the kernel sends a TCP RST, not a FIN. answered says whether the
// headers were written, to be flushed before the reset.
func reset(w http.ResponseWriter, r *http.Request, answered bool) {
	if r.ProtoMajor == 2 {
		if f, ok := w.(http.Flusher); ok && answered {
			f.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	conn := hijack(w, answered)
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// truncate ends a body before its declared length: under HTTP/2 by
// ending the stream (the handler returns), under HTTP/1.1 by closing the
// connection cleanly.
func truncate(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 2 {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		return
	}
	hijack(w, true).Close()
}

// hijack takes the connection over, after flushing what was written to
// it when answered (flushing before the headers would send a 200). A
// server that cannot hand it over gets the handler's abort, which closes
// the connection too.
func hijack(w http.ResponseWriter, answered bool) net.Conn {
	if f, ok := w.(http.Flusher); ok && answered {
		f.Flush()
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	return conn
}
