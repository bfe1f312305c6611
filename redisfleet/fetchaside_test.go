package redisfleet_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/redisfleet"
)

// pipelineHook is a go-redis hook that acts on pipelines alone.
type pipelineHook func(next redis.ProcessPipelineHook) redis.ProcessPipelineHook

func (h pipelineHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h pipelineHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h pipelineHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return h(next)
}

// fetchesAlone reports whether a pipeline is a round trip of fetches
// alone (HGETALLs).
func fetchesAlone(cs []redis.Cmder) bool {
	for _, c := range cs {
		if c.Name() != "hgetall" {
			return false
		}
	}
	return true
}

// fetchStall holds every round trip of fetches alone until release is
// closed, or its context ends, and closes began when the first starts.
func fetchStall(began, release chan struct{}) pipelineHook {
	var once sync.Once
	return func(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
		return func(ctx context.Context, cs []redis.Cmder) error {
			if fetchesAlone(cs) {
				once.Do(func() { close(began) })
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return next(ctx, cs)
		}
	}
}

// A member's first failure on a host it just met goes to the store at
// once, even while the fetch of that host's holds is still in flight (a
// store slow to answer it, say): it does not wait behind the fetch, so
// that the member learns the fleet's bucket is spent before its own
// retry asks.
func TestFailureDoesNotWaitBehindAFetch(t *testing.T) {
	store := miniStore(t)
	store.HSet("aside:budget:api.test", "level", "0") // the fleet's bucket: spent
	c := redis.NewClient(&redis.Options{Addr: store.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return (&net.Dialer{Timeout: time.Second}).DialContext(ctx, network, addr)
		}})
	began, release := make(chan struct{}), make(chan struct{})
	c.AddHook(fetchStall(began, release))
	f := redisfleet.New(c, redisfleet.Options{Prefix: "aside:", FlushInterval: 10 * time.Millisecond, Timeout: time.Hour})
	t.Cleanup(func() {
		close(release)
		require.NoError(t, f.Close())
		_ = c.Close()
	})
	waitFor(t, "the warm-up", func() bool { return f.Stats().Flushes > 0 })

	require.False(t, f.Look("api.test", "methodConfig[0]").Spent, "met: its holds are fetched")
	select {
	case <-began:
	case <-time.After(eventually):
		t.Fatal("the fetch of the host met never went")
	}
	f.Report("api.test", failure)
	waitFor(t, "the failure's answer, with the fetch still in flight", func() bool {
		return f.Look("api.test", "methodConfig[0]").Spent
	})
}

// fetchFailure fails the first round trip of fetches alone, and counts
// the pipelines that load the scripts (two or more to a warm-up) and
// the round trips of fetches that went through.
type fetchFailure struct {
	fetches, passed, loads atomic.Int32
}

func (h *fetchFailure) hook() pipelineHook {
	return func(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
		return func(ctx context.Context, cs []redis.Cmder) error {
			switch {
			case len(cs) > 0 && cs[0].Name() == "script":
				h.loads.Add(1)
			case !fetchesAlone(cs):
			case h.fetches.Add(1) == 1:
				err := errors.New("i/o timeout")
				for _, c := range cs {
					c.SetErr(err)
				}
				return err
			default:
				h.passed.Add(1)
			}
			return next(ctx, cs)
		}
	}
}

// A round trip of fetches that the store did not take is followed by a
// warm-up, as one of the flusher's own is: a server may have gone, and
// on a Cluster the warm-up reads the slot map anew.
func TestFailedFetchesWarmUpAgain(t *testing.T) {
	store := miniStore(t)
	c := redis.NewClient(&redis.Options{Addr: store.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	h := &fetchFailure{}
	c.AddHook(h.hook())
	f := redisfleet.New(c, redisfleet.Options{Prefix: "warm:", FlushInterval: 10 * time.Millisecond})
	t.Cleanup(func() {
		require.NoError(t, f.Close())
		_ = c.Close()
	})
	waitFor(t, "the warm-up", func() bool { return f.Stats().Flushes > 0 })
	warmUp := h.loads.Load()
	require.GreaterOrEqual(t, warmUp, int32(2), "got the warm-up's pipelines")
	f.Look("api.test", "r") // met: its holds are fetched, and the fetch fails
	waitFor(t, "the fetch tried again and answered", func() bool { return h.passed.Load() > 0 })
	// The fetch tried again goes beside the warm-up, which may reach
	// the store after it.
	waitFor(t, "a warm-up after the failed fetch", func() bool { return h.loads.Load() > warmUp })
}

// A failure reported while a round trip of fetches is in flight goes on
// a connection the warm-up opened: it dials none, with the handshakes
// that takes, in the middle of the outage it reports.
func TestFailureDuringFetchesDialsNothing(t *testing.T) {
	s := startRedis(t)
	p := startProxy(t, s.addr, 200*time.Millisecond) // each round trip in flight that long
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	began, released := make(chan struct{}), make(chan struct{})
	close(released)
	c.AddHook(fetchStall(began, released))
	f := redisfleet.New(c, redisfleet.Options{Prefix: "dial:", FlushInterval: 10 * time.Millisecond})
	t.Cleanup(func() {
		require.NoError(t, f.Close())
		_ = c.Close()
	})
	subscribed(t, f)
	waitFor(t, "the warm-up", func() bool { return f.Stats().Flushes > 0 })
	warm := p.Accepted()

	f.Look(host, "methodConfig[0]") // met: its holds are fetched
	select {
	case <-began:
	case <-time.After(eventually):
		t.Fatal("the fetch of the host met never went")
	}
	before := f.Stats().Flushes
	f.Report(host, failure)
	waitFor(t, "the fetch's and the failure's round trips", func() bool { return f.Stats().Flushes >= before+2 })
	require.Equal(t, warm, p.Accepted(), "got %d connections, want the %d the warm-up and the listener opened", p.Accepted(), warm)
}
