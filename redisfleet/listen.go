package redisfleet

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// pingEvery is how long the listener waits for a message before it pings
// its connection, and then for any answer before it takes the connection
// for dead and subscribes anew on another.
const pingEvery = 5 * time.Second

// recheckEvery is how long the listener over a Ring waits for a message
// at a time before it checks that its subscription is still where the
// members publish: the Ring may have mapped the channel to another
// shard. Over another client, where nothing can move it, the listener
// waits pingEvery.
const recheckEvery = time.Second

// listener keeps the member subscribed to the holds channel until Close,
// subscribing anew whenever its connection dies or the channel moves.
func (f *Fleet) listener() {
	defer f.done.Done()
	fails := 0
	for !f.closed.Load() {
		// Subscribing dials, and waits on a frozen store as long as the
		// client's timeouts let it: the context bounds it by Timeout
		// where go-redis honours it.
		ctx, cancel := context.WithTimeout(f.ctx, f.opts.Timeout)
		ps, route, err := f.subscribe(ctx)
		cancel()
		if err != nil { // a Ring with every shard down
			fails++
			if !f.pause(backoff(fails, f.opts.FlushInterval, rand.Float64())) {
				return
			}
			continue
		}
		fails = 0
		f.pubsub.Store(ps)
		if f.closed.Load() { // Close may have missed ps: see Close
			_ = ps.Close()
			return
		}
		f.listen(ps, route)
		_ = ps.Close()
	}
}

// listen applies the messages ps receives until Close, or until the
// subscription must be made anew: its connection answers no ping, or the
// channel moved from route. go-redis reconnects ps by itself after an
// error and subscribes again, on the server that carries the channel
// then (after a reload of a Cluster's slot map, which listen asks for);
// each subscription is followed by a fetch of every tracked host's holds,
// for those set while the member was not listening.
func (f *Fleet) listen(ps *redis.PubSub, route *redis.Client) {
	wait := pingEvery
	if route != nil {
		wait = recheckEvery
	}
	var quiet time.Duration // since the last message
	pinged, fails := false, 0
	for {
		// A receive may reconnect first: the context bounds the dial by
		// Timeout, the wait for a message by wait.
		ctx, cancel := context.WithTimeout(f.ctx, saturatingAdd(wait, f.opts.Timeout))
		msg, err := ps.ReceiveTimeout(ctx, wait)
		if f.closed.Load() {
			cancel()
			return
		}
		switch {
		case err == nil:
			quiet, pinged, fails = 0, false, 0
			f.receive(msg)
		case isTimeout(err): // no message, on a live connection
			quiet += wait
			switch {
			case f.moved(route), pinged && quiet >= 2*pingEvery:
				cancel()
				return
			case !pinged && quiet >= pingEvery:
				_ = ps.Ping(ctx)
				pinged = true
			}
		default: // the store down, refusing, or gone elsewhere: go-redis redials on the next receive
			fails++
			if f.moved(route) || !f.pause(backoff(fails, f.opts.FlushInterval, rand.Float64())) {
				cancel()
				return
			}
			// Just before the redial, so that it goes where the
			// channel's slot is served now.
			f.reload(ctx)
			if isReply(err) {
				// The store refused a command of the subscription's
				// (BUSY with a script, NOAUTH...): go-redis takes the
				// error reply for an answer on a live connection, and
				// neither redials nor subscribes again, so the member
				// would stay deaf to holds. Subscribing again, on the
				// same connection, is harmless if the refused command
				// was a ping: the store confirms once more, and the
				// holds are fetched again.
				_ = ps.Subscribe(ctx, f.channel)
			}
		}
		cancel()
	}
}

// receive applies one message of the subscription.
func (f *Fleet) receive(msg any) {
	switch m := msg.(type) {
	case *redis.Subscription:
		if m.Kind == "subscribe" {
			f.stats.subscribed.Add(1)
			f.refetch()
		}
	case *redis.Message:
		end, status, name, rule, ok := parseHoldMessage(m.Payload)
		if !ok {
			return
		}
		// Only hosts the member has met: the others' holds would cost
		// memory for hosts it may never send to, and a fetch brings
		// them when it does.
		if h := f.tracked(name); h != nil && f.setHold(h, rule, end, status, true, time.Now().UnixMilli()) {
			f.stats.learned.Add(1)
		}
	}
}

// refetch marks every tracked host's holds to be fetched, and wakes the
// flusher to fetch them at once.
func (f *Fleet) refetch() {
	f.hosts.Each(func(_ string, h *host) { h.fetch.Store(true) })
	signal(f.urgent)
}

// pause waits d, and reports false if Close came first.
func (f *Fleet) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.stop:
		return false
	case <-t.C:
		return true
	}
}

// saturatingAdd returns a+b for a and b of zero or more, or the longest
// Duration when the sum would overflow: a Timeout near the longest
// would otherwise wrap to a negative bound, which expires at once, and
// the listener would never read a message.
func saturatingAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// isTimeout reports whether err is a receive that found no message in
// time on a live connection, not a broken connection nor a dial that
// outlasted the context (whose error also says "timeout").
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() && !errors.Is(err, context.DeadlineExceeded)
}
