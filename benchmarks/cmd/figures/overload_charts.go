package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/retryhttp/retryhttp/benchmarks"
)

// scenario returns the scenario named name.
func scenario(name string) (benchmarks.Scenario, bool) {
	i := slices.IndexFunc(benchmarks.Scenarios(), func(sc benchmarks.Scenario) bool { return sc.Name == name })
	if i < 0 {
		return benchmarks.Scenario{}, false
	}
	return benchmarks.Scenarios()[i], true
}

// paceRuns are the scenarios of the pace chart, by what its legend calls
// them.
var paceRuns = []struct{ scenario, name string }{
	{"S1-retry-after", "S1, Retry-After: 1"},
	{"S1-ratelimit", "S1, RateLimit fields"},
	{"S1-bare", "S1, bare 429"},
	{"S5-retry-after", "S5, Retry-After: 1"},
	{"S5-bare", "S5, bare 429"},
}

// contenderLabels returns the contenders' labels.
func contenderLabels(cs []benchmarks.Contender) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Label
	}
	return out
}

// omedians returns unit's median for each contender in sc, times scale,
// 0 where missing, and each one written with f.
func (r report) omedians(sc benchmarks.Scenario, unit string, cs []benchmarks.Contender, scale float64, f func(float64) string) ([]float64, []string) {
	vs, ls := make([]float64, len(cs)), make([]string, len(cs))
	for i, c := range cs {
		s := r.ostat(sc, c, unit)
		vs[i], ls[i] = scale*orZero(s.Med), notRun([]string{median(s, f)})[0]
	}
	return vs, ls
}

// writePaceChart draws S1 and S5: goodput and the share of 429s, per
// contender, with the targets.
func (r report) writePaceChart(w io.Writer) error {
	first, _ := scenario(paceRuns[0].scenario)
	cs := r.contending(first)
	left := chart{xlabel: "goodput per second (median of runs)", cats: contenderLabels(cs),
		marks: []mark{{90, "target: 90 per second (S1, S5)"}, {95, "target, S1 with the fields: 95"}}}
	pct := func(v float64) string { return fmt.Sprintf("%g%%", v) }
	right := chart{xlabel: "429s, % of attempts (log scale)", cats: contenderLabels(cs),
		log:   &logAxis{floor: 0.1, label: pct},
		marks: []mark{{5, "target: at most 5% (S1)"}, {1, "target, S1 with the fields: 1%"}}}
	for _, pr := range paceRuns {
		sc, ok := scenario(pr.scenario)
		if !ok {
			return fmt.Errorf("no scenario %s", pr.scenario)
		}
		vs, ls := r.omedians(sc, "goodput/s", cs, 1, rate)
		left.series = append(left.series, series{pr.name, vs, ls})
		vs, ls = r.omedians(sc, "429-frac", cs, 100, share)
		right.series = append(right.series, series{pr.name, vs, ls})
	}
	title := fmt.Sprintf("A rate limit of %d per second shared by every client: S1, 10 clients at 20 per second; S5, 20 callers in a closed loop", benchmarks.BucketRate)
	return r.chart(w, pair{title: title, left: left, right: right}, "pace", "goodput and the share of 429s under a shared rate limit, per contender")
}

// admissionLines are the contenders drawn over S2's time, the first on
// top.
var admissionLines = []string{"retryhttp-admission", "failsafe-limiter", "retryhttp", "static"}

// writeAdmissionChart draws goodput over S2's time, the loss of workers
// shaded, above S3's goodput and host p99 per contender.
func (r report) writeAdmissionChart(w io.Writer) error {
	s2, _ := scenario("S2-metastable")
	s3, _ := scenario("S3-collapse")
	var fig stack
	if over := r.overTime(s2); len(over.lines) > 0 {
		fig = append(fig, over)
	}
	cs := r.contending(s3)
	ms := func(v float64) string {
		if v >= 1000 {
			return fmt.Sprintf("%g s", v/1000)
		}
		return fmt.Sprintf("%g ms", v)
	}
	left := chart{xlabel: "goodput within the deadline, per second", cats: contenderLabels(cs),
		marks: []mark{{0.9 * s3Capacity, fmt.Sprintf("target: %g per second", 0.9*s3Capacity)}}}
	vs, ls := r.omedians(s3, "goodput/s", cs, 1, rate)
	left.series = []series{{"goodput", vs, ls}}
	right := chart{xlabel: "host p99 (log scale)", cats: contenderLabels(cs),
		log:   &logAxis{floor: 1, label: ms},
		marks: []mark{{2 * s3Unloaded, fmt.Sprintf("target: %g ms", 2*s3Unloaded)}}}
	vs, ls = r.omedians(s3, "host-p99-ms", cs, 1, millis)
	right.series = []series{{"host p99", vs, ls}}
	fig = append(fig, pair{title: fmt.Sprintf("S3: 1.5 times a capacity of %g per second, never refused", s3Capacity), left: left, right: right})
	return r.chart(w, fig, "admission", "goodput over time through a loss of workers, and goodput and host latency past capacity, per contender")
}

// overTime is the chart of goodput over sc's time for admissionLines,
// from the series of their first runs; it has no lines when the output
// held none. The series give the run's length, to a step: a run shorter
// than the scenario's (-quick) has its trouble shaded where it was.
func (r report) overTime(sc benchmarks.Scenario) timeChart {
	for _, name := range admissionLines {
		c, _ := findContender(name)
		if s := r.series[overloadName(sc, c)]; len(s) > 1 && sc.Duration > 0 {
			sc = sc.Scaled(float64(time.Duration(len(s))*(s[1].At-s[0].At)) / float64(sc.Duration))
			break
		}
	}
	tc := timeChart{
		title:  fmt.Sprintf("S2: %g requests per second offered to 8 workers, 4 of them lost from %v to %v", sc.Offered(), sc.Trouble.From, sc.Trouble.To),
		xlabel: "seconds since the start", ylabel: fmt.Sprintf("goodput, answers 2xx per second (%v steps)", benchmarks.SeriesStep),
		shade: shade{sc.Trouble.From.Seconds(), sc.Trouble.To.Seconds(), "4 of 8 workers lost"},
		marks: []mark{{sc.Offered(), fmt.Sprintf("offered: %g per second", sc.Offered())}}}
	for _, name := range admissionLines {
		c, ok := findContender(name)
		s := r.series[overloadName(sc, c)]
		if !ok || len(s) < 2 {
			continue
		}
		step := s[1].At - s[0].At
		xys := make(plotter.XYs, len(s))
		for i, p := range s {
			xys[i] = plotter.XY{X: (p.At + step/2).Seconds(), Y: p.Goodput}
		}
		tc.lines = append(tc.lines, timeLine{c.Label, xys})
	}
	return tc
}
