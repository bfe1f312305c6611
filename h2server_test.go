package retryhttp_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
)

// A hand-written HTTP/2 server on loopback, for what no server library
// sends on request: a GOAWAY at a chosen point of a stream's life with a
// chosen code, a RST_STREAM in place of an answer. It speaks h2c with prior
// knowledge (RFC 9113 section 3.3) to the client h2cTransport returns, and
// writes each frame by hand.

// Frame types and flags (RFC 9113 section 6).
const (
	h2Data         uint8 = 0x0
	h2Headers      uint8 = 0x1
	h2RSTStream    uint8 = 0x3
	h2Settings     uint8 = 0x4
	h2Ping         uint8 = 0x6
	h2GoAway       uint8 = 0x7
	h2WindowUpdate uint8 = 0x8
	h2Continuation uint8 = 0x9

	h2EndStream  uint8 = 0x1
	h2Ack        uint8 = 0x1
	h2EndHeaders uint8 = 0x4
)

// h2Code is an HTTP/2 error code (RFC 9113 section 7).
type h2Code uint32

const (
	h2NoError         h2Code = 0x0
	h2ProtocolError   h2Code = 0x1
	h2RefusedStream   h2Code = 0x7
	h2EnhanceYourCalm h2Code = 0xb
)

// h2Preface is what a client sends first on an HTTP/2 connection.
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// h2Frame is one frame as read off the wire.
type h2Frame struct {
	typ, flags uint8
	stream     uint32
	payload    []byte
}

// h2Server accepts connections on loopback and hands each, past the
// client's preface and the server's SETTINGS, to the next of its scripts;
// the last script serves every later connection.
type h2Server struct {
	t       testing.TB
	ln      net.Listener
	scripts []func(*h2Conn)

	wg     sync.WaitGroup
	mu     sync.Mutex // guards conns and closed
	conns  []net.Conn // every connection accepted, closed when the test ends
	closed bool
}

// startH2Server starts a server that plays scripts, one per connection,
// and stops it when the test ends.
func startH2Server(t testing.TB, scripts ...func(*h2Conn)) *h2Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &h2Server{t: t, ln: ln, scripts: scripts}
	s.wg.Go(s.serve)
	t.Cleanup(s.close)
	return s
}

// URL is the server's base URL, for an h2cTransport.
func (s *h2Server) URL() string { return "http://" + s.ln.Addr().String() }

// accepted returns the number of connections accepted so far.
func (s *h2Server) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *h2Server) serve() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return // closed
		}
		s.mu.Lock()
		if s.closed {
			// Accepted as the server closed: close never saw it.
			s.mu.Unlock()
			nc.Close()
			return
		}
		script := s.scripts[min(len(s.conns), len(s.scripts)-1)]
		s.conns = append(s.conns, nc)
		s.mu.Unlock()
		s.wg.Go(func() {
			c := &h2Conn{t: s.t, nc: nc, r: bufio.NewReader(nc)}
			if c.handshake() {
				script(c)
			}
		})
	}
}

// close stops accepting, closes every connection and waits for the
// scripts to end.
func (s *h2Server) close() {
	s.ln.Close()
	s.mu.Lock()
	s.closed = true
	for _, nc := range s.conns {
		nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// h2cTransport returns a client that speaks unencrypted HTTP/2 only, with
// prior knowledge, as to an h2Server.
func h2cTransport(t testing.TB) *http.Transport {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// h2Conn is one connection of an h2Server, as its script sees it. Its
// methods report a failure to the test and return false when the client
// did not speak as expected.
type h2Conn struct {
	t       testing.TB
	nc      net.Conn
	r       *bufio.Reader
	pending []h2Frame // frames put back by unread, read again first
}

// handshake reads the client's preface and sends the server's SETTINGS
// (all defaults).
func (c *h2Conn) handshake() bool {
	preface := make([]byte, len(h2Preface))
	if _, err := io.ReadFull(c.r, preface); err != nil || string(preface) != h2Preface {
		c.t.Errorf("h2Server: got preface %q (%v), want %q", preface, err, h2Preface)
		return false
	}
	return c.write(h2Settings, 0, 0, nil)
}

// write sends one frame the script means to send.
func (c *h2Conn) write(typ, flags uint8, stream uint32, payload []byte) bool {
	if err := c.send(typ, flags, stream, payload); err != nil {
		c.t.Errorf("h2Server: writing a frame of type %d: %v", typ, err)
		return false
	}
	return true
}

// send writes one frame: a 9-byte header (length, type, flags, stream)
// and the payload.
func (c *h2Conn) send(typ, flags uint8, stream uint32, payload []byte) error {
	hdr := make([]byte, 9, 9+len(payload))
	hdr[0], hdr[1], hdr[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	hdr[3], hdr[4] = typ, flags
	binary.BigEndian.PutUint32(hdr[5:], stream&(1<<31-1))
	_, err := c.nc.Write(append(hdr, payload...))
	return err
}

// read returns the next frame that is not connection upkeep: it
// acknowledges the client's SETTINGS and PINGs, and skips window updates
// and acknowledgements.
func (c *h2Conn) read() (h2Frame, error) {
	if len(c.pending) > 0 {
		f := c.pending[0]
		c.pending = c.pending[1:]
		return f, nil
	}
	for {
		var hdr [9]byte
		if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
			return h2Frame{}, err
		}
		f := h2Frame{
			typ: hdr[3], flags: hdr[4],
			stream:  binary.BigEndian.Uint32(hdr[5:]) & (1<<31 - 1),
			payload: make([]byte, int(hdr[0])<<16|int(hdr[1])<<8|int(hdr[2])),
		}
		if _, err := io.ReadFull(c.r, f.payload); err != nil {
			return h2Frame{}, err
		}
		// An acknowledgement that does not reach a client that has
		// gone is no failure: the next read says it has gone.
		switch {
		case f.typ == h2Settings && f.flags&h2Ack == 0:
			c.send(h2Settings, h2Ack, 0, nil)
		case f.typ == h2Ping && f.flags&h2Ack == 0:
			c.send(h2Ping, h2Ack, 0, f.payload)
		case f.typ == h2Settings, f.typ == h2Ping, f.typ == h2WindowUpdate:
		default:
			return f, nil
		}
	}
}

// unread puts f back, for the next read to return, as a script that
// looked past the frames it skips.
func (c *h2Conn) unread(f h2Frame) { c.pending = append(c.pending, f) }

// headers reads up to the end of the next request's header block and
// returns its stream and whether the request has a body to come.
func (c *h2Conn) headers() (stream uint32, body, ok bool) {
	f, err := c.read()
	if err != nil || f.typ != h2Headers {
		c.t.Errorf("h2Server: got frame type %d (%v), want HEADERS", f.typ, err)
		return 0, false, false
	}
	for end := f.flags&h2EndHeaders != 0; !end; {
		cf, err := c.read()
		if err != nil || cf.typ != h2Continuation {
			c.t.Errorf("h2Server: got frame type %d (%v), want CONTINUATION", cf.typ, err)
			return 0, false, false
		}
		end = cf.flags&h2EndHeaders != 0
	}
	return f.stream, f.flags&h2EndStream == 0, true
}

// body reads the rest of stream's body, to its END_STREAM.
func (c *h2Conn) body(stream uint32) ([]byte, bool) {
	var got []byte
	for {
		f, err := c.read()
		if err != nil || f.typ != h2Data || f.stream != stream {
			c.t.Errorf("h2Server: got frame type %d on stream %d (%v), want DATA on stream %d", f.typ, f.stream, err, stream)
			return got, false
		}
		got = append(got, f.payload...) // the client sends no padding
		if f.flags&h2EndStream != 0 {
			return got, true
		}
	}
}

// request reads a whole request and returns its stream and body.
func (c *h2Conn) request() (stream uint32, body []byte, ok bool) {
	stream, more, ok := c.headers()
	if ok && more {
		body, ok = c.body(stream)
	}
	return stream, body, ok
}

// respond answers stream with status and body.
func (c *h2Conn) respond(stream uint32, status int, body string) bool {
	flags := h2EndHeaders
	if body == "" {
		flags |= h2EndStream
	}
	if !c.write(h2Headers, flags, stream, statusBlock(status)) {
		return false
	}
	return body == "" || c.write(h2Data, h2EndStream, stream, []byte(body))
}

// statusBlock is the HPACK block of a response header section holding
// only :status, without Huffman coding or the dynamic table (RFC 7541).
func statusBlock(status int) []byte {
	if status == 200 {
		return []byte{0x88} // indexed: static entry 8 is ":status: 200"
	}
	// Literal without indexing, its name static entry 8 (":status").
	v := strconv.Itoa(status)
	return append([]byte{0x08, byte(len(v))}, v...)
}

// goAway sends a GOAWAY naming last as the last stream the server may
// have processed.
func (c *h2Conn) goAway(last uint32, code h2Code, debug string) bool {
	p := binary.BigEndian.AppendUint32(nil, last)
	p = binary.BigEndian.AppendUint32(p, uint32(code))
	return c.write(h2GoAway, 0, 0, append(p, debug...))
}

// reset sends a RST_STREAM for stream.
func (c *h2Conn) reset(stream uint32, code h2Code) bool {
	return c.write(h2RSTStream, 0, stream, binary.BigEndian.AppendUint32(nil, uint32(code)))
}

// drain reads until the client closes the connection or the server is
// closed, for a script that has said all it will.
func (c *h2Conn) drain() {
	for {
		if _, err := c.read(); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.t.Logf("h2Server: drained to %v", err)
			}
			return
		}
	}
}

// hangUp closes the connection.
func (c *h2Conn) hangUp() { c.nc.Close() }
