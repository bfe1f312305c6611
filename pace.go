package retryhttp

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// ErrPaced is matched by the error of a request that was not sent because
// its host is paced: the host throttled the requests of its rule, or its
// rate-limit fields said how few it takes, and the request's send slot
// would come past its deadline or the policy's maxServerDelay, or so
// close to its deadline that the answer would come after it.
var ErrPaced = errors.New("retryhttp: host paced")

// The pace's constants. A throttle cuts the rate to paceBeta of the rate
// sent; the rate then grows back along a cubic curve, as TCP CUBIC and the
// AWS SDKs' adaptive retry mode do: concave up to a plateau, a little
// below the rate the host takes, then convex past it, so that the pace
// stays long near that rate and probes past it slowly. A pace whose rate
// grew past paceLift times what the host is sent, with no throttle for
// paceQuiet, is lifted.
const (
	paceBeta = 0.7
	// paceTarget is the plateau when nothing better is known: a little
	// below the rate throttled, which a host's burst let pass for a
	// while.
	paceTarget = 0.95
	// paceMeasured is the plateau, as a share of what the host served
	// the rule since the last cut, per second it was not held, when that
	// was measured over paceSpan at least: the rate throttled overstates
	// what a host takes when its burst let that rate pass for seconds,
	// while what it served does not; a little below it, as the count
	// includes the burst the host allowed after its hold. The plateau so
	// measured stays between the rate cut to and paceTarget of the rate
	// throttled.
	paceMeasured = 0.98
	paceSpan     = time.Second
	// paceRegrow is how long the rate takes to grow back from the cut to
	// the plateau: a rate the host took, so the climb back is short and
	// loses little below it, yet long enough for the answers of the
	// first attempts after the cut to say whether it was enough.
	paceRegrow = 2 * time.Second
	// paceC is how fast the rate probes past the plateau: a fraction of
	// it, per second cubed; 50% past it in 6 s.
	paceC = 0.002
	// paceCHeld is paceC past a measured plateau after a throttle that
	// set a hold: each probe that finds the host's limit costs the hold
	// it sets (a second's hold of a key sent 100 per second loses 100
	// requests), so the probe rises about 2% past the plateau in 6 s and
	// 10% in 10 s: probes come some 15 s apart, not 3 to 8, and a key
	// held a second by each spends under a tenth of its time held.
	paceCHeld = 0.0001
	// paceProbeLate is how late after the plateau paceC's probe starts,
	// when it is slow: it overtakes the slow one 20% past the plateau,
	// 13 s in, so that the probe stays slow where the limit was found,
	// give or take a burst, yet a host whose limit rose is found, and
	// the pace lifted (three times the plateau), in 18 s instead of 10,
	// not 27.
	paceProbeLate = 8 * time.Second

	// paceServed caps the rate a throttle cuts from at this many times
	// the rate the host answered without a throttle in the last second:
	// after a hold, the pace may be far above what the host takes, and
	// what was sent tells nothing, as the hold kept it back.
	paceServed = 3
	paceLift   = 1.5
	// paceBooked is how far ahead the send slots may be taken for a pace
	// that its callers fill to be lifted: slots taken further ahead were
	// taken at a rate since outgrown, and hold requests back whatever
	// the rate now says (see lifted).
	paceBooked = time.Second
	paceQuiet  = 2 * time.Second
	// paceFloor is the least rate a throttle cuts to, so that a host
	// that throttled a trickle is not paced to a standstill.
	paceFloor = 0.5
	// maxPacedRules bounds the rules a host keeps a pace for apart.
	maxPacedRules = 16
)

// paced is the pace of one host's rule: a send rate, and the schedule of
// send slots at that rate.
//
// The slots follow the generic cell rate algorithm: next is the time the
// next slot is due, and an attempt takes the slot at max(now, next -
// burst), moving next on by one interval, so that at most burst of them go
// at once and then one per interval.
type paced struct {
	rule string
	next time.Time
	// rate is the rate set by the last throttle, in requests per
	// second; since when it grows back: when it was set, or later,
	// for a throttle that set a long hold (see throttle).
	rate  float64
	since time.Time
	// A throttle's cut: the plateau (wmax), reached again paceRegrow
	// after since, and probed past at probe (paceC or paceCHeld). wmax
	// 0: no throttle came, and the rate is the fields'.
	wmax  float64
	probe float64
	// served counts the answers of the rule that were not throttles since
	// servedFrom: the end of the hold the last cut came with, or the cut.
	served     float64
	servedFrom time.Time
	// quota is the fields' rate (see fieldsRate), last read at quotaR
	// requests left until quotaUntil; limit caps the rate, from a
	// RateLimit-Policy.
	quota      float64
	quotaR     float64
	quotaUntil time.Time
	limit      float64
	// fieldsUntil is when the fields' rate under a policy goes stale,
	// unless an answer brings them again (see stale).
	fieldsUntil time.Time
	// level is the units left that the fields said at levelAt, the last
	// step of the fields' rate; top the most that two answers in a row
	// said (see steer); lastR what the last answer said, heardAny
	// whether one did (see heard).
	level    float64
	levelAt  time.Time
	top      float64
	lastR    float64
	heardAny bool
	// cut is when the schedule of slots last started again, at a lower
	// rate: a throttle's cut, or a fall of the fields' rate. A slot taken
	// before it was scheduled at the rate that was too fast, and is
	// taken anew.
	cut time.Time
	// throttled is when the last throttle came, or the fields said the
	// quota was spent.
	throttled time.Time
	// answer is how long the rule's answers take, smoothed as TCP
	// smooths its round trip time (RFC 6298: each answer moves it an
	// eighth of the way); 0 until one came.
	answer time.Duration
}

// rateAt is p's rate at now: the fields', while they are in force (see
// fieldsRate), as they follow the server's own numbers; else the
// cubic's, after a throttle; capped by the policy's limit. 0 means
// unpaced.
func (p *paced) rateAt(now time.Time) float64 {
	rate := math.Inf(1)
	switch {
	case p.fieldsRate(now) > 0:
		rate = p.quota // the server's own numbers
	case p.wmax > 0:
		t := now.Sub(p.since).Seconds() - paceRegrow.Seconds()
		if t < 0 { // concave, from the cut to the plateau
			d := min(-t/paceRegrow.Seconds(), 1) // 1 at the cut (or until since), 0 at the plateau
			rate = p.wmax - (p.wmax-p.rate)*d*d*d
		} else { // convex, past it
			g := p.probe * t * t * t
			if late := t - paceProbeLate.Seconds(); p.probe < paceC && late > 0 {
				g = max(g, paceC*late*late*late)
			}
			rate = p.wmax * (1 + g)
		}
		rate = max(rate, paceFloor)
	}
	if p.limit > 0 {
		rate = min(rate, p.limit)
	}
	if math.IsInf(rate, 1) {
		return 0
	}
	return rate
}

// burst is how many attempts may go at once at rate: the fields' quota
// may be drawn on in small runs (a tenth of what is left, at most 10), a
// throttled rate not at all.
func (p *paced) burst(rate float64, now time.Time) float64 {
	if p.wmax == 0 && p.fieldsRate(now) > 0 && now.Before(p.quotaUntil) {
		return min(max(p.quotaR/10, 1), 10)
	}
	return 1
}

// lifted reports whether p is over at now: no r per t of the fields is
// in force, and, with no throttle for paceQuiet (or none ever), its rate
// grew past paceLift times asked, the rate the host's callers ask for,
// or (for callers that always send as fast as the pace lets them, and so
// long as no send slot is taken more than paceBooked ahead) past
// paceLift times the rate that was throttled, twice. Slots taken that
// far ahead were taken at a rate since outgrown: the callers still wait
// for them, however high the rate now is. They do not keep a pace whose
// callers ask for far less than it lets go, though: those are slots of
// callers that gave up, which nothing gives back.
func (p *paced) lifted(now time.Time, asked float64) bool {
	if p.limit == 0 && p.fieldsRate(now) > 0 {
		return false
	}
	rate := p.rateAt(now)
	if rate == 0 {
		return true
	}
	if now.Sub(p.throttled) < paceQuiet {
		return false
	}
	return rate > paceLift*max(asked, paceFloor) ||
		p.wmax > 0 && rate > 2*paceLift*p.wmax && p.next.Sub(now) <= paceBooked
}

// paces are the paces of one host, one per rule. The common case, a host
// never paced, costs one atomic load.
type paces struct {
	n atomic.Int32 // rules paced
	// mu guards list: attempts take slots and answers set rates while
	// other requests read them.
	mu   sync.Mutex
	list []paced
}

// paceFacts are what a decision reads of a host's pace for a rule: the
// rate (0: unpaced) and when the next slot is due, at most burst early.
type paceFacts struct {
	rate  float64
	next  time.Time
	burst float64
	// cut is when the schedule last started again at a lower rate (see
	// paced.cut).
	cut time.Time
	// answer is how long the rule's answers take (see paced.answer).
	answer time.Duration
}

// slot returns when an attempt taking the next slot at now would go, for
// the facts of a decision: when it is due, or up to burst-1 intervals
// sooner, so that at most burst attempts go back to back.
func (f paceFacts) slot(now time.Time) time.Time {
	if f.rate <= 0 {
		return now
	}
	return later(now, f.next.Add(-slots(max(f.burst-1, 0), f.rate)))
}

// slots is how long n send slots at rate take: a century at most, so
// that a rate near zero (a policy of one request per ages) gives a time
// far ahead, where a float past what a Duration holds converts to any
// Duration at all, one in the past among them.
func slots(n, rate float64) time.Duration {
	return time.Duration(min(n/rate*float64(time.Second), float64(maxHold)))
}

// get returns the pace of rule at now; asked is the rate the host's
// callers ask for, which lifts a pace that no longer holds them back.
func (ps *paces) get(rule string, now time.Time, asked float64) paceFacts {
	if ps.n.Load() == 0 {
		return paceFacts{}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	i := ps.find(rule)
	if i < 0 {
		return paceFacts{}
	}
	p := &ps.list[i]
	p.stale(now)
	if p.lifted(now, asked) {
		ps.drop(i)
		return paceFacts{}
	}
	rate := p.rateAt(now)
	return paceFacts{rate: rate, next: p.next, burst: p.burst(rate, now), cut: p.cut, answer: p.answer}
}

// take takes rule's next send slot at now, if the rule is paced, and
// returns when the attempt goes: now, or later. A slot that would leave
// less than the rule's answer time before latest (zero: no bound) is not
// taken, and ok is false: the attempt would spend the host's quota, and
// the slot, on an answer that comes too late for its caller. Nor is a
// slot after longest (zero: no bound), the policy's maxServerDelay from
// now: the gate judged the slot from facts read a moment before, and
// requests that passed it meanwhile took the slots it saw. rate is the
// pace's (0: unpaced).
func (ps *paces) take(rule string, now, latest, longest time.Time) (at time.Time, rate float64, ok bool) {
	if ps.n.Load() == 0 {
		return now, 0, true
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	i := ps.find(rule)
	if i < 0 {
		return now, 0, true
	}
	p := &ps.list[i]
	p.stale(now)
	if rate = p.rateAt(now); rate <= 0 {
		return now, 0, true
	}
	at = paceFacts{rate: rate, next: p.next, burst: p.burst(rate, now)}.slot(now)
	if !latest.IsZero() && !at.Add(p.answer).Before(latest) || !longest.IsZero() && at.After(longest) {
		return at, rate, false
	}
	p.next = later(p.next, at).Add(slots(1, rate))
	return at, rate, true
}

// answered notes an answer at now to an attempt of rule, which took
// latency, when the rule is paced; ok says it was not a throttle.
func (ps *paces) answered(rule string, now time.Time, latency time.Duration, ok bool) {
	if ps.n.Load() == 0 {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if i := ps.find(rule); i >= 0 {
		p := &ps.list[i]
		if p.answer == 0 {
			p.answer = latency
		} else {
			p.answer += (latency - p.answer) / 8
		}
		if ok && !now.Before(p.servedFrom) {
			p.served++
		}
	}
}

// throttle cuts rule's pace for a throttle at now of an attempt sent at
// sent (or that took its send slot then), rate being the rate at which
// the host was sent attempts (not the rate asked for: requests a hold
// kept back never reached it) and served the rate it answered without a
// throttle in the last second; held is when the hold the throttle set
// ends (now or earlier: none). The rate is cut to paceBeta of the rate
// it was sent at, the lower of its pace and rate, and grows back to a
// plateau: paceMeasured of what the host served since the last cut, per
// second it was not held, when that was measured, else paceTarget of the
// rate throttled. It reaches the plateau no sooner than the hold the
// throttle set ends, and probes past it only after: nothing is sent
// while the hold lasts, and a rate grown past the plateau during a long
// one would let every request it gathered go at once when it ends. A
// throttle of an attempt sent before the last cut is already answered
// for by it: one cut per round of attempts, not one per attempt in
// flight. The schedule of slots starts again from now, at the
// new rate: slots taken before the cut are taken anew (see restart).
func (ps *paces) throttle(rule string, now, sent time.Time, rate, served float64, held time.Time) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	i := ps.find(rule)
	if i < 0 {
		i = ps.add(rule)
	}
	p := &ps.list[i]
	p.throttled = now
	p.stale(now)
	if p.limit > 0 && p.fieldsRate(now) > 0 {
		// Steered by the fields: the throttle cuts their rate, once a
		// round, as a spent quota does (see steer).
		if !sent.Before(p.cut) {
			p.quota = max(p.quota*paceBeta, paceFloor)
			p.restart(now, min(p.quota, p.limit))
		}
		return
	}
	if sent.Before(p.since) && p.wmax > 0 {
		return
	}
	w := rate // unpaced, the rate it was sent at
	if r := p.rateAt(now); r > 0 {
		w = r // paced, the pace's: what was sent may be less only because a hold kept it back
	}
	if served > 0 {
		w = min(w, paceServed*served)
	}
	w = max(w, paceFloor)
	p.wmax, p.probe = paceTarget*w, paceC
	// What the host served is measured from the second cut on, over
	// paceSpan at least; before, the plateau is paceTarget's.
	if span := now.Sub(p.servedFrom); !p.since.IsZero() && !p.servedFrom.IsZero() && span >= paceSpan {
		p.wmax = min(max(paceMeasured*p.served/span.Seconds(), paceBeta*w), paceTarget*w)
		if held.After(now) {
			p.probe = paceCHeld
		}
	}
	p.rate, p.since = paceBeta*w, later(now, held.Add(-paceRegrow))
	p.restart(now, max(p.rate, paceFloor))
	p.served, p.servedFrom = 0, later(now, held)
}

// restart starts the schedule of slots again at now, at rate, lower than
// the rate the slots were taken at: a slot taken before now is taken
// anew (see cut), and the next is due one interval of rate after now at
// the latest. The slot taken last still spaces it: due at the cut
// itself, the next slot let a host that throttled every request at once
// be sent every one of them, each answer cutting the rate and freeing a
// slot.
func (p *paced) restart(now time.Time, rate float64) {
	p.cut = now
	if next := now.Add(slots(1, rate)); p.next.After(next) {
		p.next = next
	}
}

// clear lifts every pace: the host is back, its owner says.
func (ps *paces) clear() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.list = ps.list[:0]
	ps.n.Store(0)
}

// rates returns the rate of each rule paced at now, for Stats; asked is
// the rate the host's callers ask for. A pace that get would find lifted
// counts as lifted here too, so that a host nobody sent to since its
// throttles ended does not show a rate that its next request would not
// meet. Each pace is read through a copy: reading Stats changes nothing.
func (ps *paces) rates(now time.Time, asked float64) map[string]float64 {
	if ps.n.Load() == 0 {
		return nil
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make(map[string]float64, len(ps.list))
	for _, p := range ps.list {
		p.stale(now)
		if p.lifted(now, asked) {
			continue
		}
		if r := p.rateAt(now); r > 0 {
			out[p.rule] = r
		}
	}
	return out
}

// find returns the index of rule's pace, or -1. ps.mu must be held.
func (ps *paces) find(rule string) int {
	for i := range ps.list {
		if ps.list[i].rule == rule {
			return i
		}
	}
	return -1
}

// add makes a pace for rule, the list full dropping the one throttled
// longest ago. ps.mu must be held.
func (ps *paces) add(rule string) int {
	if len(ps.list) >= maxPacedRules {
		oldest := 0
		for i := range ps.list {
			if ps.list[i].throttled.Before(ps.list[oldest].throttled) {
				oldest = i
			}
		}
		ps.list[oldest] = paced{rule: rule}
		return oldest
	}
	ps.list = append(ps.list, paced{rule: rule})
	ps.n.Store(int32(len(ps.list)))
	return len(ps.list) - 1
}

// drop lifts the pace at i. ps.mu must be held.
func (ps *paces) drop(i int) {
	last := len(ps.list) - 1
	ps.list[i] = ps.list[last]
	ps.list = ps.list[:last]
	ps.n.Store(int32(len(ps.list)))
}

// meter measures the rate at which a host is sent attempts, from a count
// of them. It rolls a window of at least a second as attempts go, at the
// cost of one atomic load when it need not, so that a throttle learns
// the rate that was sent, not a floor (the defect of a pace that starts
// before it has measured).
type meter struct {
	w atomic.Pointer[window] // nil: no attempt yet
}

// window is one of a meter's windows: when it started, the count then,
// and the rate of the window before it (0: none).
type window struct {
	at   time.Time
	base uint64
	last float64
}

// due reports whether the window is to roll at now: it is a second old,
// or there is none.
func (m *meter) due(now time.Time) bool {
	w := m.w.Load()
	return w == nil || now.Sub(w.at) >= time.Second
}

// roll starts a window at now, count being the attempts so far, the one
// going now included, which is the new window's. Rolls are once a second
// at most; a roll that loses a race to another leaves it to that one,
// whether it finds it swapped in already (two attempts found the window
// due, and the one counted later rolled first) or not.
func (m *meter) roll(now time.Time, count uint64) {
	w := m.w.Load()
	next := &window{at: now, base: max(count, 1) - 1}
	if w != nil {
		if now.Sub(w.at) < time.Second || next.base < w.base {
			return // rolled since it was found due: a base below it would wrap
		}
		next.last = float64(next.base-w.base) / max(now.Sub(w.at).Seconds(), 1e-3)
	}
	m.w.CompareAndSwap(w, next)
}

// rate is the rate sent at now, count being the attempts so far: that of
// the window in progress once it is a quarter of a second old, else the
// last full window's, else (just after the first attempt) that of what
// little was seen. A count read before another attempt rolled the
// window counts none in it.
func (m *meter) rate(now time.Time, count uint64) float64 {
	w := m.w.Load()
	if w == nil {
		return 0
	}
	count = max(count, w.base)
	elapsed := now.Sub(w.at)
	if elapsed < time.Second/4 && w.last > 0 {
		return w.last
	}
	return float64(count-w.base) / max(elapsed.Seconds(), 0.01)
}
