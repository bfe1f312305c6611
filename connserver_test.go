package retryhttp_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/dial"
	"github.com/retryhttp/retryhttp/policy"
)

// connServer is an HTTP/1.1 server on loopback whose n-th connection
// (from 0) is played by play, which may read requests from rd and write
// anything to c. It closes every connection when the test ends, which
// ends a play blocked on its connection.
type connServer struct {
	ln   net.Listener
	play func(n int, c net.Conn, rd *bufio.Reader)

	wg   sync.WaitGroup
	mu   sync.Mutex // guards n, open, done and gone
	n    int
	open []net.Conn
	done bool
	// gone[n] is closed once the client has closed connection n; see
	// closedByClient.
	gone []chan struct{}
}

func startConnServer(t testing.TB, play func(n int, c net.Conn, rd *bufio.Reader)) *connServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &connServer{ln: ln, play: play}
	s.wg.Go(s.serve)
	t.Cleanup(s.close)
	return s
}

// URL is the server's base URL.
func (s *connServer) URL() string { return "http://" + s.ln.Addr().String() }

// accepted returns the number of connections accepted so far.
func (s *connServer) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// closedByClient returns a channel closed once the client has closed
// connection n (its play returned, and a read then found the end).
func (s *connServer) closedByClient(n int) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gone[n]
}

func (s *connServer) serve() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return // closed
		}
		s.mu.Lock()
		if s.done {
			s.mu.Unlock()
			nc.Close()
			return
		}
		n := s.n
		s.n++
		gone := make(chan struct{})
		s.open = append(s.open, nc)
		s.gone = append(s.gone, gone)
		s.mu.Unlock()
		s.wg.Go(func() {
			defer nc.Close()
			rd := bufio.NewReader(nc)
			s.play(n, nc, rd)
			// Whatever the play left unread, the client's close ends it.
			io.Copy(io.Discard, rd)
			close(gone)
		})
	}
}

func (s *connServer) close() {
	s.ln.Close()
	s.mu.Lock()
	s.done = true
	for _, nc := range s.open {
		nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// startRawServer starts a connServer whose n-th connection (from 0)
// reads one request, gets replies[min(n, len(replies)-1)] written by
// hand, and is closed: for answers no server library writes, such as a
// header section cut mid-line.
func startRawServer(t testing.TB, replies ...string) *connServer {
	t.Helper()
	return startConnServer(t, func(n int, c net.Conn, rd *bufio.Reader) {
		if readRequest(rd) {
			io.WriteString(c, replies[min(n, len(replies)-1)])
		}
		c.Close()
	})
}

// readRequest reads one request and its body from rd; it reports whether
// there was one.
func readRequest(rd *bufio.Reader) bool {
	req, err := http.ReadRequest(rd)
	if err != nil {
		return false
	}
	_, err = io.Copy(io.Discard, req.Body)
	return err == nil
}

// playAnswer is a play that answers each request on the connection with
// reply.
func playAnswer(reply string) func(net.Conn, *bufio.Reader) {
	return func(c net.Conn, rd *bufio.Reader) {
		for readRequest(rd) {
			if _, err := io.WriteString(c, reply); err != nil {
				return
			}
		}
	}
}

// playStall is a play that reads a request, writes reply and then nothing:
// the connection stays open until the client closes it.
func playStall(reply string) func(net.Conn, *bufio.Reader) {
	return func(c net.Conn, rd *bufio.Reader) {
		if readRequest(rd) {
			io.WriteString(c, reply)
		}
		io.Copy(io.Discard, rd) // until the client closes
	}
}

// playTrickle is a play that reads a request, writes head and then piece
// every few milliseconds, for as long as the client keeps the connection.
func playTrickle(head, piece string) func(net.Conn, *bufio.Reader) {
	return func(c net.Conn, rd *bufio.Reader) {
		if !readRequest(rd) {
			return
		}
		if _, err := io.WriteString(c, head); err != nil {
			return
		}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if _, err := io.WriteString(c, piece); err != nil {
				return
			}
		}
	}
}

// playEach returns a play that plays p[n] on connection n, the last one
// again on every later connection.
func playEach(p ...func(net.Conn, *bufio.Reader)) func(int, net.Conn, *bufio.Reader) {
	return func(n int, c net.Conn, rd *bufio.Reader) { p[min(n, len(p)-1)](c, rd) }
}

const okReply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// newBaseTransport is a Transport with the base the zero Transport builds
// (dial.NewBase), retrying cfg's way, whose connections end with the test.
func newBaseTransport(t *testing.T, cfg *policy.Config) *retryhttp.Transport {
	base, _ := dial.NewBase()
	t.Cleanup(base.CloseIdleConnections)
	return &retryhttp.Transport{Base: base, Policy: cfg}
}

// hangBound runs f on a goroutine of its own, failing the test if it has not
// returned within bound: a bound on a hang, reached only on failure. f
// checks with assert, not require, as it runs off the test's goroutine.
func hangBound(t *testing.T, bound time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Fatalf("still running after %v", bound)
	}
}

// getRequest is a GET of url's /v1/items under ctx.
func getRequest(t *testing.T, ctx context.Context, url string) *http.Request {
	req, err := http.NewRequestWithContext(ctx, "GET", url+"/v1/items", nil)
	assert.NoError(t, err)
	return req
}

// readBody reads resp's body whole and closes it, with assert: for use
// off the test's goroutine.
func readBody(t *testing.T, resp *http.Response) string {
	b, err := io.ReadAll(resp.Body)
	assert.NoError(t, err)
	assert.NoError(t, resp.Body.Close())
	return string(b)
}
