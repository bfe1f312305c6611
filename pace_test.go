package retryhttp

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/internal/tokens"
)

// take takes rule's next slot at now with no deadline, and returns when
// it comes.
func take(t *testing.T, ps *paces, rule string, now time.Time) time.Time {
	t.Helper()
	at, _, ok := ps.take(rule, now, time.Time{}, time.Time{})
	require.True(t, ok, "without a deadline every slot is taken")
	return at
}

// A pace hands out send slots one interval apart, each attempt moving the
// schedule on; the fields' quota may be drawn on in a small run first.
func TestPaceSlots(t *testing.T) {
	now := time.Now()
	var ps paces
	assert.Equal(t, now, take(t, &ps, "r", now), "unpaced: at once")
	ps.throttle("r", now, now, 10, 0, time.Time{}) // sent at 10/s: cut to 7/s
	f := ps.get("r", now, 10)
	require.InDelta(t, 7, f.rate, 1e-6)
	interval := time.Duration(float64(time.Second) / f.rate)
	for i := range 4 {
		at := take(t, &ps, "r", now)
		assert.Equal(t, now.Add(time.Duration(i)*interval), at, "slot %d", i)
	}
	assert.Equal(t, now, take(t, &ps, "other", now), "another rule is not paced")

	// The fields' r per t, drawn on up to a tenth of r at once.
	var fs paces
	fs.fields("r", now, now, quota{left: true, r: 50, t: 10 * time.Second}, 20, time.Minute)
	g := fs.get("r", now, 20)
	assert.InDelta(t, 5, g.rate, 1e-9)
	assert.InDelta(t, 5, g.burst, 1e-9)
	for i := range 5 {
		assert.Equal(t, now, take(t, &fs, "r", now), "slot %d of the run", i)
	}
	assert.Equal(t, now.Add(200*time.Millisecond), take(t, &fs, "r", now), "then one per interval")
}

// A throttle cuts the rate to 0.7 of the rate sent, or of the pace's, and
// of at most three times what the host served; it grows back to 0.95 of
// that within about 5 s, then past it, slowly; a throttle of an attempt
// that took its slot before the last cut cuts nothing.
func TestPaceCutsAndGrowsBack(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name         string
		sent, served float64
		want         float64
	}{
		{"from the rate sent", 100, 0, 70},
		{"capped by what was served", 100, 20, 42},
		{"never under the floor", 0.1, 0, paceFloor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ps paces
			ps.throttle("r", now, now, tc.sent, tc.served, time.Time{})
			assert.InDelta(t, tc.want, ps.get("r", now, tc.sent).rate, 1e-6)
		})
	}
	var ps paces
	ps.throttle("r", now, now, 100, 0, time.Time{})
	p := ps.list[0]
	back := now.Add(paceRegrow)
	assert.InDelta(t, 95, p.rateAt(back), 1e-6, "back at the target after paceRegrow")
	assert.Less(t, paceRegrow, 6*time.Second)
	assert.Greater(t, p.rateAt(back.Add(5*time.Second)), 95.0, "then past it")
	assert.Less(t, p.rateAt(back.Add(time.Second)), 95.5, "slowly")
	for _, d := range []time.Duration{0, time.Second, 2 * time.Second} {
		assert.Less(t, p.rateAt(now.Add(d)), p.rateAt(now.Add(d+time.Second)), "it grows from %v", d)
	}

	ps.throttle("r", now.Add(time.Second), now.Add(-time.Millisecond), 100, 0, time.Time{})
	assert.Equal(t, p.rateAt(now.Add(time.Second)), ps.list[0].rateAt(now.Add(time.Second)),
		"a throttle of an attempt sent before the cut cuts nothing")
	ps.throttle("r", now.Add(time.Second), now.Add(time.Millisecond), 100, 0, time.Time{})
	assert.Less(t, ps.list[0].rateAt(now.Add(time.Second)), p.rateAt(now.Add(time.Second)), "one sent after it does")
}

// A throttle after a second or more of answers grows back to a plateau
// just under what the host served since the last cut, per second it was
// not held (answers during the hold are not counted), kept between the
// rate cut to and paceTarget of the rate throttled; past a plateau so
// measured after a hold, the probe is slow. Without a measure, the
// plateau is paceTarget of the rate throttled.
func TestPaceMeasuredPlateau(t *testing.T) {
	now := time.Now()
	second := now.Add(3 * time.Second) // the second throttle
	for _, tc := range []struct {
		name  string
		hold  time.Duration // set by each throttle
		ok    int           // answers, spread over [now, second)
		at    time.Time     // of the second throttle
		want  func(w float64) float64
		probe float64
	}{
		{"measured after a hold", time.Second, 240, second, func(float64) float64 { return 0.98 * 160 / 2 }, paceCHeld},
		{"measured, no hold", 0, 240, second, func(float64) float64 { return 0.98 * 240 / 3 }, paceC},
		{"served less than the cut", time.Second, 90, second, func(w float64) float64 { return paceBeta * w }, paceCHeld},
		{"served more than the rate throttled", 0, 600, second, func(w float64) float64 { return paceTarget * w }, paceC},
		{"too soon to measure", 0, 240, now.Add(paceSpan / 2), func(w float64) float64 { return paceTarget * w }, paceC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ps paces
			ps.throttle("r", now, now, 100, 0, now.Add(tc.hold))
			for i := range tc.ok {
				at := now.Add(time.Duration(i) * 3 * time.Second / time.Duration(tc.ok))
				if at.Before(tc.at) {
					ps.answered("r", at, 10*time.Millisecond, true)
				}
				ps.answered("r", at, 10*time.Millisecond, false) // throttles count for nothing
			}
			w := ps.list[0].rateAt(tc.at)
			ps.throttle("r", tc.at, tc.at, 100, 0, tc.at.Add(tc.hold))
			p := ps.list[0]
			assert.InDelta(t, tc.want(w), p.wmax, 1e-6)
			assert.Equal(t, tc.probe, p.probe)
			assert.InDelta(t, paceBeta*w, p.rateAt(tc.at), 1e-6, "cut from the pace's rate")
			assert.InDelta(t, p.wmax, p.rateAt(tc.at.Add(paceRegrow)), 1e-6, "back at the plateau")
		})
	}
	var ps paces
	ps.throttle("r", now, now, 100, 0, time.Time{})
	p := ps.list[0]
	p.probe = paceCHeld
	plateau := now.Add(paceRegrow)
	assert.Less(t, p.rateAt(plateau.Add(6*time.Second)), 1.022*p.wmax, "a slow probe: about 2% in 6 s")
	assert.InDelta(t, 1.1*p.wmax, p.rateAt(plateau.Add(10*time.Second)), 1e-6, "10% in 10 s")
	assert.InDelta(t, 1.25*p.wmax, p.rateAt(plateau.Add(13*time.Second)), 1e-6, "then paceC's, started late")
	assert.InDelta(t, 3*p.wmax, p.rateAt(plateau.Add(18*time.Second)), 1e-6, "three times the plateau in 18 s")
}

// A pace that no longer holds the host back is lifted: its rate grew past
// 1.5 times the rate sent, with no throttle for a while; fields keep it
// while they are in force.
func TestPaceLifts(t *testing.T) {
	now := time.Now()
	var ps paces
	ps.throttle("r", now, now, 100, 0, time.Time{})
	assert.NotZero(t, ps.get("r", now.Add(time.Second), 100).rate, "still throttled recently")
	assert.NotZero(t, ps.get("r", now.Add(3*time.Second), 70).rate, "the pace still binds")
	assert.Zero(t, ps.get("r", now.Add(3*time.Second), 10).rate, "the host is sent far less than the pace lets")
	assert.Zero(t, ps.n.Load(), "and it is forgotten")

	ps.fields("r", now, now, quota{left: true, r: 1000, t: time.Minute}, 5, time.Minute)
	assert.Zero(t, ps.n.Load(), "a quota that lasts at the rate sent paces nothing")
	ps.fields("r", now, now, quota{left: true, r: 10, t: time.Minute}, 50, time.Minute)
	assert.NotZero(t, ps.get("r", now.Add(10*time.Second), 0).rate, "one that does not, until its t")
	assert.Zero(t, ps.get("r", now.Add(61*time.Second), 0).rate)

	ps.fields("r", now, now, quota{limit: 100}, 300, time.Minute)
	assert.InDelta(t, 100, ps.get("r", now, 300).rate, 1e-9, "a policy's q per w caps it")
	ps.clear()
	assert.Zero(t, ps.get("r", now, 300).rate, "clear lifts every pace")
}

// A pace whose send slots are taken more than a second ahead still holds
// requests back, however high its rate grew since: those slots were
// taken at a lower rate, and go at it. While its callers still ask for
// about as much as it lets go, it is not lifted until the schedule has
// caught up; once they ask for far less (they gave up, and nothing gives
// their slots back), it is.
func TestPaceWithSlotsTakenAheadStays(t *testing.T) {
	now := time.Now()
	var ps paces
	ps.throttle("r", now, now, 100, 0, time.Time{})
	later := now.Add(20 * time.Second) // the cubic has grown far past the plateau
	p := &ps.list[0]
	rate := p.rateAt(later)
	require.Greater(t, rate, 2*paceLift*p.wmax, "the rate grew past twice the lift")
	asked := rate // callers waiting up to their deadlines took slots that far ahead
	p.next = later.Add(2 * time.Second)
	assert.NotZero(t, ps.get("r", later, asked).rate, "slots taken 2 s ahead: still paced")
	p.next = later.Add(paceBooked / 2)
	assert.Zero(t, ps.get("r", later, asked).rate, "caught up: lifted")

	ps.throttle("r", now, now, 100, 0, time.Time{})
	ps.list[0].next = later.Add(time.Minute)
	assert.Zero(t, ps.get("r", later, 1).rate, "its callers gone: lifted, whatever slots they took")
}

// The fields' rate is smoothed over answers, so that one answer moves it
// by a tenth of the way.
func TestPaceFieldsSmooth(t *testing.T) {
	now := time.Now()
	var ps paces
	ps.fields("r", now, now, quota{left: true, r: 100, t: time.Second}, 1000, time.Minute)
	ps.fields("r", now, now, quota{left: true, r: 0 + 1, t: time.Second}, 1000, time.Minute)
	assert.InDelta(t, 0.1*1+0.9*100, ps.get("r", now, 1000).rate, 1e-9)
}

// A slot past the policy's maxServerDelay is not taken, however many
// requests passed the gate since it read the slots: each waits no longer
// than the policy waits for a server.
func TestPaceSlotPastTheLongestWaitIsNotTaken(t *testing.T) {
	now := time.Now()
	var ps paces
	ps.throttle("r", now, now, 10, 0, time.Time{}) // 7/s: a slot every 143 ms
	for range 8 {
		take(t, &ps, "r", now) // the slots of the first second, and the one at 1 s
	}
	next := ps.list[0].next
	at, _, ok := ps.take("r", now, time.Time{}, now.Add(time.Second))
	assert.False(t, ok, "the ninth slot, at 8/7 s, comes after the longest wait")
	assert.Equal(t, next, at)
	assert.Equal(t, next, ps.list[0].next, "and is not taken")
	at, _, ok = ps.take("r", now, time.Time{}, next)
	assert.True(t, ok, "a slot at the longest wait is taken")
	assert.Equal(t, next, at)
}

// A slot that leaves less than the rule's answer time before the deadline
// is not taken: the answer would come too late, and the slot goes to the
// next attempt.
func TestPaceSlotLeavesTimeForTheAnswer(t *testing.T) {
	now := time.Now()
	interval := time.Second / 7
	for _, tc := range []struct {
		name     string
		deadline time.Duration // from now, for the second slot
		ok       bool
	}{
		{"room for the answer", interval + 101*time.Millisecond, true},
		{"the answer would come just at the deadline", interval + 100*time.Millisecond, false},
		{"the slot itself past the deadline", interval, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ps paces
			ps.throttle("r", now, now, 10, 0, time.Time{}) // 7/s: a slot every 143 ms
			ps.answered("r", now, 100*time.Millisecond, true)
			require.Equal(t, now, take(t, &ps, "r", now))
			next := ps.list[0].next
			at, rate, ok := ps.take("r", now, now.Add(tc.deadline), time.Time{})
			assert.Equal(t, tc.ok, ok)
			assert.InDelta(t, 7, rate, 1e-6)
			assert.Equal(t, next, at, "the slot's time, taken or not")
			if !ok {
				assert.Equal(t, next, ps.list[0].next, "the slot is not taken")
			}
		})
	}
	var ps paces
	ps.throttle("r", now, now, 10, 0, time.Time{})
	ps.answered("r", now, 100*time.Millisecond, true)
	ps.answered("r", now, 200*time.Millisecond, true)
	assert.Equal(t, 100*time.Millisecond+100*time.Millisecond/8, ps.list[0].answer, "an eighth of the way")
	var unpaced paces
	unpaced.answered("r", now, time.Second, true)
	assert.Zero(t, unpaced.n.Load(), "an unpaced rule keeps nothing")
}

// The meter reads the rate of the window in progress, or of the last one
// just after a roll.
func TestMeter(t *testing.T) {
	now := time.Now()
	var m meter
	assert.Zero(t, m.rate(now, 0))
	assert.True(t, m.due(now))
	m.roll(now, 1) // the first attempt
	assert.False(t, m.due(now.Add(500*time.Millisecond)))
	assert.InDelta(t, 100, m.rate(now.Add(500*time.Millisecond), 50), 1e-9)
	m.roll(now.Add(time.Second), 201) // 200 in the second
	assert.InDelta(t, 200, m.rate(now.Add(time.Second+time.Millisecond), 201), 1e-9, "the last window's, just after a roll")
	assert.InDelta(t, 40, m.rate(now.Add(1500*time.Millisecond), 220), 1e-9)
	assert.False(t, math.IsNaN(m.rate(now.Add(time.Second), 201)))
}

// Under a policy, the fields pace a rule when the quota runs out or the
// rate sent is above q per w, not when r per t reads low: a bucket that
// says t in whole seconds would starve a lone client. A spent quota cuts
// the rate sent by paceBeta; without a policy it is left to the hold.
func TestPaceFieldsStart(t *testing.T) {
	now := time.Now()
	policy := func(r int64) quota { return quota{left: true, r: r, t: time.Second, limit: 100} }
	for _, tc := range []struct {
		name string
		q    quota
		rate float64
		want float64 // 0: unpaced
	}{
		{"r per t below the rate sent, the quota standing", policy(19), 50, 0},
		{"the quota spent", policy(0), 50, paceBeta * 50},
		{"the rate sent above q per w", policy(19), 300, 100},
		{"spent, without a policy", quota{left: true, t: time.Second}, 50, 0},
		{"r per t below the rate sent, without a policy", quota{left: true, r: 19, t: time.Second}, 50, 19},
		{"t under a second is a second", quota{left: true, r: 19}, 50, 19},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ps paces
			ps.fields("r", now, now.Add(-time.Millisecond), tc.q, tc.rate, time.Minute)
			assert.InDelta(t, tc.want, ps.get("r", now, tc.rate).rate, 1e-9)
		})
	}
}

// Under a policy of q per w, the rate steps once per paceStep by the
// square root of aim over spend: the sharers' spend read from the fall of
// r, the quota refilling at q per w; the aim paceMargin below q per w,
// plus the units above half the most seen spread over paceSpread. While
// r stands at the most seen it grows by paceGrow a second at least; it
// is scaled from at most paceLift times the rate sent, and capped at q
// per w. A fall starts the schedule of slots again.
func TestPaceFieldsSteer(t *testing.T) {
	now := time.Now()
	step := now.Add(paceStep)
	reading := func(r int64) quota { return quota{left: true, r: r, t: time.Second, limit: 100} }
	for _, tc := range []struct {
		name       string
		r0, r      int64   // at now, then at step
		sending    float64 // the rate sent, at step
		want       float64
		cutAtStep  bool
		afterSteps int // more steps with r standing at r
	}{
		{"r falls: the spend is above the quota", 16, 6, 20,
			20 * math.Sqrt((98+(6-8)/paceSpread.Seconds())/(100+10/paceStep.Seconds())), true, 0},
		{"r rises: the spend is below it", 6, 10, 20,
			20 * math.Sqrt((98+(10-8)/paceSpread.Seconds())/(100-4/paceStep.Seconds())), false, 0},
		{"r steady: aimed at q per w less the margin", 8, 8, 20, 20 * math.Sqrt(98.0/100), true, 0},
		{"r at the top: grows", 16, 16, 20, 20 * (1 + paceGrow*paceStep.Seconds()), false, 0},
		{"scaled from paceLift times the rate sent", 8, 8, 4, paceLift * 4 * math.Sqrt(98.0/100), true, 0},
		{"capped at q per w", 16, 16, 20, 100, false, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ps paces
			ps.fields("r", now, now, reading(tc.r0), 300, time.Minute) // above q per w: paced, at 100
			p := &ps.list[0]
			require.Equal(t, float64(tc.r0), p.level)
			p.quota, p.top = 20, 16 // the most units seen left
			ps.fields("r", step.Add(-time.Millisecond), now, reading(tc.r), tc.sending, time.Minute)
			assert.Equal(t, 20.0, p.quota, "once per paceStep")
			ps.fields("r", step, now, reading(tc.r), tc.sending, time.Minute)
			at := step
			for range tc.afterSteps {
				at = at.Add(paceStep)
				ps.fields("r", at, now, reading(tc.r), 1000, time.Minute)
			}
			assert.InDelta(t, tc.want, ps.get("r", at, tc.want).rate, 1e-9)
			assert.Equal(t, tc.cutAtStep, p.cut.Equal(step), "a fall starts the schedule again")
		})
	}
}

// A spent quota under a policy cuts the fields' rate once per round, as a
// throttle does; the rate so steered stays in force while no answer comes
// (during a hold), and lifts as a throttle's does, once it is well above
// the rate sent and no throttle came for paceQuiet.
func TestPaceFieldsSpentAndLift(t *testing.T) {
	now := time.Now()
	var ps paces
	ps.fields("r", now, now, quota{left: true, t: time.Second, limit: 100}, 40, time.Minute)
	p := &ps.list[0]
	require.InDelta(t, 28, p.quota, 1e-9, "paced by a spent quota")
	ps.fields("r", now.Add(time.Millisecond), now.Add(-time.Millisecond), quota{left: true, t: time.Second, limit: 100}, 40, time.Minute)
	assert.InDelta(t, 28, p.quota, 1e-9, "an attempt sent before the cut cuts nothing")
	ps.fields("r", now.Add(time.Second), now.Add(500*time.Millisecond), quota{left: true, t: time.Second, limit: 100}, 40, time.Minute)
	assert.InDelta(t, 0.7*28, p.quota, 1e-9, "one sent after it does")
	assert.Equal(t, now.Add(time.Second), p.cut)

	later := now.Add(3 * time.Second)
	assert.InDelta(t, 0.7*28, ps.get("r", later, 15).rate, 1e-9, "in force with no answer, past t")
	assert.Zero(t, ps.get("r", later, 10).rate, "lifted: the rate is well above the rate sent, and quiet")
}

// A pace the fields set under a policy goes stale when no answer brings
// them again (a host that sends them on its 429s alone): the rate they
// set becomes a plateau to probe past, and the pace lifts, even for a
// caller that sends as fast as the pace lets it.
func TestFieldsPaceGoesStale(t *testing.T) {
	now := time.Now()
	var ps paces
	ps.fields("r", now, now, quota{left: true, r: 0, t: time.Second, limit: 100}, 40, time.Minute) // spent: paced at 28
	require.InDelta(t, 28, ps.get("r", now, 28).rate, 1e-9)
	at := now
	for at.Sub(now) < 2*time.Minute {
		at = at.Add(10 * time.Millisecond)
		f := ps.get("r", at, 28)
		if f.rate == 0 {
			assert.Less(t, at.Sub(now), 30*time.Second, "lifted within seconds of the fields going stale")
			return
		}
		ps.answered("r", at, 10*time.Millisecond, true) // plain answers: no fields
	}
	t.Fatalf("still paced at %v after two minutes without fields", ps.get("r", at, 28).rate)
}

// A throttle cuts a pace the fields steer under a policy, once a round,
// as a spent quota does: a 429 with Retry-After alone, or a Throttled
// verdict, is no less a throttle there.
func TestThrottleCutsAFieldsPace(t *testing.T) {
	now := time.Now()
	var ps paces
	ps.fields("r", now, now, quota{left: true, r: 5, t: time.Second, limit: 20}, 300, time.Minute)
	before := ps.get("r", now.Add(time.Second), 20).rate
	ps.throttle("r", now.Add(time.Second), now.Add(900*time.Millisecond), 20, 20, now.Add(2*time.Second))
	after := ps.get("r", now.Add(1100*time.Millisecond), 20).rate
	assert.InDelta(t, before*paceBeta, after, 1e-9, "cut to 0.7")
	ps.throttle("r", now.Add(1200*time.Millisecond), now.Add(950*time.Millisecond), 20, 20, now.Add(2*time.Second))
	assert.InDelta(t, after, ps.get("r", now.Add(1300*time.Millisecond), 20).rate, 1e-9, "once a round: an attempt sent before the cut cuts nothing")
}

// A paced host is not idle: forgetting it would forget the rate its
// throttles taught, and the slots its requests wait for.
func TestPacedHostIsNotIdle(t *testing.T) {
	now := time.Now()
	h := newHostTable(nil, 16).get("api.test")
	assert.True(t, h.idle(tokens.Max, now), "a fresh host")
	h.paces.throttle("r", now, now, 100, 0, time.Time{})
	assert.False(t, h.idle(tokens.Max, now), "paced")
	h.paces.clear()
	assert.True(t, h.idle(tokens.Max, now), "the pace lifted")
}
