package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/retryhttp/retryhttp/benchmarks"
)

// tailRun is one heavy-tail benchmark of the hedge-budget section.
type tailRun struct {
	bench, name string
	spec        benchmarks.Spec
}

// tailRuns are the heavy-tail benchmarks, by name and by what a reader
// calls them.
var tailRuns = []tailRun{
	{"Tail", "heavy tail", benchmarks.TailSpec()},
	{"TailShortDelay", "heavy tail, 1 ms fixed delay", benchmarks.ShortDelaySpec()},
	{"TailShift", "shift: fast answers from 2 ms to 15 ms", benchmarks.TailSpec()},
}

// Targets of the hedge budget (DESIGN.md, "Hedging within a load
// budget"): p99 at most this share of bare net/http's, for at most the
// budget in extra load.
const tailTarget = 0.05

// extraLoad writes an extra load given in percent: to a hundredth of a
// percent where it is read against a budget of a few percent.
func extraLoad(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%+.0f%%", v)
	}
	return fmt.Sprintf("%+.2f%%", v)
}

// loadCap says, for a table, what caps a hedger's extra load under s.
func loadCap(p benchmarks.Peer, s benchmarks.Spec) string {
	switch {
	case p.Caps.LoadBudget:
		return fmt.Sprintf("%g%% of requests", 100*s.MaxExtraLoad)
	case p.Caps.Hedges && p.Caps.Budget && p.Library == "failsafe-go":
		return fmt.Sprintf("%g of executions in flight (min 3)", s.MaxExtraLoad)
	}
	return none
}

// writeHedgeBudget writes the hedge-budget tables and chart.
func (r report) writeHedgeBudget(w io.Writer) error {
	l, s := benchmarks.Full.Tail, benchmarks.TailSpec()
	fmt.Fprintln(w, "## Hedging within a load budget")
	fmt.Fprintf(w, "\nThe heavy tail above (%d GETs from %d goroutines, %v answers with %.0f%% at %v), through every way each hedger sets its delay, with and without a cap on the extra load: retryhttp's `maxExtraLoad: %g` (`policy.Hedge.MaxExtraLoad`), alone (the delay then follows the host's latency at the start of its tail) and beside a fixed delay, and failsafe-go's budget at the same rate. Three runs: the delays of the tail spec (`BenchmarkTail`); a fixed delay of 1 ms, under every answer, for the hedgers whose delay is fixed (`BenchmarkTailShortDelay`); and a host whose fast answers slow from %v to %v once it has seen half as many arrivals as there are requests (`BenchmarkTailShift`). Extra load is the server requests per request minus 1. Each cell is the median of the runs with their range.\n\n",
		l.Requests, l.Workers, benchmarks.TailFast, 100*benchmarks.TailSlowRate, benchmarks.TailSlow, s.MaxExtraLoad,
		benchmarks.TailFast, benchmarks.TailShifted)
	fmt.Fprintf(w, "Targets: p99 at most %g of bare net/http's with at most %g%% extra load, and no shift able to push the extra load past the budget.\n\n", tailTarget, 100*s.MaxExtraLoad)
	if len(r.takingOf(tailRuns[0].bench, r.hedgers)) == 0 {
		fmt.Fprintln(w, "Not measured in this run.")
		fmt.Fprintln(w)
		return nil
	}
	for _, tr := range tailRuns {
		ps := r.takingOf(tr.bench, r.hedgers)
		fmt.Fprintf(w, "%s (`Benchmark%s`):\n\n", upperFirst(tr.name), tr.bench)
		var rows [][]string
		for _, p := range ps {
			delay := none
			if p.Caps.Hedges {
				delay = p.Delay.Describe(tr.spec)
			}
			rows = append(rows, []string{p.Label, delay, loadCap(p, tr.spec),
				spread(r.stat(tr.bench, p, "p50-ms"), millis), spread(r.stat(tr.bench, p, "p99-ms"), millis),
				spread(r.stat(tr.bench, p, "p99.9-ms"), millis), spread(r.stat(tr.bench, p, "extra%"), extraLoad)})
		}
		table(w, []string{"peer", "delay", "load cap", "p50", "p99", "p99.9", "extra load"}, rows)
	}
	r.writeVerdicts(w)
	return r.chart(w, r.hedgeChart(), "hedge-budget", "p99 and extra load of each hedger, with and without a load budget")
}

// writeVerdicts writes whether the runs meet the two targets: p99 and
// extra load on the heavy tail for the hedger whose delay comes from its
// budget (against bare's median p99, by the median run and by the
// slowest; the extra load of the highest run), and the extra load of
// every hedger under a load budget in every run (the highest run).
func (r report) writeVerdicts(w io.Writer) {
	bare, _ := benchmarks.Find("bare")
	budget := 100 * benchmarks.TailSpec().MaxExtraLoad
	tail := tailRuns[0]
	base := r.stat(tail.bench, bare, "p99-ms")
	for _, p := range r.hedgers {
		p99, extra := r.stat(tail.bench, p, "p99-ms"), r.stat(tail.bench, p, "extra%")
		if p.Delay != benchmarks.DelayBudget || p99.N == 0 || extra.N == 0 || base.N == 0 {
			continue
		}
		limit := tailTarget * base.Med
		verdict := "not met"
		switch {
		case extra.Max > budget:
		case p99.Max <= limit:
			verdict = "met in every run"
		case p99.Med <= limit:
			verdict = "met by the median, not in every run"
		}
		fmt.Fprintf(w, "- p99 at most %g of bare's with at most %g%% extra load (%s, %s): p99 %s, %.3f of bare's %s (the slowest of %d runs: %s, %.3f); extra load %s, at most %s: %s.\n",
			tailTarget, budget, p.Label, tail.name, millis(p99.Med), p99.Med/base.Med, millis(base.Med),
			p99.N, millis(p99.Max), p99.Max/base.Med, extraLoad(extra.Med), extraLoad(extra.Max), verdict)
	}
	worst, where := math.Inf(-1), ""
	for _, tr := range tailRuns {
		for _, p := range r.hedgers {
			if e := r.stat(tr.bench, p, "extra%"); p.Caps.LoadBudget && e.N > 0 && e.Max > worst {
				worst, where = e.Max, fmt.Sprintf("%s, %s", p.Label, tr.name)
			}
		}
	}
	if where != "" {
		fmt.Fprintf(w, "- Extra load within the %g%% budget in every run, whatever sets the delay, the shift included: the highest is %s (%s): %s.\n",
			budget, extraLoad(worst), where, met(worst <= budget))
	}
	fmt.Fprintln(w)
}

// met says whether a target is met.
func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

// hedgeChart is p99 and extra load for every hedger in every tail run,
// side by side.
func (r report) hedgeChart() pair {
	ps := r.takingOf(tailRuns[0].bench, r.hedgers)
	left := chart{xlabel: "p99, ms (median of runs)", cats: labels(ps)}
	right := chart{xlabel: "extra load, % of requests (median of runs)", cats: labels(ps)}
	for _, tr := range tailRuns {
		vs, ls := r.medians(tr.bench, "p99-ms", ps, millis)
		left.series = append(left.series, series{tr.name, vs, notRun(ls)})
		vs, ls = r.medians(tr.bench, "extra%", ps, extraLoad)
		right.series = append(right.series, series{tr.name, vs, notRun(ls)})
	}
	bare, _ := benchmarks.Find("bare")
	if b := r.stat(tailRuns[0].bench, bare, "p99-ms"); b.N > 0 {
		left.marks = []mark{{tailTarget * b.Med, fmt.Sprintf("target: %g of bare's p99", tailTarget)}}
	}
	right.marks = []mark{{100 * benchmarks.TailSpec().MaxExtraLoad, fmt.Sprintf("budget: %g%% of requests", 100*benchmarks.TailSpec().MaxExtraLoad)}}
	return pair{title: "Hedging on a heavy tail: the p99 and the load it costs", left: left, right: right}
}

// notRun replaces in labels the mark of a missing figure by words, which
// read better beside an empty bar.
func notRun(labels []string) []string {
	for i, l := range labels {
		if l == none {
			labels[i] = "not run"
		}
	}
	return labels
}

// upperFirst returns s with its first letter in upper case.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
