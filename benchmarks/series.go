package benchmarks

import "time"

// Sample is one step of a run's series: rates per second over
// [At, At+step).
type Sample struct {
	At time.Duration
	// Goodput counts the answers 2xx that came in the step, Attempts the
	// attempts that reached the host in it, Throttled those of them the
	// host answered 429 or 503.
	Goodput, Attempts, Throttled float64
}

// Series returns t's rates step by step from the run's start to the end
// of its load (the last step may be cut short by it, and is scaled to
// its length): the data of a goodput-over-time chart. A step of zero or
// less returns nil.
func (t Trial) Series(step time.Duration) []Sample { return t.series(0, step) }

// series is Series from the time from on.
func (t Trial) series(from, step time.Duration) []Sample {
	end := t.Scenario.Duration
	if step <= 0 || end <= from {
		return nil
	}
	out := make([]Sample, (end-from+step-1)/step)
	for i := range out {
		out[i].At = from + time.Duration(i)*step
	}
	index := func(at time.Duration) int {
		if at < from || at >= end {
			return -1
		}
		return int((at - from) / step)
	}
	for _, r := range t.Requests {
		if i := index(r.End); i >= 0 && r.OK() {
			out[i].Goodput++
		}
	}
	for _, a := range t.Attempts {
		if i := index(a.Arrived); i >= 0 {
			out[i].Attempts++
			if a.Status == 429 || a.Status == 503 {
				out[i].Throttled++
			}
		}
	}
	for i := range out {
		secs := min(step, end-out[i].At).Seconds()
		out[i].Goodput /= secs
		out[i].Attempts /= secs
		out[i].Throttled /= secs
	}
	return out
}

// RecoveryStep is the step over which [Trial.Recovery] reads goodput,
// and RecoveryShare the share of the offered rate it must reach: 80%, as
// the first step after a trouble lacks the answers still in flight at its
// end (10% of a step at 10 ms of latency), and the load's jitter moves a
// request or two from one step to the next.
const (
	RecoveryStep  = 100 * time.Millisecond
	RecoveryShare = 0.8
)

// Recovery is the time from the end of the scenario's trouble until
// goodput is back at the offered rate: the steps of [RecoveryStep] are
// counted from the trouble's end, and goodput is back at the start of the
// first step after which every whole step to the end of the load has a
// goodput of at least [RecoveryShare] of the offered rate. It reports
// false when that never happens within the run, or when the scenario has
// no trouble or no open load.
func (t Trial) Recovery() (time.Duration, bool) {
	from, want := t.Scenario.Trouble.To, RecoveryShare*t.Scenario.Offered()
	if from <= 0 || want <= 0 {
		return 0, false
	}
	s := t.series(from, RecoveryStep)
	if n := len(s); n > 0 && s[n-1].At+RecoveryStep > t.Scenario.Duration {
		s = s[:n-1] // a step cut short is too short to read a rate from
	}
	back := len(s)
	for back > 0 && s[back-1].Goodput >= want {
		back--
	}
	if back == len(s) {
		return 0, false
	}
	return s[back].At - from, true
}
