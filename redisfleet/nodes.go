package redisfleet

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The store may be one server or several, and which server serves a
// key, or the holds channel, may change: a Cluster's replica promoted
// when its primary dies, a Ring's shard taken out when it stops
// answering and put back when it answers again. go-redis follows most of
// it by itself, but only when asked (a Cluster's slot map is otherwise
// read again once a minute) and not always (a subscription stays where
// it was made). What follows asks.

// warmUp loads the scripts into every server that serves keys: each
// primary of a Cluster, each live shard of a Ring, the one server
// otherwise. It does so through each server's own pipelines, whose
// connections are the ones the flushes' pipelines take (a connection
// opened by a plain command is not one they reuse): a member's first
// flush, often during an outage of the HTTP server, finds the scripts
// and open connections on whichever server holds the host's keys. On
// a Cluster it reads the slot map anew first (ForEachMaster does), so
// that a warm-up after failed round trips finds a promoted replica. It
// returns the worst answer.
func (f *Fleet) warmUp() answer {
	ctx, cancel := context.WithTimeout(f.ctx, f.opts.Timeout)
	defer cancel()
	switch c := f.client.(type) {
	case *redis.ClusterClient:
		return eachServer(ctx, c.ForEachMaster)
	case *redis.Ring:
		if c.Len() == 0 { // every shard down: none to warm
			return unanswered
		}
		return eachServer(ctx, c.ForEachShard)
	}
	return loadScripts(ctx, f.client)
}

// eachServer loads the scripts into every server forEach calls its
// function with, at once, and returns the worst answer.
func eachServer(ctx context.Context, forEach func(context.Context, func(context.Context, *redis.Client) error) error) answer {
	var mu sync.Mutex // guards worst: forEach calls its function concurrently
	worst := answered
	err := forEach(ctx, func(ctx context.Context, c *redis.Client) error {
		a := loadScripts(ctx, c)
		mu.Lock()
		defer mu.Unlock()
		worst = max(worst, a)
		return nil
	})
	if err != nil { // no server told which servers there are
		worst = max(worst, unanswered)
		if isReply(err) {
			worst = max(worst, refused)
		}
	}
	return worst
}

// loadScripts loads both scripts into the server c talks to, by two
// pipelines at once, and returns the better answer: the scripts are
// loaded when either went through. The two leave two connections open
// to the server: one for the flusher's round trips, one for a round trip
// of fetches aside (see Fleet.fetchAside), so that a failure reported
// while the fetches are in flight finds a connection open rather than
// dialing one, with the handshakes that takes, in the middle of the
// outage it reports (a thousand members dialing at once slowed the
// store's answers past their retries' backoffs). From an empty pool, as
// at the start, both dial, and so overlap. A pool that holds one
// connection already (a warm-up after failed round trips) may see the
// two run one after the other on it, when one's goroutine starts late:
// the pool is then checked, and the pair tried again, pairTries times in
// all at most. (Opening the second connection only once a first load
// had been answered, so that a warm-up against a store that is down
// dialed once rather than twice, left a third to half of a thousand
// members starting at once with one connection: on two busy cores the
// second of each pair asked for its connection after the first had
// given it back, every try.)
func loadScripts(ctx context.Context, c redis.Cmdable) answer {
	a := loadPair(ctx, c)
	for try := 1; try < pairTries && a == answered; try++ {
		if n := pipelineConns(c); n < 0 || n >= 2 {
			break
		}
		loadPair(ctx, c)
	}
	return a
}

// pairTries bounds the pairs of pipelines loadScripts runs.
const pairTries = 3

// loadPair loads both scripts into the server c talks to by two
// pipelines at once, and returns the better answer.
func loadPair(ctx context.Context, c redis.Cmdable) answer {
	other := make(chan answer, 1)
	go func() { other <- loadScriptsOnce(ctx, c) }()
	return min(loadScriptsOnce(ctx, c), <-other)
}

// pipelineConns returns the connections in the pool c's pipelines take
// theirs from, or -1 when c does not tell.
func pipelineConns(c redis.Cmdable) int {
	p, ok := c.(interface{ PoolStats() *redis.PoolStats })
	if !ok {
		return -1
	}
	st := p.PoolStats()
	if st.PipelineStats != nil { // go-redis's pool of pipelines apart
		return int(st.PipelineStats.TotalConns)
	}
	return int(st.TotalConns)
}

// loadScriptsOnce loads both scripts into the server c talks to, in one
// pipeline, and returns the worst answer.
func loadScriptsOnce(ctx context.Context, c redis.Cmdable) answer {
	pipe := c.Pipeline()
	cmds := [...]*redis.StringCmd{pipe.ScriptLoad(ctx, budgetLua), pipe.ScriptLoad(ctx, holdLua)}
	_, err := pipe.Exec(ctx)
	worst := answered
	for _, cmd := range cmds {
		worst = max(worst, answerOf(cmd, err))
	}
	return worst
}

// subscribe subscribes to the holds channel on the server that carries
// it. On a Ring that is the shard the channel's name maps to now, whose
// client it returns as route, so that the listener can tell when the
// Ring maps it elsewhere (a shard taken out or put back), where the
// members publish from then on; Ring.Subscribe would also panic with
// every shard down, where GetShardClientForKey returns an error. On a
// Cluster, a PUBLISH reaches every node, and go-redis subscribes on the
// primary of the channel's slot.
func (f *Fleet) subscribe(ctx context.Context) (ps *redis.PubSub, route *redis.Client, err error) {
	if r, ok := f.client.(*redis.Ring); ok {
		route, err = r.GetShardClientForKey(f.channel)
		if err != nil {
			return nil, nil, err
		}
		return route.Subscribe(ctx, f.channel), route, nil
	}
	return f.client.Subscribe(ctx, f.channel), nil, nil
}

// moved reports whether the subscription made on route is no longer
// where the members publish: a Ring maps the channel to another shard
// now, or to none.
func (f *Fleet) moved(route *redis.Client) bool {
	r, ok := f.client.(*redis.Ring)
	if !ok {
		return false
	}
	now, err := r.GetShardClientForKey(f.channel)
	return err != nil || now != route
}

// reload has a Cluster client read its slot map anew, and returns once
// it has, or failed to within slotRecheck: the listener's subscription
// failed, its primary may have died and a replica taken over, which
// go-redis would otherwise learn within a minute. ForEachMaster reads
// the map before it calls its function, where ReloadState would read it
// in the background, perhaps after the listener subscribes again.
//
// go-redis asks the nodes it knows in a random order, and a node that
// died costs its dial retries (five, 100 ms apart, by default), each
// time: the short deadline makes such a reload fail soon, and the next
// one, drawing another order, likely asks a live node first.
func (f *Fleet) reload(ctx context.Context) {
	c, ok := f.client.(*redis.ClusterClient)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, slotRecheck)
	defer cancel()
	_ = c.ForEachMaster(ctx, func(context.Context, *redis.Client) error { return nil })
}

// watchSlots has a Cluster client read its slot map anew every
// slotRecheck until the returned function is called, which waits for
// it. A round trip after a failed one runs under it: go-redis retries
// a pipeline's commands within the round trip (MaxRedirects times) on
// the node the slot map names when they fail, so that with the map kept
// fresh, a round trip that began before a replica's promotion ends on
// the promoted replica rather than failing until its deadline.
func (f *Fleet) watchSlots(ctx context.Context) (stop func()) {
	if _, ok := f.client.(*redis.ClusterClient); !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(slotRecheck)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f.reload(ctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// slotRecheck is how often a round trip after a failed one has a
// Cluster's slot map read anew.
const slotRecheck = 200 * time.Millisecond
