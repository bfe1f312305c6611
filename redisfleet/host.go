package redisfleet

import (
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/internal/holdlist"
	"github.com/retryhttp/retryhttp/internal/hostmap"
	"github.com/retryhttp/retryhttp/internal/tokens"
)

// successWeight is how many successes one sampled success stands for:
// a host's every successWeight-th success is sent, with that weight. A
// host's count starts at a random phase, so that each success has the
// same chance, 1/successWeight, of being the one sent: the sum is then
// unbiased even for a member that sends a host fewer than
// successWeight requests (counting from zero, such a member would never
// send a success, while each of its failures goes at once, and a fleet
// of such members would read as failing only). Sixteen keeps a healthy
// host's store traffic under one round trip per ten successful requests
// whatever the rate.
const successWeight = 16

// maxHolds bounds the holds kept per host. A host's holds are per rule
// of the caller's policy, which has few; the bound only stops a caller
// that names rules without end from growing the list.
const maxHolds = 16

// host is what a member knows of one host: the budget deltas not yet
// sent, the batch of them the store has not answered yet, the fleet's
// bucket as the store last returned it, and the holds on the host's
// rules. Report and Look use its atomics without a lock; only holds,
// rarely set, take their list's lock.
type host struct {
	name      string
	budgetKey string
	holdKey   string

	pending   atomic.Int64  // milli-tokens not yet sent, within [-capacity, capacity]
	inflight  atomic.Int64  // milli-tokens sent and not answered (the batch); 0: none
	successes atomic.Uint64 // successes seen, from a random phase, for sampling
	limits    atomic.Uint64 // the tokens.Limits last reported; 0: no throttle seen
	reading   atomic.Uint64 // the bucket as last read: (ms since epoch + 1)<<1 | spent; 0: none
	fetch     atomic.Bool   // the store's holds on this host are still to be read

	// The flusher's alone: the in-flight batch's number, which the
	// budget script remembers so as to apply a batch sent twice once,
	// and the capacity it was sent with. inflight is an atomic only for
	// quiet, which the eviction calls under the host map's lock.
	batchSeq uint64
	batchCap int64
	// listed is the number of the last round trip whose collect found
	// the host among those tracked: a batch the store did not answer,
	// of a host no longer listed, is sent no more.
	listed uint64

	// holds are the holds on the host's rules; Look reads the list only
	// while one may be in force.
	holds holdlist.List[hold]
}

// hold is a "not before" on one rule of a host, as the member keeps it.
type hold struct {
	holdlist.Hold
	sent bool // the store has it, or was told by the member that set it
}

// add adds d milli-tokens to the deltas not yet sent, clamped to
// [-capacity, capacity]: a batch can move a bucket no further than from
// full to empty or back, so more would be lost at the store anyway, and
// the bound keeps a long outage of the store from growing the count. It
// reports whether part of a failure's d was cut: a success's cut is no
// loss, as a full swing fills any bucket, and a sampled success on a
// bucket of few tokens (16 refills above its capacity) is cut every time
// in healthy use.
func (h *host) add(d, capacity int64) (cut bool) {
	for {
		old := h.pending.Load()
		next := min(max(old+d, -capacity), capacity)
		if next == old {
			return d < 0
		}
		if h.pending.CompareAndSwap(old, next) {
			return d < 0 && next != old+d
		}
	}
}

// success counts one success and returns the weight to send for it:
// successWeight for every successWeight-th, else 0.
func (h *host) success() int64 {
	if h.successes.Add(1)%successWeight != 0 {
		return 0
	}
	return successWeight
}

// setLimits records the throttle in force, writing only on change so
// that a busy host's steady reports do not keep writing its cache line.
func (h *host) setLimits(l tokens.Limits) {
	if tokens.Limits(h.limits.Load()) != l {
		h.limits.Store(uint64(l))
	}
}

// setReading records that the store read the bucket as spent or not at
// ms milliseconds after the fleet's epoch.
func (h *host) setReading(ms int64, spent bool) {
	r := uint64(max(ms, 0)+1) << 1
	if spent {
		r |= 1
	}
	h.reading.Store(r)
}

// spent reports whether the last reading said spent and is less than
// stale milliseconds old at ms after the epoch.
func (h *host) spent(ms, stale int64) bool {
	r := h.reading.Load()
	if r&1 == 0 {
		return false // never read, or read as not spent
	}
	return ms-(int64(r>>1)-1) < stale
}

// holdOn returns the hold in force on rule at now, if any.
func (h *host) holdOn(rule string, now time.Time) (hold, bool) {
	if !h.holds.Any(now) {
		return hold{}, false // the common case, inlined: no call, no lock
	}
	k, ok := h.holds.Get(rule, now)
	return k, ok && k.Until.After(now)
}

// setHold records a hold on rule ending at end (Unix ms), extending only.
// sent says whether the store already has it (a hold learned from the
// store) or the member must send it (a hold it met). It reports whether
// the hold was extended, now being Unix ms, and how many holds the
// member met are lost, unsent, to the bound on a host's holds: this one,
// not kept as the host holds maxHolds on other rules that end no
// earlier, or another rule's, unsent, that this one displaced.
func (h *host) setHold(rule string, end int64, status int, sent bool, now int64) (extended bool, lost uint64) {
	t := time.UnixMilli(now)
	k := hold{Hold: holdlist.Hold{Rule: rule, Until: time.UnixMilli(end), Status: status}, sent: sent}
	in, displaced, ok := h.holds.Set(k, t, maxHolds)
	if !ok && !sent && in.Rule == "" && k.Until.After(t) {
		lost++
	}
	if ok && displaced.Rule != "" && displaced.Rule != rule && !displaced.sent && displaced.Until.After(t) {
		lost++
	}
	return ok, lost
}

// unsent appends to dst the holds the store is still to be told of, and
// forgets those that ended before now (Unix ms) unsent.
func (h *host) unsent(dst []hold, now int64) []hold {
	t := time.UnixMilli(now)
	if !h.holds.Any(t) {
		return dst
	}
	h.holds.Edit(func(list []hold) []hold {
		for i := range list {
			k := &list[i]
			switch {
			case k.sent:
			case !k.Until.After(t):
				k.sent = true // ended: nothing to tell
			default:
				dst = append(dst, *k)
			}
		}
		return list
	})
	return dst
}

// markSent records that the store has rule's hold ending at end (Unix
// ms), unless the hold was extended since it was sent.
func (h *host) markSent(rule string, end int64) {
	h.holds.Edit(func(list []hold) []hold {
		for i := range list {
			if k := &list[i]; k.Rule == rule && k.Until.UnixMilli() == end {
				k.sent = true
			}
		}
		return list
	})
}

// quiet reports whether the host has nothing to lose if evicted at now
// (Unix ms): no delta to send or unanswered, and no hold in force.
func (h *host) quiet(now int64) bool {
	return h.pending.Load() == 0 && h.inflight.Load() == 0 && !h.holds.Any(time.UnixMilli(now))
}

// host returns the state of the host named name, making it on first
// meeting (see [Fleet.meet]). A known host costs a map lookup under the
// read lock and no allocation.
func (f *Fleet) host(name string) *host { return f.hosts.Get(name) }

// tracked returns the state of the host named name, or nil when the
// member has not met it (or has forgotten it).
func (f *Fleet) tracked(name string) *host { return f.hosts.Peek(name) }

// meet makes the state of a host met for the first time, or again after
// it was forgotten. Its holds are to be fetched from the store, with the
// next round trip that can wait: a member that meets hosts without end
// still makes at most one round trip per FlushInterval for them. It runs
// under the host map's lock, so the flusher, which lists the map, finds
// the host when the signal wakes it.
func (f *Fleet) meet(name string, h *host) {
	h.name = name
	h.budgetKey = f.opts.Prefix + budgetKeyPart + name
	h.holdKey = f.opts.Prefix + holdKeyPart + name
	h.successes.Store(rand.Uint64N(successWeight)) // the sampling's phase
	h.fetch.Store(true)
	signal(f.wake)
}

// rank is what an eviction at now reads of h: a quiet host holds
// nothing the store does not, and forgetting one that is not may lose
// something (see forget).
func (f *Fleet) rank(h *host, now time.Time) hostmap.Rank {
	return hostmap.Rank{Idle: h.quiet(now.UnixMilli())}
}

// forget counts in Stats.Dropped what forgetting h, which was not
// quiet, loses: its pending deltas, taken so that no round trip sends
// what is counted lost, and its holds the store was not told of. Its
// batch in flight is not lost yet: the round trip that carries it may
// deliver it, and the flusher counts it once the store did not take
// it (see Fleet.collect). It runs under the host map's lock.
func (f *Fleet) forget(h *host) {
	lost := h.pending.Swap(0) != 0
	if !lost {
		now := time.Now()
		h.holds.Edit(func(list []hold) []hold {
			for _, k := range list {
				lost = lost || !k.sent && k.Until.After(now)
			}
			return list
		})
	}
	if lost {
		f.stats.dropped.Add(1)
	}
}
