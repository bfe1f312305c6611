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
	tests := []struct {
		name   string
		client func(addr string) redis.UniversalClient
	}{
		// Timeouts of a minute: Close must not wait for them. A Client's
		// commands are bounded by Timeout whatever its options.
		{"a Client", func(addr string) redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1,
				DialTimeout: time.Minute, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
		}},
		// A Ring's, by the context, with ContextTimeoutEnabled.
		{"a Ring with ContextTimeoutEnabled", func(addr string) redis.UniversalClient {
			return redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": addr}, MaxRetries: -1,
				DialTimeout: time.Minute, ReadTimeout: time.Minute, WriteTimeout: time.Minute,
				ContextTimeoutEnabled: true})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := freeze(t)
			c := tt.client(s.ln.Addr().String())
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
		})
	}
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

// TestRingWithEveryShardDown checks that the listener's subscription on a
// Ring whose shards are all down fails with an error: Ring.Subscribe
// panics then.
func TestRingWithEveryShardDown(t *testing.T) {
	r := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}, HeartbeatFrequency: 10 * time.Millisecond})
	defer r.Close()
	deadline := time.Now().Add(10 * time.Second)
	for r.Len() > 0 {
		require.True(t, time.Now().Before(deadline), "got the Ring's shard still up")
		time.Sleep(time.Millisecond)
	}
	f := newFleet(r, Options{})
	ps, _, err := f.subscribe(t.Context())
	assert.Nil(t, ps)
	assert.Error(t, err)
	assert.True(t, f.moved(nil), "got the channel on a shard of a Ring with none")
}
