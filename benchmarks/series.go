package benchmarks

import (
	"math"
	"strconv"
	"strings"
	"time"
)

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

// SeriesStep is the step of the series that BenchmarkOverload logs for
// each run of a scenario with a trouble, through [FormatSeries]: fine
// enough to see a recovery within a second or two, coarse enough that
// each step holds a hundred answers or more at the scenarios' rates.
const SeriesStep = 250 * time.Millisecond

// seriesTag opens a series written by [FormatSeries].
const seriesTag = "series"

// The rates of a written series, by the key that names each.
var seriesRates = []struct {
	key string
	of  func(*Sample) *float64
}{
	{"goodput", func(s *Sample) *float64 { return &s.Goodput }},
	{"attempts", func(s *Sample) *float64 { return &s.Attempts }},
	{"throttled", func(s *Sample) *float64 { return &s.Throttled }},
}

// FormatSeries writes s, the series of benchmark name taken at step, as
// one line of text for the benchmark's log, which go test prints beside
// its results, so that the series travels with them in the raw output:
//
//	series NAME step=250ms goodput=640,636,... attempts=... throttled=...
//
// Each rate is per second, rounded to a hundredth. name must hold no
// white space; [ParseSeries] reads the line back.
func FormatSeries(name string, step time.Duration, s []Sample) string {
	var b strings.Builder
	b.WriteString(seriesTag + " " + name + " step=" + step.String())
	for _, r := range seriesRates {
		b.WriteString(" " + r.key + "=")
		for i := range s {
			if i > 0 {
				b.WriteByte(',')
			}
			v := *r.of(&s[i])
			if rounded := math.Round(v*100) / 100; !math.IsInf(rounded, 0) {
				v = rounded // a rate too large to round is written whole
			}
			b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
		}
	}
	return b.String()
}

// ParseSeries reads the series written by [FormatSeries] in line,
// wherever it starts (a log puts the file and line before it), with
// each sample's At set from the step. ok is false when line holds no
// series, or a malformed one: a step that is not a positive duration, a
// rate missing or not a finite number of at least 0, or rates of
// different lengths.
func ParseSeries(line string) (name string, s []Sample, ok bool) {
	f := strings.Fields(line)
	i := 0
	for i < len(f) && f[i] != seriesTag {
		i++
	}
	f = f[i:]
	if len(f) != 3+len(seriesRates) {
		return "", nil, false
	}
	v, ok := strings.CutPrefix(f[2], "step=")
	step, err := time.ParseDuration(v)
	if !ok || err != nil || step <= 0 {
		return "", nil, false
	}
	for k, r := range seriesRates {
		v, ok := strings.CutPrefix(f[3+k], r.key+"=")
		if !ok {
			return "", nil, false
		}
		var rates []string
		if v != "" {
			rates = strings.Split(v, ",")
		}
		if k == 0 {
			s = make([]Sample, len(rates))
		}
		if len(rates) != len(s) {
			return "", nil, false
		}
		for j, text := range rates {
			x, err := strconv.ParseFloat(text, 64)
			if err != nil || !(x >= 0) || math.IsInf(x, 0) {
				return "", nil, false
			}
			*r.of(&s[j]) = x
			s[j].At = time.Duration(j) * step
		}
	}
	return f[1], s, true
}
