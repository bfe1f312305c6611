package redisfleet_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readWatch counts the reads in flight on the connections dialed
// through its dial.
type readWatch struct{ inflight atomic.Int64 }

func (w *readWatch) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return watchedReads{c, w}, nil
}

// watchedReads is a connection whose reads a readWatch counts.
type watchedReads struct {
	net.Conn
	w *readWatch
}

func (c watchedReads) Read(b []byte) (int, error) {
	c.w.inflight.Add(1)
	defer c.w.inflight.Add(-1)
	return c.Conn.Read(b)
}

// stoppedStoreClient returns a client of addr whose own timeouts are an
// hour, so that nothing but the Fleet's Timeout ends a wait on a store
// that does not answer.
func stoppedStoreClient(t *testing.T, addr string, dial func(context.Context, string, string) (net.Conn, error)) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, Dialer: dial, MaxRetries: -1,
		DialTimeout: time.Hour, ReadTimeout: time.Hour, WriteTimeout: time.Hour})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestRealCloseWhileTheStoreIsStopped stops a real store with SIGSTOP
// under a member that has warmed up and subscribed: its connections
// stay open and nothing answers on them. Close returns within Timeout,
// not the client's hour, while a round trip and the subscription wait.
func TestRealCloseWhileTheStoreIsStopped(t *testing.T) {
	const timeout = 500 * time.Millisecond
	s := startRedis(t)
	var w readWatch
	c := stoppedStoreClient(t, s.addr, w.dial)
	f := redisfleet.New(c, redisfleet.Options{Timeout: timeout})
	subscribed(t, f)
	waitFor(t, "the warm-up", func() bool { return f.Stats().Flushes > 0 })

	s.Pause()
	defer s.Resume()
	f.Report(host, failure)
	// The subscription's read, and the round trip's that carries the failure.
	waitFor(t, "the failure's round trip waiting on the store", func() bool { return w.inflight.Load() >= 2 })
	start := time.Now()
	require.NoError(t, f.Close())
	took := time.Since(start)
	t.Logf("Close took %v with the store stopped (Timeout %v)", took, timeout)
	assert.Less(t, took, timeout+5*time.Second, "got Close waiting %v, far past Timeout, %v", took, timeout)
	assert.Zero(t, w.inflight.Load(), "got the Fleet's reads in flight after Close returned")
	after := f.Stats()
	f.Report("other.example.com", failure)
	assert.Equal(t, after, f.Stats(), "got a report recorded after Close")
}

// TestRealTransportWithAStoppedStore sends requests through a Transport
// whose Fleet's store is stopped (SIGSTOP: it accepts and never
// answers) before the member met the host, with every wait on the store
// an hour long: the requests all end, and with as many attempts as a
// Transport with no Fleet makes, so the fleet answered "allow" at once
// and the Transport's own budget decided.
func TestRealTransportWithAStoppedStore(t *testing.T) {
	const requests = 40
	srv := &retryhttptest.Server{Script: []retryhttptest.Step{{Status: 503}}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	s := startRedis(t)
	c := stoppedStoreClient(t, s.addr, nil)
	f := redisfleet.New(c, redisfleet.Options{Timeout: time.Hour, StaleAfter: time.Hour})
	defer func() { require.NoError(t, f.Close()) }() // after the store resumes: Timeout is an hour
	subscribed(t, f)
	waitFor(t, "the warm-up", func() bool { return f.Stats().Flushes > 0 })
	s.Pause()
	defer s.Resume()
	flushes := f.Stats().Flushes

	attempts := func(tr *retryhttp.Transport) int {
		before := srv.Count()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range requests {
				status, err := send(&http.Client{Transport: tr}, ts.URL)
				assert.NoError(t, err)
				assert.Equal(t, http.StatusServiceUnavailable, status)
			}
		}()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("got requests unfinished after a minute: they wait for the stopped store")
		}
		return srv.Count() - before
	}
	alone := &retryhttp.Transport{Policy: quickPolicy()}
	defer alone.CloseIdleConnections()
	withFleet := &retryhttp.Transport{Policy: quickPolicy(), Fleet: f}
	defer withFleet.CloseIdleConnections()
	want := attempts(alone)
	got := attempts(withFleet)
	assert.Equal(t, want, got, "got %d attempts with the store stopped, want the %d of a Transport alone", got, want)
	assert.Zero(t, withFleet.Stats().Total.FleetRefusals)
	assert.Positive(t, f.Stats().Hosts, "the Transport reports to its Fleet")
	assert.Equal(t, flushes, f.Stats().Flushes, "got a round trip answered by a stopped store")
}
