package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/benchmarks"
)

// overloadBench names the results of BenchmarkOverload:
// overloadBench/scenario/contender.
const overloadBench = "BenchmarkOverload"

// overloadName is the name of the results of c in sc.
func overloadName(sc benchmarks.Scenario, c benchmarks.Contender) string {
	return overloadBench + "/" + sc.Name + "/" + c.Name
}

// ostat is unit's Stat for c in sc. A run with no recovery (reported
// as -1) is slower than any that recovered, so it counts as an infinite
// recovery, which sorts last.
func (r report) ostat(sc benchmarks.Scenario, c benchmarks.Contender, unit string) Stat {
	name := overloadName(sc, c)
	if unit != "recovery-s" {
		return r.runs.stat(name, unit)
	}
	runs := Runs{}
	for _, m := range r.runs[name] {
		if v, ok := m[unit]; ok {
			if v < 0 {
				v = inf
			}
			runs[name] = append(runs[name], map[string]float64{unit: v})
		}
	}
	return runs.stat(name, unit)
}

// contending returns the contenders with results in sc.
func (r report) contending(sc benchmarks.Scenario) []benchmarks.Contender {
	var out []benchmarks.Contender
	for _, c := range benchmarks.Contenders() {
		if len(r.runs[overloadName(sc, c)]) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// column is how the tables head and write one of the scenarios' metrics
// (benchmarks.Metric's Unit).
type column struct {
	head string
	f    func(float64) string
}

var columns = map[string]column{
	"goodput/s":           {"goodput /s", rate},
	"attempts/s":          {"attempts at the host /s", rate},
	"429-frac":            {"429s, of attempts", share},
	"attempts/req":        {"attempts per request", ratio3},
	"p99-ms":              {"p99, caller", millis},
	"host-p99-ms":         {"p99, host", millis},
	"refused-frac":        {"refused by the client", share},
	"deadline-frac":       {"past the deadline", share},
	"recovery-s":          {"recovery", recovery},
	"drop-goodput/s":      {"goodput during the loss /s", rate},
	"outage-attempts/req": {"attempts per request in the outage", ratio3},
}

// columnOf is unit's column, or one headed by the unit itself.
func columnOf(unit string) column {
	if c, ok := columns[unit]; ok {
		return c
	}
	return column{unit, func(v float64) string { return fmt.Sprintf("%.4g", v) }}
}

func rate(v float64) string { return fmt.Sprintf("%.1f", v) }

// share writes a share in [0, 1] as a percentage, to a hundredth of a
// percent where it is read against targets of 1% and 5%.
func share(v float64) string {
	switch p := 100 * v; {
	case p == 0:
		return "0%"
	case p < 10:
		return fmt.Sprintf("%.2f%%", p)
	default:
		return fmt.Sprintf("%.1f%%", p)
	}
}

// recovery writes a recovery time in seconds, negative or infinite for
// none.
func recovery(v float64) string {
	if v < 0 || math.IsInf(v, 1) {
		return "none in the run"
	}
	return fmt.Sprintf("%.1f s", v)
}

// writeOverload writes the overload section: the contenders, a table per
// scenario with its target, and the pace and admission charts.
func (r report) writeOverload(w io.Writer, date string) error {
	fmt.Fprintln(w, "## Overload: pace and admission")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Scripted hosts and clients in virtual time (`testing/synctest`, `%s` in `benchmarks/`): a 40 s scenario runs in a fraction of a second, and no figure depends on the machine's speed. Each client is a process of its own (its own Transport, budget, pace and limit) unless a scenario shares a Fleet. Measured on %s; each cell is the median of the runs, with their range where they differ: goroutines woken at the same virtual instant run in a different order in each run, which moves many figures a little.\n\n", overloadBench, date)
	scs := benchmarks.Scenarios()
	if len(r.contending(scs[0])) == 0 {
		fmt.Fprintln(w, "Not measured in this run.")
		fmt.Fprintln(w)
		return nil
	}
	var rows [][]string
	for _, c := range benchmarks.Contenders() {
		rows = append(rows, []string{c.Label, strings.Join(c.Notes, "; ")})
	}
	table(w, []string{"contender", "set up as"}, rows)
	fmt.Fprintln(w, "Goodput is the requests answered 2xx per second; the 429s are a share of the attempts the host saw; attempts per request count every attempt of each request started in the window, whenever it came (a request refused by the client counts 0); refused by the client is the share of requests failed without being sent on (paced, held, shed or throttled); recovery is the time from the end of the trouble until every 100 ms step holds 80% of the offered rate. The targets are those of DESIGN.md (\"Pace and admission\"); the last column says whether each retryhttp row meets its scenario's, by the medians of its runs (and whether every run did), and names the figures that miss; S2 and S3 judge the Transport with admission alone, the one their targets are set for.")
	fmt.Fprintln(w)
	after := map[string]func(io.Writer) error{"S5-bare": r.writePaceChart, "S3-collapse": r.writeAdmissionChart}
	for _, sc := range scs {
		r.writeScenario(w, sc)
		if chart := after[sc.Name]; chart != nil {
			if err := chart(w); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeScenario writes sc's target and table.
func (r report) writeScenario(w io.Writer, sc benchmarks.Scenario) {
	t := targets[sc.Name]
	fmt.Fprintf(w, "### %s\n\n", upperFirst(sc.Title))
	fmt.Fprintf(w, "%s %s (`%s/%s`).\n\n", t.host, describeLoad(sc), overloadBench, sc.Name)
	if t.text != "" {
		fmt.Fprintf(w, "Target: %s%s\n\n", t.text, r.asideOf(sc, t.aside))
	}
	cs := r.contending(sc)
	if len(cs) == 0 {
		fmt.Fprintln(w, "Not measured in this run.")
		fmt.Fprintln(w)
		return
	}
	var shown []benchmarks.Metric
	for _, m := range sc.Metrics {
		if !isCount(m.Unit) {
			shown = append(shown, m)
		}
	}
	head := []string{"contender"}
	for _, m := range shown {
		head = append(head, columnOf(m.Unit).head)
	}
	head = append(head, "target")
	var rows [][]string
	for _, c := range cs {
		row := []string{c.Label}
		for _, m := range shown {
			row = append(row, spread(r.ostat(sc, c, m.Unit), columnOf(m.Unit).f))
		}
		verdict := ""
		if t.judges(c) {
			verdict = r.verdict(sc, c, t)
		}
		rows = append(rows, append(row, verdict))
	}
	table(w, head, rows)
}

// describeLoad says what sc's clients send, for how long, and where its
// figures are read, as a sentence with no full stop.
func describeLoad(sc benchmarks.Scenario) string {
	var groups []string
	for _, g := range sc.Load {
		clients, each := fmt.Sprintf("%d clients", g.Clients), " each"
		if g.Clients == 1 {
			clients, each = "one client", ""
		}
		if g.Rate > 0 {
			groups = append(groups, fmt.Sprintf("%s at %g requests per second%s", clients, g.Rate, each))
		} else {
			groups = append(groups, fmt.Sprintf("%s shared by %d callers, each sending its next request when the last ends", clients, g.Callers))
		}
		groups[len(groups)-1] += fmt.Sprintf(", under a %v deadline", g.Deadline)
	}
	out := fmt.Sprintf("Load: %s, for %v; rates read from %v to %v", strings.Join(groups, "; "), sc.Duration, sc.Window.From, sc.Window.To)
	if sc.Trouble != (benchmarks.Window{}) {
		out += fmt.Sprintf("; the trouble from %v to %v", sc.Trouble.From, sc.Trouble.To)
	}
	return out
}

// target is what DESIGN.md asks of retryhttp in one scenario: its words,
// the figures that judge it, and what it says of another contender.
type target struct {
	// host describes the scenario's host, as a sentence.
	host string
	// text is the target as the design states it; bounds check it.
	text   string
	bounds []bound
	aside  *aside
	// only names the contenders the design sets the target for (S2 and
	// S3: a Transport with admission); none means every retryhttp one.
	only []string
}

// judges reports whether t sets a target for c, so that c's row gets a
// verdict: a row held to a target the design never set it would read
// as a miss.
func (t target) judges(c benchmarks.Contender) bool {
	if len(t.bounds) == 0 || !strings.HasPrefix(c.Name, "retryhttp") {
		return false
	}
	return len(t.only) == 0 || slices.Contains(t.only, c.Name)
}

// withAdmission is the contender the targets of S2 and S3 are about.
var withAdmission = []string{"retryhttp-admission"}

// bound is one figure of a target: unit's median within [lo, hi]; with
// perBare, lo and hi are multiples of bare net/http's median in the
// same scenario. name names the figure in a verdict.
type bound struct {
	unit, name string
	lo, hi     float64
	perBare    bool
}

// aside is a figure the design gives for a contender beside retryhttp,
// written with what the run measured.
type aside struct {
	contender, unit, want string
}

// Figures of the scenarios that their targets are stated against.
var (
	bucketRate = float64(benchmarks.BucketRate)
	s3Capacity = 8 * float64(time.Second) / float64(benchmarks.S3Service)
	s3Unloaded = float64(benchmarks.S3Service) / float64(time.Millisecond)
	inf        = math.Inf(1)
)

// bucketHost describes S1's and S5's host.
func bucketHost(how string) string {
	return fmt.Sprintf("A rate limit shared by every client: a bucket of %d requests per second (burst %d), each answer after %v; the excess answered 429 %s.",
		benchmarks.BucketRate, benchmarks.BucketBurst, benchmarks.HostLatency, how)
}

// s1Target is S1's target with a floor on goodput and a cap on 429s,
// as shares of the limit and of the attempts.
func s1Target(how string, goodput, throttles float64) target {
	return target{host: bucketHost(how),
		text: fmt.Sprintf("the zero Transport's goodput at least %g%% of the limit (%g per second), and 429s at most %g%% of the attempts the host sees.",
			100*goodput, goodput*bucketRate, 100*throttles),
		bounds: []bound{{"goodput/s", "goodput", goodput * bucketRate, inf, false}, {"429-frac", "429s", 0, throttles, false}},
		aside:  &aside{"static", "429-frac", "50% or more"}}
}

func s5Target(how string) target {
	return target{host: bucketHost(how),
		text:   "the host sees at most 115 attempts per second, and goodput is at least 90 per second.",
		bounds: []bound{{"attempts/s", "attempts", 0, 115, false}, {"goodput/s", "goodput", 90, inf, false}}}
}

// targets are the design's, by scenario name.
var targets = map[string]target{
	"S0-healthy": {host: fmt.Sprintf("A healthy host far from its capacity, with a heavy tail (%v, or %v for %g%% of answers).", benchmarks.TailFast, benchmarks.TailSlow, 100*benchmarks.TailSlowRate),
		text:   "nothing paced, nothing shed (no request refused by the client), and a p99 within 5% of bare net/http's.",
		bounds: []bound{{"refused-frac", "refused", 0, 0, false}, {"p99-ms", "p99", 0, 1.05, true}}},
	"S1-retry-after": s1Target("with `Retry-After: 1`", 0.9, 0.05),
	"S1-ratelimit":   s1Target("with the `RateLimit` and `RateLimit-Policy` fields on every answer", 0.95, 0.01),
	"S1-bare":        s1Target("with nothing else", 0.9, 0.05),
	"S5-retry-after": s5Target("with `Retry-After: 1`"),
	"S5-bare":        s5Target("with nothing else"),
	"S2-metastable": {host: "A host of 8 workers at 10 ms each (800 per second) that loses 4 of them during the trouble, and keeps working on requests whose caller gave up.",
		text:   "with admission, goodput back to the offered rate within 2 s of the workers' return, at most 1.1 attempts per request.",
		bounds: []bound{{"recovery-s", "recovery", 0, 2, false}, {"attempts/req", "attempts", 0, 1.1, false}},
		aside:  &aside{"static", "recovery-s", "does not recover within the run"}, only: withAdmission},
	"S3-collapse": {host: fmt.Sprintf("A host of 8 workers at %v each (%g per second) that never refuses: its queue grows.", benchmarks.S3Service, s3Capacity),
		text: fmt.Sprintf("with admission, goodput within the deadline at least 90%% of capacity (%g per second), and the host's p99 for admitted attempts at most twice its unloaded latency (%g ms).",
			0.9*s3Capacity, 2*s3Unloaded),
		bounds: []bound{{"goodput/s", "goodput", 0.9 * s3Capacity, inf, false}, {"host-p99-ms", "host p99", 0, 2 * s3Unloaded, false}},
		only:   withAdmission},
	"S4-outage": {host: fmt.Sprintf("A host answering 503 throughout the trouble and 200 otherwise, each answer after %v; each client keeps its own budget.", benchmarks.HostLatency),
		text:   "independent clients stay near 2.0 attempts per request during the outage (each sporadic client retries its first 503 once, on a full budget); pace and admission must not make that worse: at most 2.0.",
		bounds: []bound{{"outage-attempts/req", "attempts", 0, 2, false}}},
	"S4-fleet": {host: fmt.Sprintf("The host of S4, answering 503 throughout the trouble and 200 otherwise, each answer after %v; the clients share one Fleet.", benchmarks.HostLatency),
		text:   "sharing a Fleet, at most 1.05 attempts per request during the outage, and goodput back within 1 s of its end.",
		bounds: []bound{{"outage-attempts/req", "attempts", 0, 1.05, false}, {"recovery-s", "recovery", 0, 1, false}}},
}

// asideOf writes a, with what the run measured, or nothing.
func (r report) asideOf(sc benchmarks.Scenario, a *aside) string {
	if a == nil {
		return ""
	}
	c, ok := findContender(a.contender)
	if !ok {
		return ""
	}
	return fmt.Sprintf(" (%s: %s; measured: %s)", c.Label, a.want, median(r.ostat(sc, c, a.unit), columnOf(a.unit).f))
}

// findContender returns the contender named name.
func findContender(name string) (benchmarks.Contender, bool) {
	for _, c := range benchmarks.Contenders() {
		if c.Name == name {
			return c, true
		}
	}
	return benchmarks.Contender{}, false
}

// verdict says whether c's median run in sc meets t: "met", "met by the
// median, not in every run (...)", or "not met (...)", naming the
// figures that miss.
func (r report) verdict(sc benchmarks.Scenario, c benchmarks.Contender, t target) string {
	var missed, shaky []string
	for _, b := range t.bounds {
		lo, hi := b.lo, b.hi
		if b.perBare {
			bare, _ := findContender("bare")
			base := r.ostat(sc, bare, b.unit)
			if base.N == 0 {
				missed = append(missed, b.name+": no baseline")
				continue
			}
			lo, hi = lo*base.Med, hi*base.Med
		}
		in := func(v float64) bool { return v >= lo && v <= hi }
		switch s := r.ostat(sc, c, b.unit); {
		case s.N == 0:
			missed = append(missed, b.name+": not measured")
		case !in(s.Med):
			missed = append(missed, b.name)
		case !in(s.Min) || !in(s.Max):
			shaky = append(shaky, b.name)
		}
	}
	switch {
	case len(missed) > 0:
		return "not met (" + strings.Join(missed, ", ") + ")"
	case len(shaky) > 0:
		return "met by the median, not in every run (" + strings.Join(shaky, ", ") + ")"
	}
	return "met"
}
