package benchmarks

import (
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Server is a loopback server that counts the requests it gets and the
// connections it accepts.
type Server struct {
	*httptest.Server
	hits, conns atomic.Int64
}

// NewServer starts a Server that answers with h. Close it when done.
func NewServer(h http.Handler) *Server {
	s := &Server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	return s
}

// Hits is the number of requests the server got.
func (s *Server) Hits() int64 { return s.hits.Load() }

// Conns is the number of connections the server accepted.
func (s *Server) Conns() int64 { return s.conns.Load() }

// OK answers every request 200 with a short body.
func OK() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	})
}

// Failing answers 503 with a short body, as real servers do, with
// probability rate, and 200 otherwise. The draws come from a generator
// seeded with seed, one per arrival, so runs see the same sequence.
func Failing(rate float64, seed uint64) http.Handler {
	var mu sync.Mutex // the generator is not safe for concurrent use
	rng := rand.New(rand.NewPCG(seed, seed))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		fail := rng.Float64() < rate
		mu.Unlock()
		if fail {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	})
}

// Shape of the heavy tail: most answers fast, a few very slow; in the
// shift, the fast answers slow down to TailShifted halfway through.
const (
	TailFast     = 2 * time.Millisecond
	TailSlow     = 200 * time.Millisecond
	TailSlowRate = 0.02
	TailShifted  = 15 * time.Millisecond
)

// HeavyTail answers after TailFast, or after TailSlow with probability
// TailSlowRate, drawn per arrival from a generator seeded with seed; a hedge
// is an arrival like any other. A request whose context ends (a cancelled
// hedge) is let go at once, as a server that notices the disconnect would.
func HeavyTail(seed uint64) http.Handler { return ShiftingTail(seed, -1) }

// ShiftingTail is HeavyTail whose fast answers take TailShifted instead of
// TailFast from arrival number after (from 0) on, as when a backend gets
// busier: above a fixed delay tuned to the first half, below the slow
// answers. A negative after never shifts.
func ShiftingTail(seed uint64, after int64) http.Handler {
	return tail(seed, func(n int64, _ *rand.Rand) time.Duration {
		if after >= 0 && n >= after {
			return TailShifted
		}
		return TailFast
	})
}

// tail answers arrival n (from 0) after fast(n, rng), or after TailSlow
// with probability TailSlowRate, drawn from a generator seeded with seed
// after fast's own draws, if any. A request whose context ends is let go
// at once.
func tail(seed uint64, fast func(n int64, rng *rand.Rand) time.Duration) http.Handler {
	var mu sync.Mutex // guards rng, not safe for concurrent use, and arrivals
	rng := rand.New(rand.NewPCG(seed, seed))
	var arrivals int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		d := fast(arrivals, rng)
		arrivals++
		if rng.Float64() < TailSlowRate {
			d = TailSlow
		}
		mu.Unlock()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			io.WriteString(w, "ok\n")
		case <-r.Context().Done():
		}
	})
}

// RetryAfter answers every request with status and a Retry-After of the
// given seconds.
func RetryAfter(status, seconds int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", strconv.Itoa(seconds))
		http.Error(w, http.StatusText(status), status)
	})
}

// GotHeader carries the number of body bytes a [Discard] server read.
const GotHeader = "Got"

// Discard reads each request body to its end and answers 200 with the
// number of bytes read in [GotHeader].
func Discard() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		w.Header().Set(GotHeader, strconv.FormatInt(n, 10))
	})
}
