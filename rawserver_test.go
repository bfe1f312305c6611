package retryhttp_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// rawServer is an HTTP/1.1 server on loopback that answers each request
// with bytes written by hand, then closes the connection: for answers no
// server library writes, such as a header section cut mid-line.
type rawServer struct {
	ln      net.Listener
	replies []string

	wg    sync.WaitGroup
	mu    sync.Mutex // guards conns and closed
	conns int        // connections accepted
	open  []net.Conn
	done  bool
}

// startRawServer starts a server whose n-th connection (from 0) reads one
// request and gets replies[min(n, len(replies)-1)], and stops it when the
// test ends.
func startRawServer(t testing.TB, replies ...string) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, replies: replies}
	s.wg.Go(s.serve)
	t.Cleanup(s.close)
	return s
}

// URL is the server's base URL.
func (s *rawServer) URL() string { return "http://" + s.ln.Addr().String() }

// accepted returns the number of connections accepted so far.
func (s *rawServer) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

func (s *rawServer) serve() {
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
		reply := s.replies[min(s.conns, len(s.replies)-1)]
		s.conns++
		s.open = append(s.open, nc)
		s.mu.Unlock()
		s.wg.Go(func() {
			defer nc.Close()
			req, err := http.ReadRequest(bufio.NewReader(nc))
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			io.WriteString(nc, reply)
		})
	}
}

// close stops accepting, closes every connection and waits for them.
func (s *rawServer) close() {
	s.ln.Close()
	s.mu.Lock()
	s.done = true
	for _, nc := range s.open {
		nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
