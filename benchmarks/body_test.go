package benchmarks

import (
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bodyScript answers arrival i with statuses[min(i, len-1)] after reading
// the body to its end, and records for each arrival what was left unread
// of the caller's body when it came, how many bytes it carried, and
// whether it carried the caller's own reader.
type bodyScript struct {
	statuses []int
	src      *streamBody

	mu       sync.Mutex // guards what follows
	leftThen []int64
	got      []int64
	own      []bool
}

func (s *bodyScript) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n := len(s.got)
	s.leftThen = append(s.leftThen, s.src.left)
	s.own = append(s.own, r.Body == io.ReadCloser(s.src))
	s.got = append(s.got, 0)
	s.mu.Unlock()
	got, _ := io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	s.got[n] = got
	s.mu.Unlock()
	w.WriteHeader(s.statuses[min(n, len(s.statuses)-1)])
}

// put sends a PUT of size bytes made as they are read, with no GetBody,
// through p built over a bodyScript answering statuses, and returns the
// script and the answer's status.
func put(t *testing.T, p Peer, size int64, statuses ...int) (*bodyScript, int) {
	s := &bodyScript{statuses: statuses, src: newStreamBody(size, false)}
	req, err := http.NewRequest(http.MethodPut, "http://peer.test/", s.src)
	require.NoError(t, err)
	req.ContentLength = -1
	resp, err := (&http.Client{Transport: p.New(testSpec(), mem{s})}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return s, resp.StatusCode
}

// TestBodies checks how each peer replays a streamed body without
// GetBody: read whole before the first attempt, kept as it is sent up to
// 1 MiB, shared between hedges, or sent once.
func TestBodies(t *testing.T) {
	const small, large = 16 << 10, 2 << 20
	for _, p := range Peers() {
		t.Run(p.Name, func(t *testing.T) {
			inTime(t, p, func(t *testing.T, _ bool) {
				if p.Caps.Body == BodyShared {
					s, _ := put(t, p, small, 200)
					assert.Equal(t, []bool{true}, s.own, "attempt reads the caller's body itself")
					return
				}
				s, status := put(t, p, small, 503, 200)
				assert.Equal(t, p.Caps.Body == BodyWhole, s.leftThen[0] == 0, "whole body read before the first attempt")
				wantStatus, wantGot := 503, []int64{small}
				if extraAttempts(p) {
					wantStatus, wantGot = 200, []int64{small, small}
				}
				assert.Equal(t, wantStatus, status)
				assert.Equal(t, wantGot, s.got, "bytes per attempt")

				s, status = put(t, p, large, 503, 200)
				wantStatus, wantGot = 503, []int64{large}
				if extraAttempts(p) && p.Caps.Body != BodyBounded {
					wantStatus, wantGot = 200, []int64{large, large}
				}
				assert.Equal(t, wantStatus, status, "over the buffer limit")
				assert.Equal(t, wantGot, s.got, "bytes per attempt over the buffer limit")
			})
		})
	}
}
