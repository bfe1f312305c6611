package redisfleet_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/redisfleet"
)

// fetchStall holds every round trip made of fetches alone (HGETALLs)
// until released, or until its context ends, and says when one began.
type fetchStall struct {
	began   chan struct{}
	release chan struct{}
	once    sync.Once
}

func (h *fetchStall) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *fetchStall) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *fetchStall) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cs []redis.Cmder) error {
		for _, c := range cs {
			if c.Name() != "hgetall" {
				return next(ctx, cs)
			}
		}
		h.once.Do(func() { close(h.began) })
		select {
		case <-h.release:
		case <-ctx.Done():
		}
		return next(ctx, cs)
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
	stall := &fetchStall{began: make(chan struct{}), release: make(chan struct{})}
	c.AddHook(stall)
	f := redisfleet.New(c, redisfleet.Options{Prefix: "aside:", FlushInterval: 10 * time.Millisecond, Timeout: time.Hour})
	t.Cleanup(func() {
		close(stall.release)
		require.NoError(t, f.Close())
		_ = c.Close()
	})
	waitFor(t, "the warm-up", func() bool { return f.Stats().Flushes > 0 })

	require.False(t, f.Look("api.test", "methodConfig[0]").Spent, "met: its holds are fetched")
	select {
	case <-stall.began:
	case <-time.After(eventually):
		t.Fatal("the fetch of the host met never went")
	}
	f.Report("api.test", failure)
	waitFor(t, "the failure's answer, with the fetch still in flight", func() bool {
		return f.Look("api.test", "methodConfig[0]").Spent
	})
}
