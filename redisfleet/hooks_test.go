package redisfleet_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/redisfleet"
)

// countingHook counts the commands and pipelines a client sends.
type countingHook struct{ n *atomic.Int64 }

func (h countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error { h.n.Add(1); return next(ctx, c) }
}

func (h countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cs []redis.Cmder) error { h.n.Add(1); return next(ctx, cs) }
}

// Over a client with ContextTimeoutEnabled, the client's own hooks
// (tracing, metrics) see the Fleet's commands: the Fleet uses the client
// as it is given.
func TestClientHooksSeeTheFleet(t *testing.T) {
	store := miniStore(t)
	c := redis.NewClient(&redis.Options{Addr: store.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return (&net.Dialer{Timeout: time.Second}).DialContext(ctx, network, addr)
		}})
	var n atomic.Int64
	c.AddHook(countingHook{&n})
	f := redisfleet.New(c, redisfleet.Options{Prefix: "hooks:"})
	t.Cleanup(func() {
		require.NoError(t, f.Close())
		_ = c.Close()
	})
	f.Report("api.test", failure)
	waitFor(t, "the client's hook to see the Fleet's round trips", func() bool { return n.Load() > 0 })
}
