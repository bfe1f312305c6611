package redisfleet

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/internal/tokens"
)

// flusher sends the members' reports to the store, one round trip at a
// time, as the schedule allows, until Close.
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
			s.start(time.Now())
			ok, what := f.flush(&b)
			s.end(ok, what, rand.Float64())
		case ok := <-f.fetched:
			if !ok {
				// As after a round trip of the flusher's own whose work
				// the store did not all take: a server may have gone,
				// and another taken its place (on a Cluster, the warm-up
				// reads the slot map anew).
				b.warm, b.warmAfter, b.failing = false, time.Time{}, true
			}
			s.aside(ok, time.Now(), rand.Float64())
		}
	}
}

// batch is one round trip's work. The flusher keeps one and reuses its
// slices, so that steady flushing does not grow garbage of its own.
type batch struct {
	warm bool // every server took the scripts, through the flushes' pipelines
	// lostScripts says a server answered NOSCRIPT in the last round
	// trip: it lost the scripts, and is to be warmed up again.
	lostScripts bool
	failing     bool      // the last round trip's items were not all taken
	warmAfter   time.Time // no warm-up before it: the last one failed, the rest answered
	seq         uint64    // numbers the round trips, and so the budget batches they start
	hosts       []*host
	holds       []hold
	items       []item
	// unanswered are the hosts whose batch the last round trip did not
	// deliver: those forgotten since lost it.
	unanswered []*host
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

// item is one piece of a round trip's work, with its commands and what
// became of them.
type item struct {
	h         *host
	kind      itemKind
	seq       uint64 // budget: the batch's number
	delta     int64  // budget: milli-tokens sent
	capacity  int64  // budget: the capacity sent with them
	hold      hold   // hold: the hold sent
	cmd       redis.Cmder
	pub       *redis.Cmd // hold: its message, nil once the store took it
	published bool       // hold: the store took the message
	answer    answer
}

// itemKind is what an item carries.
type itemKind uint8

const (
	budgetItem itemKind = iota // a batch of deltas, by budgetLua
	holdItem                   // a hold, by holdLua, and its message
	fetchItem                  // a read of a host's holds
)

// flush makes one round trip with all the work waiting, and a warm-up
// when one is due, and reports whether the store took all of the work,
// and what the round trip carried. Each command is settled by its own
// answer: what the store took is applied, the rest waits for the next
// round trip (a budget batch as it was, which the script applies once
// however often it comes). The warm-up is due at the start, and after a
// round trip whose work the store did not all take; on a Cluster it
// reads the slot map anew, which finds a promoted replica.
func (f *Fleet) flush(b *batch) (ok bool, what carried) {
	b.seq++
	f.collect(b, !f.fetching.Load())
	start := time.Now()
	warming := !b.warm && !start.Before(b.warmAfter)
	if !warming && len(b.items) == 0 {
		return true, carriedNothing
	}
	if !warming && !b.urgent() {
		f.fetchAside(b)
		return true, carriedNothing
	}
	var t tally
	warm := answered
	switch {
	case warming && len(b.items) > 0:
		// After failed round trips: the items need not wait for the
		// warm-up, which waits out its deadline on a server that died.
		c := make(chan answer, 1)
		go func() { c <- f.warmUp() }()
		f.send(b, &t)
		warm = <-c
	case warming:
		// A warm-up alone (at the start, or again while the store
		// fails) has no work to overlap: it runs on the flusher, with
		// no empty pipeline and no slot watcher for one.
		warm = f.warmUp()
	default:
		f.send(b, &t)
	}
	if warming {
		t.add(warm)
	}
	warmed := warm == answered
	taken := t.itemsMissed == 0
	b.failing = !taken
	switch {
	case !taken:
		// Warm up again with the next round trip: a server may have
		// gone, and another taken its place.
		b.warm, b.warmAfter = false, time.Time{}
	case warming && warmed:
		b.warm = true
	case warming && len(b.items) > 0:
		// The work went through, a server did not: warm up again
		// later, not with every round trip. (A warm-up alone that
		// failed is tried again after the schedule's backoff.)
		b.warmAfter = time.Now().Add(maxStoreBackoff)
	}
	if b.lostScripts {
		// After any warm-up that ran beside this round trip, which may
		// have read a slot map from before a promotion: the next round
		// trip warms up again, and comes even with no work.
		b.lostScripts = false
		b.warm, b.warmAfter = false, time.Time{}
		signal(f.urgent)
	}
	f.record(t, time.Since(start))
	switch {
	case len(b.items) == 0:
		return warmed, carriedWarmUp
	case !b.urgent():
		return taken, carriedFetches
	}
	return taken, carriedUrgent
}

// send makes the round trip of b's items, and settles each by its
// answer. After a failed round trip, a Cluster's slot map is kept fresh
// meanwhile (watchSlots).
func (f *Fleet) send(b *batch, t *tally) {
	ctx, cancel := context.WithTimeout(f.ctx, f.opts.Timeout)
	defer cancel()
	if b.failing {
		defer f.watchSlots(ctx)()
	}
	pipe := f.client.Pipeline()
	for i := range b.items {
		f.queue(ctx, pipe, &b.items[i], false)
	}
	_, err := pipe.Exec(ctx)
	f.settle(b.items, err)
	if retry := b.noScript(); len(retry) > 0 {
		// The store lost its scripts (a restart, SCRIPT FLUSH, a
		// replica promoted): EVAL sends them whole, and caches them for
		// the next EVALSHA. The next round trip warms up again: the
		// server that lost them has not had the other script loaded,
		// nor its connections opened, as a warm-up does (a replica
		// promoted was not a primary when the last one ran), even when
		// no work follows for a while (see flush).
		b.lostScripts = true
		pipe = f.client.Pipeline()
		for i := range retry {
			f.queue(ctx, pipe, &retry[i], true)
		}
		_, err = pipe.Exec(ctx)
		f.settle(retry, err)
	}
	for _, it := range b.items {
		if it.answer != noScript { // counted by its copy, sent whole
			t.add(it.answer)
			if it.answer != answered && it.answer != rejected {
				t.itemsMissed++
				if it.kind == budgetItem {
					b.unanswered = append(b.unanswered, it.h)
				}
			}
		}
	}
}

// fetchAside makes the round trip of b's items, fetches alone, on a
// goroutine of its own, and tells the flusher through f.fetched how it
// went: urgent work that comes meanwhile must not wait behind it, as a
// member's first failure on a host often comes just after the fetch of
// the host's holds went out (its first request took longer than
// FlushInterval: a slow answer, or a busy process). One such round trip
// is in flight at a time; the fetches of hosts met meanwhile wait for
// the next.
func (f *Fleet) fetchAside(b *batch) {
	aside := &batch{failing: b.failing, items: slices.Clone(b.items)}
	f.fetching.Store(true)
	f.done.Add(1)
	go func() {
		defer f.done.Done()
		var t tally
		start := time.Now()
		f.send(aside, &t)
		f.record(t, time.Since(start))
		// The flag is cleared once the flusher has the result, so that
		// no other round trip of fetches starts, and ends, before it.
		select {
		case f.fetched <- t.itemsMissed == 0:
		case <-f.stop:
		}
		f.fetching.Store(false)
	}()
}

// collect gathers the work waiting on every host into b.items: the
// budget batch the store has not answered, as it was, or else a new one
// of the deltas reported since; the holds to send; and, when fetches is
// set, the fetches. A batch the last round trip did not deliver, of a
// host forgotten since, goes no more: collect counts it in
// Stats.Dropped.
func (f *Fleet) collect(b *batch, fetches bool) {
	b.hosts = f.hosts.Append(b.hosts)
	now := time.Now().UnixMilli()
	b.items = b.items[:0]
	for _, h := range b.hosts {
		h.listed = b.seq
		if d := h.inflight.Load(); d != 0 {
			b.items = append(b.items, item{h: h, kind: budgetItem, seq: h.batchSeq, delta: d, capacity: h.batchCap})
		} else if d := h.pending.Swap(0); d != 0 {
			h.batchSeq = b.seq
			h.batchCap = tokens.Limits(h.limits.Load()).Capacity()
			h.inflight.Store(d)
			b.items = append(b.items, item{h: h, kind: budgetItem, seq: h.batchSeq, delta: d, capacity: h.batchCap})
		}
		b.holds = h.unsent(b.holds[:0], now)
		for _, k := range b.holds {
			b.items = append(b.items, item{h: h, kind: holdItem, hold: k})
		}
		if fetches && h.fetch.Swap(false) {
			b.items = append(b.items, item{h: h, kind: fetchItem})
		}
	}
	for _, h := range b.unanswered {
		if h.listed != b.seq { // forgotten: its batch goes no more
			f.stats.dropped.Add(1)
		}
	}
	clear(b.unanswered)
	b.unanswered = b.unanswered[:0]
	clear(b.hosts) // let forgotten hosts go
	b.hosts = b.hosts[:0]
}

// queue adds the commands of it to pipe: by EVALSHA, or by EVAL when
// whole. A hold also publishes its message, until the store takes it,
// on a command routed by the channel's name, so that a Ring sends it to
// the shard its subscribers listen on.
func (f *Fleet) queue(ctx context.Context, pipe redis.Pipeliner, it *item, whole bool) {
	switch it.kind {
	case budgetItem:
		it.cmd = evalScript(ctx, pipe, budgetScript, whole, it.h.budgetKey,
			f.member, it.seq, it.delta, it.capacity, f.opts.Expiry.Milliseconds(), time.Now().UnixMilli())
	case holdItem:
		k := it.hold
		end := k.Until.UnixMilli()
		ttl := max(end-time.Now().UnixMilli(), 1)
		it.cmd = evalScript(ctx, pipe, holdScript, whole, it.h.holdKey, k.Rule, end, k.Status, ttl)
		it.pub = nil
		if !it.published {
			it.pub = redis.NewCmd(ctx, "publish", f.channel, holdMessage(end, k.Status, it.h.name, k.Rule))
			it.pub.SetFirstKeyPos(1)
			_ = pipe.Process(ctx, it.pub)
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

// settle records what became of each item of a round trip whose Exec
// returned execErr, and applies the store's answers, or keeps the work
// of the items the store did not take for the next round trip. An item
// whose script the store lacked is left for noScript.
func (f *Fleet) settle(items []item, execErr error) {
	for i := range items {
		it := &items[i]
		it.answer = answerOf(it.cmd, execErr)
		if it.pub != nil {
			pub := answerOf(it.pub, execErr)
			it.published = pub == answered
			if it.answer != noScript {
				it.answer = max(it.answer, pub)
			}
		}
		switch it.answer {
		case answered:
			f.apply(it)
		case noScript:
		case rejected:
			f.drop(it)
		default:
			f.keep(it)
		}
	}
}

// noScript returns copies of the items whose script the store lacked,
// appended to b.items.
func (b *batch) noScript() []item {
	n := len(b.items)
	for _, it := range b.items[:n] {
		if it.answer == noScript {
			b.items = append(b.items, item{h: it.h, kind: it.kind, seq: it.seq, delta: it.delta,
				capacity: it.capacity, hold: it.hold, published: it.published})
		}
	}
	return b.items[n:]
}

// apply takes the store's answer to it.
func (f *Fleet) apply(it *item) {
	switch it.kind {
	case budgetItem:
		it.h.inflight.Store(0)
		if level, err := it.cmd.(*redis.Cmd).Int64(); err == nil {
			// At half the capacity or less: level <= capacity-level, which
			// a level from a broken store, near the longest int64, cannot
			// overflow as 2*level would (and read a full bucket as spent).
			it.h.setReading(f.sinceEpoch(time.Now()), level <= it.capacity-level)
		}
		if it.h.pending.Load() != 0 {
			// Deltas reported while the batch was in flight waited
			// behind it, their wake-up spent: the next round trip is due.
			signal(f.urgent)
		}
	case holdItem:
		it.h.markSent(it.hold.Rule, it.hold.Until.UnixMilli())
	case fetchItem:
		now := time.Now().UnixMilli()
		for rule, v := range it.cmd.(*redis.MapStringStringCmd).Val() {
			if end, status, ok := parseHoldValue(v); ok && f.setHold(it.h, rule, end, status, true, now) {
				f.stats.learned.Add(1)
			}
		}
	}
}

// drop gives up the work of an item the store rejected for good (see
// rejected), counting in Stats.Dropped a batch of deltas or a hold lost
// so; a fetch has nothing to lose.
func (f *Fleet) drop(it *item) {
	switch it.kind {
	case budgetItem:
		it.h.inflight.Store(0)
		f.stats.dropped.Add(1)
	case holdItem:
		it.h.markSent(it.hold.Rule, it.hold.Until.UnixMilli())
		f.stats.dropped.Add(1)
	}
}

// keep leaves the work of an item the store did not take for the next
// round trip. A budget batch stays in flight, to be sent again as it
// was: the store may have applied it, its answer lost, and the script
// applies it once whatever. A hold stays unsent in its host's list.
func (f *Fleet) keep(it *item) {
	if it.kind == fetchItem {
		it.h.fetch.Store(true)
	}
}

// record counts a round trip in the Fleet's figures: answered, and how
// long it took, when the store took every command; failed otherwise,
// and refused as well when the store answered some with an error.
func (f *Fleet) record(t tally, d time.Duration) {
	if t.missed() == 0 {
		f.stats.roundTrip(d)
		return
	}
	f.stats.flushErrors.Add(1)
	if t.refused > 0 {
		f.stats.refusals.Add(1)
	}
}

// tally counts what became of a round trip's commands.
type tally struct {
	answered, refused, unanswered int
	itemsMissed                   int // items, of the refused and unanswered: work that waits
}

// add counts one answer; a rejected command counts as refused, as the
// store answered it with an error.
func (t *tally) add(a answer) {
	switch a {
	case answered:
		t.answered++
	case refused, rejected:
		t.refused++
	default:
		t.unanswered++
	}
}

// missed returns the commands the store did not take.
func (t *tally) missed() int { return t.refused + t.unanswered }
