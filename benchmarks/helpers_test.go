package benchmarks

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// mem is a round tripper that serves each request in memory with a
// handler, so that tests can run under testing/synctest's virtual time. A
// request whose context ends before the handler returns gets its error.
type mem struct{ h http.Handler }

func (m mem) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	rec := httptest.NewRecorder()
	m.h.ServeHTTP(rec, req)
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// script answers arrival i (from 0) with statuses[min(i, len-1)], after
// hold (or at once when the request's context ends first), with header
// on every answer but a 200. It records when each arrival came.
type script struct {
	statuses []int
	header   http.Header
	hold     time.Duration

	mu       sync.Mutex // guards what follows
	start    time.Time
	arrivals []time.Duration
}

func newScript(statuses ...int) *script {
	return &script{statuses: statuses, start: time.Now()}
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n := len(s.arrivals)
	s.arrivals = append(s.arrivals, time.Since(s.start))
	status := s.statuses[min(n, len(s.statuses)-1)]
	s.mu.Unlock()
	if s.hold > 0 {
		t := time.NewTimer(s.hold)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	if status != http.StatusOK {
		for k, v := range s.header {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(status)
}

// seen returns the arrival times so far.
func (s *script) seen() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.arrivals...)
}

// do sends a GET through rt and returns the status (0 with an error),
// closing the answer.
func do(t *testing.T, rt http.RoundTripper) (int, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://peer.test/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// realTime names the peers that cannot run in a synctest bubble, and why.
var realTime = map[string]string{
	"hedgedhttp": "its worker goroutines wait on a package-level channel, which a bubble cannot wait out",
}

// inTime runs f in a synctest bubble (virtual set), or in real time for
// the peers in realTime, where f may only check what does not depend on
// the speed of the machine.
func inTime(t *testing.T, p Peer, f func(t *testing.T, virtual bool)) {
	t.Helper()
	if _, ok := realTime[p.Name]; ok {
		f(t, false)
		return
	}
	synctest.Test(t, func(t *testing.T) { f(t, true) })
}
