package retryhttp_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server may answer a streamed upload part way through and go on
// reading it, and net/http's writer for that attempt then goes on reading
// the caller's body after the answer came. When the caller's body is slow,
// a Read of it may still be under way when the retry starts, or the
// writer may still be reading; either must never push the body past its
// buffer under the retry. The caller gets the retry's answer or the
// answer kept for it, never "request body cannot be replayed".

const slowUploadSize = 2 << 20 // twice the default buffer of 1 MiB

// slowSource is a caller's body with no GetBody that gives at most step
// bytes per Read, each after a pause: a slow producer behind a pipe.
type slowSource struct {
	data  []byte
	off   int // guarded by the body's own one-Read-at-a-time use
	step  int
	pause time.Duration
}

func (s *slowSource) Read(p []byte) (int, error) {
	if s.off == len(s.data) {
		return 0, io.EOF
	}
	time.Sleep(s.pause) // virtual time: the tests run in a synctest bubble
	n := copy(p[:min(len(p), s.step)], s.data[s.off:])
	s.off += n
	return n, nil
}

func (s *slowSource) Close() error { return nil }

// earlyServer is a base that plays, in memory, net/http's HTTP/1.1 client
// talking to a server that answers the first attempt 503 once answerAt
// bytes of its body have come, and goes on reading it. As net/http does,
// the first attempt's writer reads the request body on a goroutine of its
// own, after the answer too; the answer's body ends (io.EOF) only once
// the writer has finished, or after 50 ms, when the connection is given
// up and the writer stops after the Read it is in. Every later attempt is
// read whole and answered 200 "stored" if its body is the caller's whole.
type earlyServer struct {
	want     []byte
	answerAt int64
	attempts atomic.Int64
	writers  sync.WaitGroup
}

func (s *earlyServer) RoundTrip(req *http.Request) (*http.Response, error) {
	if s.attempts.Add(1) > 1 {
		got, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(got, s.want) {
			return reply(req, http.StatusBadRequest, fmt.Sprintf("got %d bytes", len(got))), nil
		}
		return reply(req, http.StatusOK, "stored"), nil
	}
	answered, wrote, gone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	s.writers.Add(1)
	go func() { // net/http's writeLoop
		defer s.writers.Done()
		defer close(wrote)
		defer req.Body.Close()
		buf := make([]byte, 32<<10)
		var sent int64
		for {
			n, err := req.Body.Read(buf)
			if sent < s.answerAt && sent+int64(n) >= s.answerAt {
				close(answered)
			}
			sent += int64(n)
			select {
			case <-gone:
				return // the write fails on the closed connection
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-answered:
	case <-wrote:
		return nil, fmt.Errorf("the body ended before %d bytes", s.answerAt)
	}
	resp := reply(req, http.StatusServiceUnavailable, "busy")
	resp.Body = &earlyAnswerBody{r: bytes.NewReader([]byte("busy")), wrote: wrote, gone: gone}
	return resp, nil
}

func reply(req *http.Request, code int, body string) *http.Response {
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, ContentLength: int64(len(body)), Body: io.NopCloser(bytes.NewReader([]byte(body))), Request: req}
}

// earlyAnswerBody is the body of the early answer: its bytes, then, as
// net/http's persistConn.readLoop waits up to 50 ms for the request's
// write to end before it reuses the connection, io.EOF once the writer
// has finished or the connection is given up.
type earlyAnswerBody struct {
	r           *bytes.Reader
	wrote, gone chan struct{}
	once        sync.Once
}

func (b *earlyAnswerBody) Read(p []byte) (int, error) {
	if b.r.Len() > 0 {
		return b.r.Read(p)
	}
	b.end()
	return 0, io.EOF
}

func (b *earlyAnswerBody) Close() error {
	b.once.Do(func() { close(b.gone) })
	return nil
}

func (b *earlyAnswerBody) end() {
	t := time.NewTimer(50 * time.Millisecond)
	defer t.Stop()
	select {
	case <-b.wrote:
	case <-t.C:
	}
	b.Close()
}

// In memory, in virtual time: the first attempt is answered once its
// writer has sent answerAt bytes, while the caller's body gives step bytes
// per Read after each pause. An answer that comes while the body is within
// its buffer leaves the retry its body whole, however late the first
// writer's Read ends; one that comes as the writer may be taking the body
// past its buffer (answerAt at the limit) is the one the caller gets back,
// unless the writer waited.
func TestEarlyAnswerToASlowUploadIsNeverLost(t *testing.T) {
	data := bodyBytes(slowUploadSize, 7)
	for _, answerAt := range []int64{512 << 10, 900 << 10, 992 << 10, 1000 << 10, 1020 << 10, 1 << 20} {
		for _, step := range []int{16 << 10, 48 << 10, 64 << 10} {
			for _, pause := range []time.Duration{time.Millisecond, 30 * time.Millisecond, 150 * time.Millisecond, 400 * time.Millisecond} {
				name := fmt.Sprintf("answer at %dKiB, %dKiB every %v", answerAt>>10, step>>10, pause)
				t.Run(name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						want := http.StatusOK
						if answerAt >= bufferPerRequest {
							// The writer's next Read may start
							// before the answer is seen, and pass
							// the buffer: either outcome is right.
							want = 0
						}
						srv := &earlyServer{want: data, answerAt: answerAt}
						tr := &retryhttp.Transport{Base: srv, Policy: retryConfig(3, 503)}
						src := &slowSource{data: data, step: step, pause: pause}
						req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, "https://api.test/v1/items", src)
						require.NoError(t, err)
						resp, err := tr.RoundTrip(req)
						require.NoError(t, err, "the answer was lost")
						checkAnswer(t, resp, want)
						wantAttempts := int64(2)
						if resp.StatusCode == http.StatusServiceUnavailable {
							wantAttempts = 1 // the retry was never sent
						}
						assert.Equal(t, wantAttempts, srv.attempts.Load(), "attempts sent")
						srv.writers.Wait()
						synctest.Wait()
						assert.Zero(t, tr.Stats().Buffer.Buffered, "the buffer's room comes back")
					})
				})
			}
		}
	}
}

// checkAnswer checks that resp is the retry's whole answer or the kept
// 503, whole too, and that it has the status wanted, 0 meaning either.
func checkAnswer(t *testing.T, resp *http.Response, want int) {
	t.Helper()
	got := readAll(t, resp)
	switch resp.StatusCode {
	case http.StatusOK:
		assert.Equal(t, "stored", got)
	case http.StatusServiceUnavailable:
		assert.Equal(t, "busy", got, "the kept answer comes back whole")
	default:
		t.Errorf("got status %d (%q), want 200 or the 503", resp.StatusCode, got)
	}
	if want != 0 {
		assert.Equal(t, want, resp.StatusCode)
	}
}

// gatedSource is a caller's body with no GetBody that gives at most step
// bytes per Read, and whose Read from blockAt on waits until gate is closed:
// a producer that stalls just as the server answers.
type gatedSource struct {
	data    []byte
	off     int // guarded by the body's own one-Read-at-a-time use
	step    int
	blockAt int
	gate    chan struct{}
	once    sync.Once
}

func (s *gatedSource) Read(p []byte) (int, error) {
	if s.off == len(s.data) {
		return 0, io.EOF
	}
	if s.off >= s.blockAt {
		<-s.gate
	}
	n := copy(p[:min(len(p), s.step)], s.data[s.off:])
	s.off += n
	return n, nil
}

func (s *gatedSource) Close() error { return nil }

func (s *gatedSource) open() { s.once.Do(func() { close(s.gate) }) }

// Over loopback, with net/http's own Transport, whose writer goes on
// reading the first attempt's body after the 503: the caller's body stalls
// in a Read at blockAt until the retry reaches the server (or RoundTrip
// has returned), so that the Read is under way when the first attempt's
// body reader is closed, and when the retry starts.
func TestEarlyAnswerToAStalledUploadOnLoopback(t *testing.T) {
	data := bodyBytes(slowUploadSize, 7)
	tests := []struct {
		blockAt int
		want    int // 0: either
	}{
		// The Read under way stays within the buffer: the retry has
		// its body whole.
		{blockAt: 1000 << 10, want: http.StatusOK},
		// The Read under way, if the writer got there before the 503
		// did, takes the body past its buffer: the 503 comes back.
		{blockAt: 1 << 20},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("stalls at %dKiB", tt.blockAt>>10), func(t *testing.T) {
			src := &gatedSource{data: data, step: 64 << 10, blockAt: tt.blockAt, gate: make(chan struct{})}
			var requests atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if requests.Add(1) == 1 {
					rc := http.NewResponseController(w)
					rc.EnableFullDuplex()
					io.CopyN(io.Discard, req.Body, 900<<10)
					w.Header().Set("Content-Length", "4")
					w.WriteHeader(http.StatusServiceUnavailable)
					io.WriteString(w, "busy")
					rc.Flush()
					io.Copy(io.Discard, req.Body)
					return
				}
				src.open() // the retry has come
				got, _ := io.ReadAll(req.Body)
				if !bytes.Equal(got, data) {
					w.WriteHeader(http.StatusBadRequest)
					fmt.Fprintf(w, "got %d bytes", len(got))
					return
				}
				io.WriteString(w, "stored")
			}))
			defer srv.Close()
			tr := &retryhttp.Transport{Base: srv.Client().Transport, Policy: retryConfig(3, 503)}
			defer tr.CloseIdleConnections()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL, src)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			src.open()
			require.NoError(t, err, "the answer was lost")
			checkAnswer(t, resp, tt.want)
			wantRoomBack(t, tr)
		})
	}
}

// bufferPerRequest is what a Transport's zero Buffer.PerRequest means.
const bufferPerRequest = 1 << 20
