package policy

import (
	"strconv"
	"time"
)

// Pace is the switch, set in [Config.Pace], that paces hosts: from the
// first throttle of a host's requests of a rule on (a 429; a 503 with a
// server delay; a response the Transport's classifier calls Throttled),
// every attempt of that host and rule, first attempts included, takes a
// send slot from a rate that the throttles set: a throttle cuts it to 0.7
// of the rate sent, and it grows back, within two seconds (or, after a
// throttle that set a longer hold, by the hold's end), to a little below
// what the host served since the last cut, then probes past it along
// a cubic curve (as the AWS SDKs' adaptive retry mode and TCP CUBIC do),
// slowly after a throttle that set a hold, as each probe that finds the
// limit then costs the hold; once throttles stop, the host and rule are
// unpaced again.
//
// Rate-limit fields that announce the host's quota set the rate too. With
// a RateLimit-Policy item (q units per w seconds, which also caps the
// rate), the pace starts when the quota runs out or the rate sent passes
// q per w, and steers by the units left that RateLimit's r says: it reads
// how fast the clients sharing the quota spend it from how fast r falls,
// and scales its own rate so that their sum keeps r from running out,
// however many they are, while answers bring the fields; once they stop,
// the pace probes past that rate and lifts as after a throttle. Without a policy, a RateLimit item with r above
// 0 and a t allows at most r requests before t, spread over it. A
// [DelayHeader] with Remaining gives r, and its reset t.
//
// An attempt waits for its slot when that comes within its deadline and
// [Config.MaxServerDelay], leaving time for the answer before the
// deadline (the rule's answers' smoothed latency), and otherwise fails at
// once, nothing sent, with the Transport's paced error: a slot spent on an
// answer that comes too late would waste the host's quota; an attempt
// whose slot came while it waited in line for a concurrency slot
// ([Admission]) is refused so too when that wait left no time for the
// answer. A hold ([Hold]) stays what it is; when it ends, the requests it
// kept go out at the pace.
//
// The zero Pace, {} in JSON, turns pacing on, as a nil Config.Pace does;
// Off turns it off.
type Pace struct {
	// Off, when true, turns pacing off. JSON: "off".
	Off bool
}

func (p *Pace) off() bool { return p.Off }

// defaultPace is the Pace of Default, in force where a Config's Pace is
// nil: hosts paced.
func defaultPace() *Pace { return &Pace{} }

// Admission, set in [Config.Admission], gives each host a concurrency
// limit that adapts to it, so that a host that slows down without
// refusing (a queue, a lost worker, a pause) is sent no more than it can
// take, and can recover: the limit goes down when latency climbs above
// the host's unloaded latency or when more than a quarter of the
// attempts are lost (a throttle, a 429 or a 503 with a server delay; a
// plain 503; a timeout; a reset), and up while neither happens, between 1
// and MaxConcurrency. Another 5xx moves it neither way: sporadic errors
// of a host far from its capacity do not shrink it. Every attempt,
// retries and hedges included, holds a slot while it is in flight; an attempt past the limit waits for a slot
// up to MaxWait and within its deadline, or fails at once, nothing sent,
// with the Transport's shed error. A throttle is lost work, never a fast
// success: a 429 gives no latency sample, and raises neither the limit
// nor a hedging delay.
//
// Admission is off unless set: nil means none. The zero Admission, {} in
// JSON, turns it on with the defaults.
type Admission struct {
	// MaxConcurrency is the highest the limit goes, and where it starts.
	// Zero means [DefaultMaxConcurrency]. JSON: "maxConcurrency".
	MaxConcurrency int
	// MaxWait is the longest an attempt past the limit waits for a slot
	// before it fails. Zero means [DefaultMaxWait]; a negative MaxWait
	// means no wait: an attempt past the limit fails at once. JSON:
	// "maxWait", a duration string, negative ("-1s") for no wait.
	MaxWait time.Duration
}

// Defaults of an [Admission].
const (
	DefaultMaxConcurrency = 1000
	DefaultMaxWait        = 500 * time.Millisecond
)

// maxMaxConcurrency bounds an Admission's MaxConcurrency: a limit beyond
// it would limit nothing a client can send.
const maxMaxConcurrency = 1 << 20

// Concurrency returns a's MaxConcurrency, or its default.
func (a *Admission) Concurrency() int {
	if a.MaxConcurrency <= 0 {
		return DefaultMaxConcurrency
	}
	return a.MaxConcurrency
}

// Wait returns a's MaxWait, or its default; 0 for a negative MaxWait.
func (a *Admission) Wait() time.Duration {
	switch {
	case a.MaxWait < 0:
		return 0
	case a.MaxWait == 0:
		return DefaultMaxWait
	}
	return a.MaxWait
}

func (a *Admission) validate(p path) error {
	if a.MaxConcurrency < 0 || a.MaxConcurrency > maxMaxConcurrency {
		return &FieldError{Field: p.key("maxConcurrency", "MaxConcurrency").String(), Value: strconv.Itoa(a.MaxConcurrency),
			Reason: "must be in [1, " + strconv.Itoa(maxMaxConcurrency) + "], or 0 for the default " + strconv.Itoa(DefaultMaxConcurrency)}
	}
	return nil
}
