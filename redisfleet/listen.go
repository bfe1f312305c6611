package redisfleet

import (
	"errors"
	"math/rand/v2"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// pingEvery is how long the listener waits for a message before it pings
// its connection, and then for any answer before it takes the connection
// for dead and subscribes anew on another.
const pingEvery = 5 * time.Second

// listener keeps the member subscribed to the holds channel until Close,
// subscribing anew whenever its connection dies.
func (f *Fleet) listener() {
	defer f.done.Done()
	for {
		// Subscribe dials, and may wait on a frozen store as long as
		// the client's timeouts let it; Close does not wait that long.
		ps := f.client.Subscribe(f.ctx, f.channel)
		f.pubsub.Store(ps)
		if f.closed.Load() { // Close may have missed ps: see Close
			_ = ps.Close()
			return
		}
		f.listen(ps)
		_ = ps.Close()
		if f.closed.Load() {
			return
		}
	}
}

// listen applies the messages ps receives until Close, or until its
// connection stops answering pings. go-redis reconnects ps by itself
// after an error and subscribes again; each subscription is followed by
// a fetch of every tracked host's holds, for those set while the member
// was not listening.
func (f *Fleet) listen(ps *redis.PubSub) {
	pinged, fails := false, 0
	for {
		msg, err := ps.ReceiveTimeout(f.ctx, pingEvery)
		if f.closed.Load() {
			return
		}
		switch {
		case err == nil:
			pinged, fails = false, 0
			f.receive(msg)
		case isTimeout(err) && !pinged:
			_ = ps.Ping(f.ctx)
			pinged = true
		case isTimeout(err):
			return
		default: // the store down or refusing: go-redis redials on the next receive
			fails++
			if !f.pause(backoff(fails, f.opts.FlushInterval, rand.Float64())) {
				return
			}
		}
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
		if h := f.tracked(name); h != nil && h.setHold(rule, end, status, true, time.Now().UnixMilli()) {
			f.stats.learned.Add(1)
		}
	}
}

// refetch marks every tracked host's holds to be fetched, and wakes the
// flusher to fetch them at once.
func (f *Fleet) refetch() {
	f.mu.RLock()
	for _, h := range f.hosts {
		h.fetch.Store(true)
	}
	f.mu.RUnlock()
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

// isTimeout reports whether err is a network timeout: a receive that
// found no message in time, not a broken connection.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
