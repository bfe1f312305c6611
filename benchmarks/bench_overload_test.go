package benchmarks

import "testing"

// BenchmarkOverload runs each overload scenario (S0-S5, [Scenarios]) once
// per iteration with each contender that can run it ([Contenders]), in
// virtual time, and reports the scenario's figures ([Scenario.Metrics])
// for the last run. ns/op is the real time a run took to work through
// its scenario's virtual time, not the scenario's length. Run it with
// -benchtime 1x; with -v, each run's bubble also prints a line of its
// own.
func BenchmarkOverload(b *testing.B) {
	for _, sc := range Scenarios() {
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
			})
		}
	}
}
