package redisfleet

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
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

// ioWatch counts the reads and writes on the connections of a client
// dialed through its dial: those in flight, and those begun once closed
// is set, after the Fleet's Close returned.
type ioWatch struct {
	inflight, late atomic.Int64
	closed         atomic.Bool
}

// dial dials addr, a connection whose reads and writes w counts.
func (w *ioWatch) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return watchedConn{c, w}, nil
}

// begin counts a read or write begun; the function it returns, its end.
func (w *ioWatch) begin() (end func()) {
	if w.closed.Load() {
		w.late.Add(1)
	}
	w.inflight.Add(1)
	return func() { w.inflight.Add(-1) }
}

// watchedConn is a connection whose reads and writes an ioWatch counts.
type watchedConn struct {
	net.Conn
	w *ioWatch
}

func (c watchedConn) Read(b []byte) (int, error) {
	defer c.w.begin()()
	return c.Conn.Read(b)
}

func (c watchedConn) Write(b []byte) (int, error) {
	defer c.w.begin()()
	return c.Conn.Write(b)
}

// TestCloseWhileTheStoreIsFrozen closes a Fleet whose round trip and
// subscription wait on a store that never answers: Close returns within
// Timeout, and only once the Fleet's reads of the client's connections
// have ended, none begun after.
func TestCloseWhileTheStoreIsFrozen(t *testing.T) {
	const host = "api.example.com"
	const timeout = 500 * time.Millisecond
	type dialer = func(ctx context.Context, network, addr string) (net.Conn, error)
	tests := []struct {
		name   string
		client func(addr string, dial dialer) redis.UniversalClient
	}{
		// Timeouts of a minute: Close must not wait for them. A Client's
		// commands are bounded by Timeout whatever its options.
		{"a Client", func(addr string, dial dialer) redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: addr, Dialer: dial, MaxRetries: -1,
				DialTimeout: time.Minute, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
		}},
		// A Ring's, by the context, with ContextTimeoutEnabled. No
		// heartbeat in the test's time: its pings are go-redis's, not
		// the Fleet's.
		{"a Ring with ContextTimeoutEnabled", func(addr string, dial dialer) redis.UniversalClient {
			return redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": addr}, Dialer: dial, MaxRetries: -1,
				DialTimeout: time.Minute, ReadTimeout: time.Minute, WriteTimeout: time.Minute,
				ContextTimeoutEnabled: true, HeartbeatFrequency: time.Hour})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := freeze(t)
			var w ioWatch
			c := tt.client(s.ln.Addr().String(), w.dial)
			defer c.Close()
			f := New(c, Options{Timeout: timeout})
			// The request path answers while the store does not.
			f.Report(host, retryhttp.FleetReport{Budget: retryhttp.FleetFailure, Throttle: throttle})
			assert.Equal(t, retryhttp.FleetView{}, f.Look(host, "r"))
			deadline := time.Now().Add(10 * time.Second)
			for s.accepted() < 2 || w.inflight.Load() < 2 { // reads waiting on the store: a round trip's, the subscription's
				require.True(t, time.Now().Before(deadline), "got %d connections, %d reads or writes in flight, want the flusher's and the listener's",
					s.accepted(), w.inflight.Load())
				time.Sleep(time.Millisecond)
			}

			start := time.Now()
			require.NoError(t, f.Close())
			took := time.Since(start)
			w.closed.Store(true)
			assert.Zero(t, w.inflight.Load(), "got reads or writes of the Fleet's in flight after Close returned")
			// A second of margin: the machine may be busy with other runs.
			assert.Less(t, took, timeout+time.Second, "got Close waiting %v, past Timeout, %v", took, timeout)
			assert.Equal(t, retryhttp.FleetView{}, f.Look(host, "r"))
			f.Report(host, retryhttp.FleetReport{Budget: retryhttp.FleetFailure, Throttle: throttle})
			assert.Zero(t, w.late.Load(), "got reads or writes begun after Close returned")
		})
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
