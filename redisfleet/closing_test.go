package redisfleet_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowHook holds every pipeline of a client until its context's deadline
// once hold is set, as a command does whose reply is late and which ends
// by its own timeout; it counts the calls that run once closed is set,
// after the Fleet's Close returned.
type slowHook struct {
	hold, closed *atomic.Bool
	held, late   *atomic.Int64
}

func (h slowHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		h.check()
		return next(ctx, network, addr)
	}
}

func (h slowHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.check()
		defer h.check()
		return next(ctx, cmd)
	}
}

func (h slowHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.check()
		defer h.check()
		if deadline, ok := ctx.Deadline(); ok && h.hold.Load() {
			h.held.Add(1)
			t := time.NewTimer(time.Until(deadline))
			<-t.C
		}
		return next(ctx, cmds)
	}
}

// check counts a call made after Close returned.
func (h slowHook) check() {
	if h.closed.Load() {
		h.late.Add(1)
	}
}

// TestRealCloseLeavesTheClientAlone closes busy members over a Ring of
// two shards while their round trips are in flight, each then its
// client, as the README says: Close returns only once nothing of the
// Fleet can touch the client, which the user may close at once (a Ring
// used after Close panics inside go-redis). The round trips in flight
// end by their own deadline, Options.Timeout, so Close is still prompt.
func TestRealCloseLeavesTheClientAlone(t *testing.T) {
	shards := startRing(t, 2)
	const n = 10
	const timeout = 300 * time.Millisecond
	var hold atomic.Bool
	var held, late atomic.Int64
	type closing struct {
		ring   *redis.Ring
		fleet  *redisfleet.Fleet
		closed *atomic.Bool
	}
	members := make([]closing, n)
	for i := range members {
		m := &members[i]
		m.ring = ringClient(t, shards, nil)
		m.closed = new(atomic.Bool)
		m.ring.AddHook(slowHook{hold: &hold, closed: m.closed, held: &held, late: &late})
		m.fleet = redisfleet.New(m.ring, redisfleet.Options{Timeout: timeout})
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Go(func() {
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				m.fleet.Report(fmt.Sprintf("h%d.example.com", j%5), failure)
				runtime.Gosched()
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	for _, m := range members {
		waitFor(t, "the members' round trips", func() bool { return m.fleet.Stats().Flushes > 1 })
	}
	hold.Store(true)
	waitFor(t, "round trips in flight", func() bool { return held.Load() >= n })

	start := time.Now()
	for _, m := range members {
		require.NoError(t, m.fleet.Close())
		m.closed.Store(true)
		require.NoError(t, m.ring.Close())
	}
	took := time.Since(start)
	assert.Zero(t, late.Load(), "got %d calls on the clients after Close returned", late.Load())
	assert.Less(t, took, time.Duration(n)*(timeout+eventually/10), "got %v to close %d members whose round trips end within %v", took, n, timeout)
}
