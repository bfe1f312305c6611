package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The fleet figures come from redisfleet's BenchmarkFleet, run in its own
// module (see passes): the members, the store and the scenarios are
// written once, there, beside the tests that check them. Its results
// are named fleetBench/scenario/wiring/N=n/M=m.
const fleetBench = "BenchmarkFleet"

// fleetTarget is the design's bound on server requests per request in
// an outage with a Fleet, at every fleet size.
const fleetTarget = 1.01

// fleetRun is one scenario and wiring of BenchmarkFleet, by what a
// reader calls it.
type fleetRun struct{ scenario, wiring, name string }

var fleetRuns = []fleetRun{
	{"outage", "alone", "members alone"},
	{"outage", "fleet", "sharing a Fleet"},
	{"storedown", "fleet", "a Fleet, store down the first half"},
}

// fleetSize is one size of fleet: n members sending m requests each.
type fleetSize struct{ n, m int }

func (s fleetSize) bench(r fleetRun) string {
	return fmt.Sprintf("%s/%s/%s/N=%d/M=%d", fleetBench, r.scenario, r.wiring, s.n, s.m)
}

func (s fleetSize) String() string { return thousands(s.n) + " × " + thousands(s.m) }

// fleetSizes returns the sizes of fleet measured, fewest members first,
// as the results name them.
func (r report) fleetSizes() []fleetSize {
	var out []fleetSize
	for name := range r.runs {
		rest, ok := strings.CutPrefix(name, fleetBench+"/")
		f := strings.Split(rest, "/")
		if !ok || len(f) != 4 {
			continue
		}
		n, errN := strconv.Atoi(strings.TrimPrefix(f[2], "N="))
		m, errM := strconv.Atoi(strings.TrimPrefix(f[3], "M="))
		if errN == nil && errM == nil && !slices.Contains(out, fleetSize{n, m}) {
			out = append(out, fleetSize{n, m})
		}
	}
	slices.SortFunc(out, func(a, b fleetSize) int { return a.n - b.n })
	return out
}

// thousands writes n with a comma between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// writeFleet writes the fleet's table and chart, or says why there are
// none.
func (r report) writeFleet(w io.Writer) error {
	fmt.Fprintln(w, "## A fleet in an outage")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "N members send M requests each (10,000 in all) to a server that answers every request 503, each member a zero Transport (`policy.Default()`) over its own go-redis client, against a real `redis-server` on loopback. Members alone each keep their own budget; sharing a Fleet, each sets its `redisfleet` Fleet as `Transport.Fleet`; in the last run the store is stopped until half the requests have ended. Measured by the redisfleet module's `%s` (`cd redisfleet && go test -run XXX -bench Fleet -benchtime 1x .`, which also measures a flaky server and the success path's allocations); the members alone are counted exactly, so they run once, the Fleet runs three times (median and range).\n\n", fleetBench)
	sizes := r.fleetSizes()
	if len(sizes) == 0 {
		fmt.Fprintln(w, "Not measured in this run: the fleet needs `redis-server` in PATH (`apt-get install -y redis-server`).")
		fmt.Fprintln(w)
		return nil
	}
	var rows [][]string
	for _, s := range sizes {
		row := []string{s.String()}
		for _, fr := range fleetRuns {
			row = append(row, spread(r.runs.stat(s.bench(fr), "attempts/req"), ratio3))
		}
		for _, fr := range fleetRuns[:2] {
			row = append(row, spread(r.runs.stat(s.bench(fr), "extra/member"), decimal))
		}
		for _, fr := range fleetRuns[1:] {
			row = append(row, spread(r.runs.stat(s.bench(fr), "max-ms"), millis))
		}
		rows = append(rows, row)
	}
	table(w, []string{"N members × M requests", "alone: server req/req", "Fleet: server req/req", "Fleet, store down: server req/req",
		"extra attempts per member: alone", "Fleet", "slowest request: Fleet", "Fleet, store down"}, rows)
	var med, worst float64
	var at fleetSize
	for _, s := range sizes {
		st := r.runs.stat(s.bench(fleetRuns[1]), "attempts/req")
		med = max(med, st.Med)
		if st.Max > worst {
			worst, at = st.Max, s
		}
	}
	fmt.Fprintf(w, "Target: at most %g server requests per request with a Fleet, at every N. The highest median: %s (%s); the highest run: %s at %v (%s). With the store down, each member's own budget decides until it returns (compare the slowest requests).\n\n",
		fleetTarget, ratio3(med), met(med <= fleetTarget), ratio3(worst), at, met(worst <= fleetTarget))
	c := chart{title: "N members × M requests to a host that is down: server requests per request",
		xlabel: "server requests / client request (median)"}
	for _, s := range sizes {
		c.cats = append(c.cats, s.String())
	}
	for _, fr := range fleetRuns {
		var vs []float64
		var ls []string
		for _, s := range sizes {
			st := r.runs.stat(s.bench(fr), "attempts/req")
			vs, ls = append(vs, orZero(st.Med)), append(ls, median(st, ratio3))
		}
		c.series = append(c.series, series{fr.name, vs, ls})
	}
	return r.chart(w, c, "fleet", "server requests per request in an outage, members alone and sharing a Fleet")
}

func ratio3(v float64) string { return fmt.Sprintf("%.3f", v) }

// decimal writes v with as few decimals as it needs, at most three.
func decimal(v float64) string { return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64) }
