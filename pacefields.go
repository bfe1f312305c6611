package retryhttp

import (
	"math"
	"time"
)

// The rate that a host's rate-limit fields set (draft-ietf-httpapi-
// ratelimit-headers): RateLimit's r units left until t, and
// RateLimit-Policy's q units per w seconds.
//
// Read alone, r per t is a rate only for a quota that gives nothing back
// before t, and only for a client alone on it. A token bucket refills
// all the time, and says t in whole seconds, rounded up: a bucket of 100
// per second holding 20 says r=19;t=1 when full, which read as 19 per
// second starves a lone client of four fifths of its quota. Clients that
// share a quota all read the same r, and each pacing at r per t sends
// that many times too much. So, when the policy's q per w is known, the
// pace steers by the units left instead: it takes q per w for the rate
// at which the quota refills, reads the sharers' spend from how fast r
// falls, and scales its own rate by the share of that spend which would
// keep r from running out (steer). Each sharer scaling its own rate by
// the same factor, their sum goes where the quota holds, whatever their
// number. Without a policy, the rate is r per t, smoothed.
const (
	// paceSmooth is the weight of each answer's r per t in the rate
	// set without a policy, so that clients sharing a quota, all seeing
	// it shrink and grow together, do not swing with it.
	paceSmooth = 0.1
	// paceStep is the least time between two steps of the rate, so that
	// the fall of r is read over several answers, not one.
	paceStep = 500 * time.Millisecond
	// paceMargin is how far below the quota's rate the sharers' spend is
	// aimed: the units left then build up rather than run out, as a
	// quota spent to its last unit answers 429 and holds.
	paceMargin = 0.02
	// paceSpread is the least time over which the units above half the
	// most seen are spent (or those below made up): the draft's t, when
	// longer. A bucket that says t=1 s would have the pace swing with
	// every answer; the requests that wait for slots take a while to
	// follow a new rate.
	paceSpread = 3 * time.Second
	// paceGrow is how fast the rate grows while r stands at the most
	// seen, per second: the quota refills faster than it is spent, by
	// how much r cannot say.
	paceGrow = 0.1
)

// fieldsRate is the fields' rate at now, 0 when none is in force: the
// rate steered by the units left, under a policy, until fieldsUntil; or
// r per t, until t.
func (p *paced) fieldsRate(now time.Time) float64 {
	if p.limit > 0 && now.Before(p.fieldsUntil) || now.Before(p.quotaUntil) {
		return p.quota
	}
	return 0
}

// stale ends, at now, a pace steered under a policy whose fields no
// answer has brought since fieldsUntil (a host that sends them on its
// 429s alone, say): what they said is old news, and the rate they set,
// one the host took, becomes a plateau to probe past, as after a
// throttle, so that the pace lifts as a throttle's does. The probe
// starts when they went stale, not when a request next looks, so that
// Stats, which reads a copy, and the requests see the same pace. A rate
// below paceFloor (a policy of a day's quota) is probed from the floor,
// as a throttle's cut is, its last slot taken anew at it: from a rate
// near zero, the probe would take hours to lift it, and the slot would
// stay a day away.
func (p *paced) stale(now time.Time) {
	if p.limit == 0 || now.Before(p.fieldsUntil) {
		return
	}
	if p.wmax == 0 && p.quota > 0 {
		w := max(p.quota, paceFloor)
		if next := p.fieldsUntil.Add(slots(1, w)); w > p.quota && p.next.After(next) {
			p.next = next
		}
		p.wmax, p.rate, p.probe = w, w, paceC
		p.since = p.fieldsUntil.Add(-paceRegrow) // at the plateau: the probe starts then
	}
	p.quota, p.limit, p.quotaR, p.quotaUntil = 0, 0, 0, time.Time{}
}

// fields sets rule's pace from what an answer's rate-limit fields say at
// now, of an attempt sent at sent (or that took its send slot then):
// r units left until t, a spent quota saying r=0, and q units per w
// seconds, which caps the rate. rate is the rate the host's callers ask
// for, sent or not. An answer that says nothing changes nothing. What
// the fields say stays in force at most keep (the policy's
// maxServerDelay) past now, unless another answer brings them again: a
// server cannot pace a host for longer than the policy would wait for
// it, as it cannot hold one (a t of years read once paced the host for
// years).
//
// The fields pace a rule that is not paced yet when the quota would not
// last at rate: under a policy, when rate is above q per w or the quota
// ran out (a spent quota, which cuts the rate as a throttle would, from
// rate); without one, when rate is above r per t, as the fields read
// alone say, and the pace is then r per t.
func (ps *paces) fields(rule string, now, sent time.Time, q quota, rate float64, keep time.Duration) {
	spent := q.left && q.r == 0
	if !q.left && q.limit == 0 || spent && q.limit == 0 {
		return // a spent quota without a policy is a hold's, not a pace's
	}
	t := max(q.t, time.Second) // whole seconds, rounded up: 0 is under one
	left := float64(q.r) / t.Seconds()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	i := ps.find(rule)
	if i < 0 {
		switch {
		case q.limit > 0 && !spent && rate <= q.limit,
			q.limit == 0 && rate <= left:
			return // the quota lasts at the rate asked: nothing to pace
		}
		i = ps.add(rule)
		p := &ps.list[i]
		p.next = now
		if q.limit > 0 {
			p.quota = min(max(rate, paceFloor), q.limit)
		}
	}
	p := &ps.list[i]
	if q.limit > 0 {
		p.limit = q.limit
	}
	r := p.heard(q)
	left = r / t.Seconds()
	switch {
	case !q.left:
	case p.limit == 0:
		if p.fieldsRate(now) > 0 {
			left = paceSmooth*left + (1-paceSmooth)*p.quota
		}
		// No floor: r per t is what the host allows, however few (a
		// throttle's floor is for a rate the client guessed).
		p.quota = left
	default:
		p.steer(now, sent, r, t, rate)
	}
	if q.left {
		p.quotaR, p.quotaUntil = r, now.Add(min(t, keep))
	}
	// Under a policy, the steered rate stays in force while answers
	// bring the fields, and for as long again as they spread the units
	// over (the hold a spent quota sets lasts until t).
	p.fieldsUntil = now.Add(max(min(t, keep), paceSpread))
}

// heard returns the units left that q says, as the pace takes them: no
// more than the most that two answers in a row said before, unless the
// answer before this one said as much; and it keeps that most (top). A
// quota's units rise past what answers said before only at a refill,
// which the answers after it say again; one answer's made-up r (a quota
// in the trillions) counts as no more than the others said, and is never
// the most seen, which would otherwise stand for as long as the pace
// lasts: under a policy holding the rate at its floor (see steer),
// without one setting a rate the host never allowed. 0 when q says
// nothing of the units left.
func (p *paced) heard(q quota) float64 {
	if !q.left {
		return 0
	}
	said := float64(q.r)
	if !p.heardAny {
		p.heardAny, p.lastR = true, said
		return said
	}
	r := min(said, max(p.top, p.lastR))
	if said > 0 {
		r = max(r, 1) // not spent, as it said: after a spent quota, a refill
	}
	p.top = max(p.top, min(said, p.lastR))
	p.lastR = said
	return r
}

// steer moves the fields' rate for r units left until t, read at now
// from the answer to an attempt sent at sent, under a policy of p.limit
// per second, the rate at which the quota refills.
//
// A spent quota (r=0) is a throttle: it cuts the rate to paceBeta of
// itself, once per round, as throttle does. Otherwise, once per
// paceStep, the sharers' spend is read from the fall of r since the last
// step, the quota refilling at its rate meanwhile, and the rate is
// scaled by the square root of the share of it that the quota takes:
// paceMargin below its rate, plus the units above half the most seen
// (top) spread over t, or paceSpread if longer. The square root moves it
// half the way (in ratio), as the spend read is that of slots taken
// before the last step. While r stands at the top the fall reads
// nothing (the quota refilled past it): the rate grows by paceGrow a
// second. A fall of the rate starts the schedule of slots again at once.
func (p *paced) steer(now, sent time.Time, r float64, t time.Duration, asked float64) {
	if p.quota == 0 { // paced by a throttle until now: its rate
		p.quota = min(max(p.rateAt(now), paceFloor), p.limit)
	}
	switch {
	case r == 0:
		p.throttled = now
		if !sent.Before(p.cut) {
			p.quota = max(p.quota*paceBeta, paceFloor)
			p.restart(now, min(p.quota, p.limit))
		}
		p.level, p.levelAt = 0, now
		return
	case p.levelAt.IsZero():
		p.level, p.levelAt = r, now
		return
	}
	dt := now.Sub(p.levelAt).Seconds()
	if dt < paceStep.Seconds() {
		return
	}
	spend := max(p.limit-(r-p.level)/dt, paceFloor)
	aim := p.limit*(1-paceMargin) + (r-p.top/2)/max(t.Seconds(), paceSpread.Seconds())
	f := math.Sqrt(max(aim, paceFloor) / spend)
	if r >= p.top && r >= p.level {
		f = max(f, 1+paceGrow*dt)
	}
	// A rate far above what the key's callers ask for does not hold them
	// back, and scaled would not lower their spend: it is scaled from
	// paceLift times the rate asked, at most.
	rate := min(max(min(p.quota, paceLift*asked)*f, paceFloor), p.limit)
	if rate < p.quota {
		p.restart(now, rate)
	}
	p.quota, p.level, p.levelAt = rate, r, now
}
