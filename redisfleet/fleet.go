package redisfleet

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/internal/hostmap"
	"github.com/retryhttp/retryhttp/internal/tokens"
)

// Defaults of [Options].
const (
	DefaultPrefix        = "retryhttp:"
	DefaultFlushInterval = 100 * time.Millisecond
	DefaultMaxHosts      = 4096
	DefaultStaleAfter    = 2 * time.Second
	DefaultExpiry        = 10 * time.Minute
	DefaultTimeout       = time.Second
)

// Options configure a [Fleet]. The zero value works: each zero field
// means its default.
type Options struct {
	// Prefix begins every key and the pub/sub channel the Fleet uses,
	// so that several fleets (or other data) can share a store. The
	// members of one fleet must use the same Prefix. "" means
	// DefaultPrefix, "retryhttp:".
	Prefix string
	// FlushInterval is the least time between two round trips to the
	// store that carry deltas or holds: a failure, a hold or a sampled
	// success is sent at once unless one went out less than
	// FlushInterval ago, and what waits meanwhile travels together.
	// The fetches of the holds of hosts met wait FlushInterval, unless
	// such work takes them along first; a round trip of fetches alone
	// does not hold back the failure that follows it. So a member
	// makes at most two round trips per FlushInterval. Zero or less
	// means DefaultFlushInterval, 100 ms.
	FlushInterval time.Duration
	// MaxHosts bounds the hosts a Fleet keeps state for; past it, the
	// hosts idle longest are forgotten (see [Stats.Dropped]). Zero or
	// less means DefaultMaxHosts, 4096.
	MaxHosts int
	// StaleAfter is how long the fleet's bucket, as the store last
	// returned it, is trusted: an older reading is as good as none, and
	// Look answers "not spent". Zero or less means DefaultStaleAfter,
	// 2 s.
	StaleAfter time.Duration
	// Expiry is how long a host's bucket in debt lives in the store
	// after its last update: a host nobody reported on for that long is
	// full again. It is also how long the store keeps a member's record
	// of its last batch, through a refill to full, so that a batch sent
	// again within it counts once. Zero or less means DefaultExpiry, 10
	// minutes; less than a millisecond, which the store counts in, means
	// a millisecond.
	Expiry time.Duration
	// Timeout bounds one round trip to the store, and so how long Close
	// waits for the one in flight. The Fleet's commands carry a context
	// with this deadline, which go-redis honours between its own
	// retries (MaxRetries, after a backoff of MinRetryBackoff to
	// MaxRetryBackoff) and, when the client's ContextTimeoutEnabled is
	// set, while it reads and writes. Over a *redis.Client (a Sentinel's
	// FailoverClient is one) without ContextTimeoutEnabled, the Fleet's
	// commands go through a clone of it (Client.WithTimeout) whose
	// ReadTimeout and WriteTimeout are Timeout, so that reads and writes
	// are bounded all the same; go-redis's clone keeps none of the
	// client's hooks, so tracing or metrics hooks then do not see the
	// Fleet's commands. Over a ClusterClient or a Ring without it, a read
	// or write waits for the client's ReadTimeout or WriteTimeout (3 s by
	// default). Set ContextTimeoutEnabled: every command is then bounded
	// by its deadline and seen by the client's hooks. Zero or less means
	// DefaultTimeout, 1 s.
	Timeout time.Duration
}

// withDefaults returns o with each zero field set to its default.
func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.MaxHosts <= 0 {
		o.MaxHosts = DefaultMaxHosts
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.Expiry <= 0 {
		o.Expiry = DefaultExpiry
	}
	// The store counts expiries in milliseconds, and a key set to
	// expire in none (PEXPIRE 0) is deleted at once: a bucket would
	// never stay in debt.
	o.Expiry = max(o.Expiry, time.Millisecond)
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Fleet is a [retryhttp.Fleet] over Redis or Valkey: one member's view of
// the retry budgets and holds that a fleet of processes shares. Set it as
// [retryhttp.Transport.Fleet]; each process is one member, with its own
// Fleet and its own client.
//
// Report and Look never wait for the store: they read and write the
// member's own state, and two background goroutines, started by [New]
// and ended by [Fleet.Close], talk to the store. When the store is slow, down
// or has not answered yet, Look answers the zero [retryhttp.FleetView]
// ("allow, no hold"), so that the Transport's own budget decides.
//
// A Fleet is safe for concurrent use. It must be made by New.
type Fleet struct {
	client  redis.UniversalClient
	opts    Options
	channel string
	member  string    // the member's id, under which the store remembers its last budget batch
	epoch   time.Time // readings are timed from it, on the monotonic clock

	// hosts are the hosts met, at most MaxHosts: past it, quiet hosts
	// not looked up since the last eviction go first, then the others,
	// quiet ones first, least recently looked up first; what a host
	// forgotten loses is counted in Stats.Dropped (see forget).
	hosts *hostmap.Map[string, host]

	wake   chan struct{} // work that may wait FlushInterval (fetches); capacity 1, never blocks a sender
	urgent chan struct{} // work to send as soon as FlushInterval allows (deltas, holds); capacity 1
	// fetching is set while a round trip of fetches alone is in flight,
	// aside the flusher's (see fetchAside), which then tells how it went
	// through fetched (capacity 1).
	fetching atomic.Bool
	fetched  chan bool
	stop     chan struct{} // closed by Close
	ctx      context.Context
	cancel   context.CancelFunc
	closed   atomic.Bool
	once     sync.Once
	pubsub   atomic.Pointer[redis.PubSub] // the listener's, for Close to end its wait
	done     sync.WaitGroup               // the flusher, the listener and a round trip of fetches aside

	stats counters
}

var _ retryhttp.Fleet = (*Fleet)(nil)

// New returns a Fleet that keeps its shared state in the store client
// talks to: a *redis.Client, *redis.ClusterClient or *redis.Ring, or any
// other [redis.UniversalClient]. It starts the Fleet's background work
// and returns at once, without waiting for the store; the first round
// trip loads the scripts, through the same pipeline the flushes use, so
// that the connection it opens is the one they find.
//
// The Fleet never closes client; [Fleet.Close] must be called before
// the client is closed. Over a *redis.Client without
// ContextTimeoutEnabled, the Fleet's commands go through a clone of it
// with Options.Timeout as its read and write timeouts, which none of the
// client's hooks see (see [Options.Timeout]). New panics if client is
// nil, or a nil pointer of one of go-redis's client types.
func New(client redis.UniversalClient, opts Options) *Fleet {
	if isNil(client) {
		panic("redisfleet: New with a nil client")
	}
	f := newFleet(client, opts)
	if c, ok := client.(*redis.Client); ok && !c.Options().ContextTimeoutEnabled {
		// Bounds every read and write of the Fleet's by Timeout, so
		// that Close, which waits for them, is prompt even when the
		// store accepts and never answers. With ContextTimeoutEnabled
		// the commands' deadlines do that, and the client's own hooks
		// (which a clone loses) see the Fleet's commands.
		f.client = c.WithTimeout(f.opts.Timeout)
	}
	f.done.Add(2)
	go f.flusher()
	go f.listener()
	return f
}

// newFleet returns a Fleet whose background work is not started.
func newFleet(client redis.UniversalClient, opts Options) *Fleet {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	f := &Fleet{
		client:  client,
		opts:    opts,
		channel: opts.Prefix + holdChannel,
		member:  fmt.Sprintf("%016x", rand.Uint64()),
		epoch:   time.Now(),
		wake:    make(chan struct{}, 1),
		urgent:  make(chan struct{}, 1),
		fetched: make(chan bool, 1),
		stop:    make(chan struct{}),
		ctx:     ctx,
		cancel:  cancel,
	}
	f.hosts = hostmap.New(hostmap.Options[string, host]{Bound: opts.MaxHosts, Init: f.meet, Rank: f.rank,
		Dropped: f.forget})
	return f
}

// Report records what one attempt to hostname showed, to be sent to the
// store at once (within FlushInterval of the previous round trip): a
// failure, a hold, or one success in 16, sampled from a random phase
// per host and sent with a weight of 16. A hold that ends more than a
// century ahead is kept, and sent, as ending a century ahead. A report
// with a nil Throttle changes no budget. Report does no I/O, does not
// block, and allocates nothing for a host it already tracks. After Close
// it does nothing.
func (f *Fleet) Report(hostname string, r retryhttp.FleetReport) {
	if f.closed.Load() {
		return
	}
	f.reportOn(hostname, f.host(hostname), r)
}

// reportOn is Report on h, the record of hostname a lookup returned. An
// eviction may have taken h from the map since: what the report wrote
// then goes to the host's record of now.
func (f *Fleet) reportOn(hostname string, h *host, r retryhttp.FleetReport) {
	if f.report(h, r) && f.tracked(hostname) != h {
		f.rehome(h, hostname)
	}
}

// report records r on h, and reports whether it left anything to send.
func (f *Fleet) report(h *host, r retryhttp.FleetReport) (wrote bool) {
	if !r.HoldUntil.IsZero() {
		now := time.Now()
		until := r.HoldUntil
		if limit := now.Add(maxHoldAhead); until.After(limit) {
			until = limit
		}
		if f.setHold(h, r.Rule, ceilMilli(until), r.HoldStatus, false, now.UnixMilli()) {
			signal(f.urgent)
			wrote = true
		}
	}
	if r.Throttle == nil {
		return wrote
	}
	l := tokens.LimitsOf(r.Throttle)
	h.setLimits(l)
	capacity, refill := l.Capacity(), l.Refill()
	switch r.Budget {
	case retryhttp.FleetFailure:
		f.count(h.add(-tokens.PerToken, capacity))
		signal(f.urgent)
		return true
	case retryhttp.FleetSuccess:
		// Sampled successes are sent even while the bucket is believed
		// full, or the other members' failures would go unbalanced;
		// and as soon as failures are, or a fleet that starts at once
		// would read its first failures long before its successes.
		if w := h.success(); w != 0 {
			f.count(h.add(w*refill, capacity))
			signal(f.urgent)
			return true
		}
	}
	return wrote
}

// rehome moves to hostname's record what a report left on h, a record
// of hostname evicted between the report's lookup and its writes, which
// no round trip lists any more: its deltas and the holds it was to send.
// Deltas an eviction after the writes found on h, forget took and
// counted in Stats.Dropped; a hold it counted there too still goes.
func (f *Fleet) rehome(h *host, hostname string) {
	d := h.pending.Swap(0)
	var holds []hold
	holds = h.unsent(holds, time.Now().UnixMilli())
	if d == 0 && len(holds) == 0 {
		return
	}
	to := f.host(hostname)
	if d != 0 {
		// The new record sends the deltas with the throttle's capacity,
		// as the evicted one would have: with none, the store would read
		// the bucket as one of capacity 0, and refill it.
		l := tokens.Limits(h.limits.Load())
		to.setLimits(l)
		f.count(to.add(d, l.Capacity()))
	}
	now := time.Now().UnixMilli()
	for _, k := range holds {
		f.setHold(to, k.Rule, k.Until.UnixMilli(), k.Status, false, now)
	}
	signal(f.urgent)
}

// isNil reports whether client is nil, or a nil *redis.Client,
// *redis.ClusterClient or *redis.Ring in an interface that is not.
func isNil(client redis.UniversalClient) bool {
	switch c := client.(type) {
	case nil:
		return true
	case *redis.Client:
		return c == nil
	case *redis.ClusterClient:
		return c == nil
	case *redis.Ring:
		return c == nil
	}
	return false
}

// Look returns what the fleet knows of hostname for the requests of rule:
// Spent when the store's last answer for hostname, at most StaleAfter
// old, left the bucket at half its capacity or less, and the latest hold
// known on hostname and rule while it lasts. It answers the zero FleetView
// when it cannot tell. Look does no I/O, does not block, and allocates
// nothing for a host it already tracks. After Close it answers the zero
// FleetView.
func (f *Fleet) Look(hostname, rule string) retryhttp.FleetView {
	if f.closed.Load() {
		return retryhttp.FleetView{}
	}
	return f.view(f.host(hostname), rule, time.Now())
}

// view is Look at now.
func (f *Fleet) view(h *host, rule string, now time.Time) retryhttp.FleetView {
	v := retryhttp.FleetView{Spent: h.spent(f.sinceEpoch(now), f.opts.StaleAfter.Milliseconds())}
	if k, ok := h.holdOn(rule, now); ok {
		v.HoldUntil, v.HoldStatus = k.Until, k.Status
	}
	return v
}

// sinceEpoch returns the milliseconds from the Fleet's epoch to now.
func (f *Fleet) sinceEpoch(now time.Time) int64 {
	return now.Sub(f.epoch).Milliseconds()
}

// count records a report whose delta was cut by the bound on pending
// deltas.
func (f *Fleet) count(cut bool) {
	if cut {
		f.stats.dropped.Add(1)
	}
}

// setHold records a hold on h as host.setHold does, counting in
// Stats.Dropped the holds the member met that the bound on a host's
// holds lost unsent.
func (f *Fleet) setHold(h *host, rule string, end int64, status int, sent bool, now int64) bool {
	extended, lost := h.setHold(rule, end, status, sent, now)
	f.stats.dropped.Add(lost)
	return extended
}

// Close stops the Fleet's background work and returns nil once none of
// it can touch the client any more, so that the client may be closed at
// once. It does not close the client. It cancels the context of the
// round trip in flight, if any, and waits for it to end: within
// Options.Timeout even when the store accepts and never answers, except
// over a ClusterClient or a Ring without ContextTimeoutEnabled, whose
// reads wait for the client's ReadTimeout (see Options.Timeout). Deltas
// not yet sent are dropped. Close may be called more than once, and
// from several goroutines; Report and Look may still be called after it
// and do nothing.
func (f *Fleet) Close() error {
	f.once.Do(func() {
		f.closed.Store(true)
		close(f.stop)
		f.cancel()
		// The listener stores its PubSub before it checks closed, and
		// Close checks the PubSub after it set closed, so one of them
		// closes it whatever the order. Closing it ends the listener's
		// wait for a message at once.
		if ps := f.pubsub.Load(); ps != nil {
			_ = ps.Close()
		}
	})
	f.done.Wait()
	return nil
}

// signal wakes the flusher through c without ever blocking: a signal
// already waiting says the same.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// maxHoldAhead bounds how far ahead a hold a member meets may end: a
// century, as the Transport's own holds. An end past the year 2262 has
// no Unix time in nanoseconds, and one far past that no expiry the
// store takes.
const maxHoldAhead = 100 * 365 * 24 * time.Hour

// ceilMilli returns t in Unix milliseconds, rounded up so that a hold is
// never cut short. It holds for any t within 292 million years of 1970,
// where a Unix time in nanoseconds ends in 2262.
func ceilMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.Nanosecond()%1e6 > 0 {
		ms++
	}
	return ms
}

// Stats are a Fleet's own figures, for monitoring the store's side. Each
// field is read on its own, so fields may be a moment apart.
type Stats struct {
	// Flushes counts the round trips to the store that it answered,
	// taking every command.
	Flushes uint64
	// FlushErrors counts the round trips in which the store did not
	// take every command: it did not answer some (down, slow, frozen, or
	// one node of several gone), or refused them. The work of such a
	// command waits for the next round trip; the commands answered are
	// settled as such.
	FlushErrors uint64
	// StoreRefusals counts the round trips, of FlushErrors, in which the
	// store answered some command with an error instead of doing its
	// work: a password it does not take (or none where it wants one),
	// LOADING, OOM, READONLY, a cluster moving or missing a slot.
	StoreRefusals uint64
	// RoundTrip is the time the last answered round trip took,
	// MaxRoundTrip the longest one, and AvgRoundTrip a moving average
	// (the last one weighing 1/8). Zero before the first answer.
	RoundTrip, MaxRoundTrip, AvgRoundTrip time.Duration
	// Dropped counts the reports whose effect was lost: each failure cut
	// by the bound on a host's pending deltas (a batch moves a bucket
	// from full to empty at most; a success cut so fills any bucket all
	// the same, and is not counted); each hold met and not sent that the bound
	// of 16 holds on a host lost, for holds on other rules that end
	// later; and, of a host forgotten to make room,
	// its deltas pending and holds unsent, once, and its batch in
	// flight, once, when the store did not take the round trip that
	// carried it (a batch that the store takes is not lost, though its
	// host was forgotten meanwhile).
	Dropped uint64
	// HoldsLearned counts the holds learned from the store, through
	// pub/sub or a fetch, that were new to this member or ended later
	// than the one it knew on their host and rule.
	HoldsLearned uint64
	// Subscriptions counts the times the listener (re)subscribed to the
	// holds channel: one at start, one more after each reconnection.
	Subscriptions uint64
	// Hosts is the number of hosts tracked now, at most MaxHosts.
	Hosts int
}

// counters are the atomics behind [Stats], each written by one
// goroutine (the flusher or the listener) or by atomic adds.
type counters struct {
	flushes, flushErrors         atomic.Uint64
	refusals                     atomic.Uint64
	rtt, maxRTT, avgRTT          atomic.Int64 // nanoseconds
	rttMu                        sync.Mutex   // guards the writes of rtt, maxRTT and avgRTT
	dropped, learned, subscribed atomic.Uint64
}

// Stats returns the Fleet's figures now.
func (f *Fleet) Stats() Stats {
	return Stats{
		Flushes:       f.stats.flushes.Load(),
		FlushErrors:   f.stats.flushErrors.Load(),
		StoreRefusals: f.stats.refusals.Load(),
		RoundTrip:     time.Duration(f.stats.rtt.Load()),
		MaxRoundTrip:  time.Duration(f.stats.maxRTT.Load()),
		AvgRoundTrip:  time.Duration(f.stats.avgRTT.Load()),
		Dropped:       f.stats.dropped.Load(),
		HoldsLearned:  f.stats.learned.Load(),
		Subscriptions: f.stats.subscribed.Load(),
		Hosts:         f.hosts.Len(),
	}
}

// roundTrip records an answered round trip that took d. The flusher and
// a round trip of fetches aside may both call it: rttMu keeps their
// read-modify-writes apart.
func (c *counters) roundTrip(d time.Duration) {
	c.rttMu.Lock()
	defer c.rttMu.Unlock()
	c.flushes.Add(1)
	// The longest first: Stats, which reads the last after it, then
	// never shows a last round trip longer than the longest.
	if int64(d) > c.maxRTT.Load() {
		c.maxRTT.Store(int64(d))
	}
	c.rtt.Store(int64(d))
	avg := c.avgRTT.Load()
	if avg == 0 {
		avg = int64(d)
	} else {
		avg += (int64(d) - avg) / 8
	}
	c.avgRTT.Store(avg)
}
