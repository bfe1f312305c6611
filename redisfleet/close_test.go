package redisfleet

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// frozenStore accepts connections and never answers, as a store stopped
// with SIGSTOP or behind a dead proxy does. Closing it closes every
// connection it accepted.
type frozenStore struct {
	ln    net.Listener
	mu    sync.Mutex // guards conns: the accept loop adds, close closes
	conns []net.Conn
	done  chan struct{}
}

func freeze(t *testing.T) *frozenStore {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &frozenStore{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *frozenStore) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *frozenStore) close() {
	_ = s.ln.Close()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
}

func TestCloseWhileTheStoreIsFrozen(t *testing.T) {
	const host = "api.example.com"
	s := freeze(t)
	// Timeouts of a minute: Close must not wait for them.
	c := redis.NewClient(&redis.Options{Addr: s.ln.Addr().String(), MaxRetries: -1,
		DialTimeout: time.Minute, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	defer c.Close()
	f := New(c, Options{})
	deadline := time.Now().Add(10 * time.Second)
	for s.accepted() < 2 { // the flusher's connection and the listener's
		require.True(t, time.Now().Before(deadline), "got %d connections, want the flusher's and the listener's", s.accepted())
		time.Sleep(time.Millisecond)
	}
	// The request path answers while the store does not.
	f.Report(host, retryhttp.FleetReport{Budget: retryhttp.FleetFailure, Throttle: throttle})
	assert.Equal(t, retryhttp.FleetView{}, f.Look(host, "r"))

	start := time.Now()
	require.NoError(t, f.Close())
	took := time.Since(start)
	assert.Less(t, took, 30*time.Second, "got Close waiting %v, as long as the client's timeouts", took)
	assert.Equal(t, retryhttp.FleetView{}, f.Look(host, "r"))
	assert.True(t, ended(f), "got the background work running after Close returned")
}

// ended reports whether f's background work has ended.
func ended(f *Fleet) bool {
	done := make(chan struct{})
	go func() { f.done.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(time.Second):
		return false
	}
}

func TestCloseIsIdempotentAndLeavesTheClient(t *testing.T) {
	_, c := newMini(t)
	f := New(c, Options{})
	require.NoError(t, f.Close())
	require.NoError(t, f.Close())
	f.Report("h", retryhttp.FleetReport{Budget: retryhttp.FleetFailure, Throttle: throttle})
	assert.Zero(t, f.Stats().Hosts, "got a report recorded after Close")
	assert.NoError(t, c.Ping(t.Context()).Err(), "got the caller's client closed")
}
