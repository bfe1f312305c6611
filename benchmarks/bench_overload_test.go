package benchmarks

import (
	"flag"
	"testing"
)

// overloadScale shrinks or stretches BenchmarkOverload's scenarios
// ([Scenario.Scaled]), to try cmd/figures quickly: its figures are then
// not the design's.
var overloadScale = flag.Float64("overload.scale", 1, "run BenchmarkOverload's scenarios at this `share` of their length")

// BenchmarkOverload runs each overload scenario (S0-S5, [Scenarios]) once
// per iteration with each contender that can run it ([Contenders]), in
// virtual time, and reports the scenario's figures ([Scenario.Metrics])
// for the last run. For a scenario with a trouble, it also logs the last
// run's series ([FormatSeries], at [SeriesStep]), which go test prints
// after the result line: the data of a goodput-over-time chart. ns/op is
// the real time a run took to work through its scenario's virtual time,
// not the scenario's length. Run it with -benchtime 1x; with -v, each
// run's bubble also prints a line of its own. -overload.scale runs the
// scenarios at a share of their length.
func BenchmarkOverload(b *testing.B) {
	if f := *overloadScale; !(f > 0) || f > 100 {
		b.Fatalf("-overload.scale %v: want a share in (0, 100]", f)
	}
	for _, sc := range Scenarios() {
		if *overloadScale != 1 {
			sc = sc.Scaled(*overloadScale)
		}
		for _, c := range Contenders() {
			if !c.Runs(sc) {
				continue
			}
			b.Run(sc.Name+"/"+c.Name, func(b *testing.B) {
				var t Trial
				for b.Loop() {
					inBubble(b, func() { t = sc.Run(c) })
				}
				for _, m := range sc.Metrics {
					b.ReportMetric(m.Of(t), m.Unit)
				}
				if sc.Trouble != (Window{}) {
					b.Log(FormatSeries(b.Name(), SeriesStep, t.Series(SeriesStep)))
				}
			})
		}
	}
}
