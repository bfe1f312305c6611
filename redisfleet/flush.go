package redisfleet

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// flusher sends the members' reports to the store, one pipelined round
// trip at a time, as the schedule allows, until Close.
func (f *Fleet) flusher() {
	defer f.done.Done()
	s := schedule{interval: f.opts.FlushInterval}
	s.work(time.Now(), true) // the warm-up, at once
	var b batch
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var due <-chan time.Time
		if !s.due.IsZero() {
			timer.Reset(time.Until(s.due))
			due = timer.C
		}
		select {
		case <-f.stop:
			return
		case <-f.urgent:
			s.work(time.Now(), true)
		case <-f.wake:
			s.work(time.Now(), false)
		case <-due:
			warm := b.warm
			s.start(time.Now())
			ok := f.flush(&b)
			what := carriedUrgent
			switch {
			case !warm && b.warm:
				what = carriedWarmUp
			case !b.urgent():
				what = carriedFetches
			}
			s.end(ok, what, rand.Float64())
		}
	}
}

// batch is one round trip's work. The flusher keeps one and reuses its
// slices, so that steady flushing does not grow garbage of its own.
type batch struct {
	warm  bool // the scripts were loaded through the pipeline once
	hosts []*host
	holds []hold
	items []item
}

// urgent reports whether b's round trip carried urgent work: a delta or a
// hold.
func (b *batch) urgent() bool {
	for _, it := range b.items {
		if it.kind != fetchItem {
			return true
		}
	}
	return false
}

// item is one command of a round trip, with what its answer applies to.
type item struct {
	h        *host
	kind     itemKind
	delta    int64 // budget: milli-tokens sent
	capacity int64 // budget: the capacity sent with them
	hold     hold  // hold: the hold sent
	cmd      redis.Cmder
	noScript bool // the store did not have the script: send it whole
}

// itemKind is what an item carries.
type itemKind uint8

const (
	budgetItem itemKind = iota // a batched delta, by budgetLua
	holdItem                   // a hold, by holdLua, and its message
	fetchItem                  // a read of a host's holds
)

// flush makes one round trip with all the work waiting, and reports
// whether the store took all of it. Work the store did not take is put
// back to be sent again: deltas (within their bound), holds, fetches.
//
// The first round trip loads the scripts through the pipeline, which
// also opens the connection the later ones reuse: a member whose first
// flush comes during an outage of the HTTP server finds it open.
func (f *Fleet) flush(b *batch) bool {
	f.collect(b)
	if b.warm && len(b.items) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(f.ctx, f.opts.Timeout)
	defer cancel()
	pipe := f.client.Pipeline()
	var loads [2]*redis.StringCmd
	if !b.warm {
		loads[0] = pipe.ScriptLoad(ctx, budgetLua)
		loads[1] = pipe.ScriptLoad(ctx, holdLua)
	}
	for i := range b.items {
		f.queue(ctx, pipe, &b.items[i], false)
	}
	if !f.exec(ctx, pipe) {
		f.settle(b.items, false)
		return false
	}
	b.warm = b.warm || (loads[0].Err() == nil && loads[1].Err() == nil)
	ok := f.settle(b.items, true) && b.warm
	if retry := b.noScript(); len(retry) > 0 {
		// The store lost its scripts (a restart, SCRIPT FLUSH, another
		// node of a cluster): EVAL sends them whole, and caches them
		// for the next EVALSHA.
		pipe = f.client.Pipeline()
		for i := range retry {
			f.queue(ctx, pipe, &retry[i], true)
		}
		ok = f.exec(ctx, pipe) && ok
		ok = f.settle(retry, true) && ok
	}
	return ok
}

// collect gathers the work waiting on every host into b.items.
func (f *Fleet) collect(b *batch) {
	f.mu.RLock()
	for _, h := range f.hosts {
		b.hosts = append(b.hosts, h)
	}
	f.mu.RUnlock()
	now := time.Now().UnixMilli()
	b.items = b.items[:0]
	for _, h := range b.hosts {
		if d := h.pending.Swap(0); d != 0 {
			capacity, _ := unpack(h.limits.Load())
			b.items = append(b.items, item{h: h, kind: budgetItem, delta: d, capacity: capacity})
		}
		b.holds = h.unsent(b.holds[:0], now)
		for _, k := range b.holds {
			b.items = append(b.items, item{h: h, kind: holdItem, hold: k})
		}
		if h.fetch.Swap(false) {
			b.items = append(b.items, item{h: h, kind: fetchItem})
		}
	}
	clear(b.hosts) // let forgotten hosts go
	b.hosts = b.hosts[:0]
}

// queue adds the command of it to pipe: by EVALSHA, or by EVAL when whole.
// A hold also publishes its message, on a command routed by the channel
// name, so that a Ring sends it to the shard its subscribers listen on.
func (f *Fleet) queue(ctx context.Context, pipe redis.Pipeliner, it *item, whole bool) {
	switch it.kind {
	case budgetItem:
		it.cmd = evalScript(ctx, pipe, budgetScript, whole, it.h.budgetKey,
			it.delta, it.capacity, f.opts.Expiry.Milliseconds())
	case holdItem:
		k := it.hold
		ttl := max(k.end-time.Now().UnixMilli(), 1)
		it.cmd = evalScript(ctx, pipe, holdScript, whole, it.h.holdKey, k.rule, k.end, k.status, ttl)
		if !whole { // the message went with the first try
			pub := redis.NewIntCmd(ctx, "publish", f.channel, holdMessage(k.end, k.status, it.h.name, k.rule))
			pub.SetFirstKeyPos(1)
			_ = pipe.Process(ctx, pub)
		}
	case fetchItem:
		it.cmd = pipe.HGetAll(ctx, it.h.holdKey)
	}
}

// evalScript queues script on key with args, by its digest or whole.
func evalScript(ctx context.Context, pipe redis.Pipeliner, s script, whole bool, key string, args ...any) *redis.Cmd {
	if whole {
		return pipe.Eval(ctx, s.src, []string{key}, args...)
	}
	return pipe.EvalSha(ctx, s.sha, []string{key}, args...)
}

// exec sends pipe and reports whether the store answered (each command
// may still carry an error of its own); it records the round trip.
func (f *Fleet) exec(ctx context.Context, pipe redis.Pipeliner) bool {
	start := time.Now()
	_, err := pipe.Exec(ctx)
	if err != nil && !isReply(err) {
		f.stats.flushErrors.Add(1)
		return false
	}
	f.stats.roundTrip(time.Since(start))
	return true
}

// isReply reports whether err is the store's own answer (such as
// NOSCRIPT or OOM), as opposed to no answer at all.
func isReply(err error) bool {
	var e redis.Error
	return errors.As(err, &e)
}

// errNoAnswer stands for the error of a command in a round trip the
// store did not answer.
var errNoAnswer = errors.New("redisfleet: no answer from the store")

// settle applies the answers to items, or puts their work back when
// there was no answer (answered false) or the command failed. A command
// that failed for want of its script is left for noScript. It reports
// whether every command succeeded.
func (f *Fleet) settle(items []item, answered bool) bool {
	ok := true
	for i := range items {
		it := &items[i]
		err := errNoAnswer
		if answered {
			err = it.cmd.Err()
		}
		it.noScript = answered && it.kind != fetchItem && redis.HasErrorPrefix(err, "NOSCRIPT")
		if it.noScript {
			continue
		}
		if err != nil {
			ok = false
			f.restore(it)
			continue
		}
		f.apply(it)
	}
	return ok
}

// noScript returns copies of the items whose command met NOSCRIPT,
// appended to b.items.
func (b *batch) noScript() []item {
	n := len(b.items)
	for _, it := range b.items[:n] {
		if it.noScript {
			b.items = append(b.items, item{h: it.h, kind: it.kind, delta: it.delta, capacity: it.capacity, hold: it.hold})
		}
	}
	return b.items[n:]
}

// apply takes the store's answer to it.
func (f *Fleet) apply(it *item) {
	switch it.kind {
	case budgetItem:
		level, err := it.cmd.(*redis.Cmd).Int64()
		if err == nil {
			it.h.setReading(f.sinceEpoch(time.Now()), 2*level <= it.capacity)
		}
	case holdItem:
		it.h.markSent(it.hold.rule, it.hold.end)
	case fetchItem:
		now := time.Now().UnixMilli()
		for rule, v := range it.cmd.(*redis.MapStringStringCmd).Val() {
			if end, status, ok := parseHoldValue(v); ok && it.h.setHold(rule, end, status, true, now) {
				f.stats.learned.Add(1)
			}
		}
	}
}

// restore puts back the work of an item the store did not take. A delta
// may have been applied all the same (an answer lost on its way back),
// so it may count twice; a store that is down, the common case, applied
// nothing.
func (f *Fleet) restore(it *item) {
	switch it.kind {
	case budgetItem:
		f.count(it.h.add(it.delta, it.capacity))
	case holdItem:
		// Still unsent in the host's list: the next round trip has it.
	case fetchItem:
		it.h.fetch.Store(true)
	}
}
