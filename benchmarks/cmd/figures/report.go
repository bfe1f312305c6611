package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/retryhttp/retryhttp/benchmarks"
)

// report turns parsed benchmark runs into markdown and charts.
type report struct {
	runs Runs
	// dir is the docs directory; charts go to dir/benchmarks/.
	dir string
	// peers are those of every scenario; hedgers, those of the
	// heavy-tail scenarios.
	peers, hedgers []benchmarks.Peer
	// series are those the overload benchmarks logged.
	series Series
}

// chartDir is where the charts go, under the docs directory.
const chartDir = "benchmarks"

// stat is unit's Stat for peer in benchmark bench ("Outage",
// "Success/GET").
func (r report) stat(bench string, p benchmarks.Peer, unit string) Stat {
	return r.runs.stat("Benchmark"+bench+"/"+p.Name, unit)
}

// ran reports whether peer p has results in benchmark bench.
func (r report) ran(bench string, p benchmarks.Peer) bool {
	return len(r.runs["Benchmark"+bench+"/"+p.Name]) > 0
}

// taking returns the peers with results in bench.
func (r report) taking(bench string) []benchmarks.Peer { return r.takingOf(bench, r.peers) }

// takingOf returns those of ps with results in bench.
func (r report) takingOf(bench string, ps []benchmarks.Peer) []benchmarks.Peer {
	var out []benchmarks.Peer
	for _, p := range ps {
		if r.ran(bench, p) {
			out = append(out, p)
		}
	}
	return out
}

// labels returns the peers' labels.
func labels(ps []benchmarks.Peer) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Label
	}
	return out
}

// medians returns unit's median for each peer in bench, 0 where missing,
// and each one written with f.
func (r report) medians(bench, unit string, ps []benchmarks.Peer, f func(float64) string) ([]float64, []string) {
	vs, ls := make([]float64, len(ps)), make([]string, len(ps))
	for i, p := range ps {
		s := r.stat(bench, p, unit)
		vs[i], ls[i] = orZero(s.Med), median(s, f)
	}
	return vs, ls
}

// chart saves c (a chart or a pair) as name.png and links it from w.
func (r report) chart(w io.Writer, c interface{ save(path string) error }, name, alt string) error {
	rel := chartDir + "/" + name + ".png"
	if err := c.save(filepath.Join(r.dir, rel)); err != nil {
		return err
	}
	fmt.Fprintf(w, "![%s](%s)\n\n", alt, rel)
	return nil
}

// leftOut writes which peers have no results in bench, and why.
func (r report) leftOut(w io.Writer, bench string, why func(benchmarks.Peer) string) {
	var out []string
	for _, p := range r.peers {
		if !r.ran(bench, p) {
			out = append(out, fmt.Sprintf("%s (%s)", p.Label, why(p)))
		}
	}
	if len(out) > 0 {
		fmt.Fprintf(w, "Left out: %s.\n\n", strings.Join(out, "; "))
	}
}

// writePeers writes what each peer is set up with and cannot express.
func (r report) writePeers(w io.Writer) {
	fmt.Fprintln(w, "## The peers")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every peer is built from the same spec per scenario (attempts, backoff, statuses, hedge delay, budget); `go test ./...` in `benchmarks/` checks each mapping on scripted servers. What a peer cannot express is left out, not imitated:")
	fmt.Fprintln(w)
	all := benchmarks.AllPeers()
	var rows [][]string
	for _, p := range all {
		rows = append(rows, []string{p.Label, strings.Join(p.Notes, "; "), benchmarks.Lacks(p, all)})
	}
	table(w, []string{"peer", "how the spec is mapped", "cannot express"}, rows)
}

// writeSpecs writes the specs the scenarios use.
func writeSpecs(w io.Writer) {
	fmt.Fprintln(w, "The specs:")
	fmt.Fprintln(w)
	var rows [][]string
	for _, s := range []struct {
		name string
		spec benchmarks.Spec
	}{
		{"everyday (success path, upload, Retry-After, keep-alive)", benchmarks.EverydaySpec()},
		{"load (outage, flaky)", benchmarks.LoadSpec()},
		{"tail (heavy tail, its shift)", benchmarks.TailSpec()},
		{"short delay (heavy tail)", benchmarks.ShortDelaySpec()},
	} {
		sp := s.spec
		delay, load := sp.HedgeDelay.String(), none
		if sp.HedgeQuantile > 0 {
			delay += fmt.Sprintf(", or the %g quantile", sp.HedgeQuantile)
		}
		if sp.MaxExtraLoad > 0 {
			load = fmt.Sprintf("%g%% of requests", 100*sp.MaxExtraLoad)
		}
		rows = append(rows, []string{s.name, fmt.Sprint(sp.MaxAttempts),
			fmt.Sprintf("%v ×%g to %v, ±%g", sp.InitialBackoff, sp.Multiplier, sp.MaxBackoff, sp.Jitter),
			fmt.Sprint(sp.Statuses), delay, load,
			fmt.Sprintf("%g tokens, ratio %g (share %.2f)", sp.Throttle.MaxTokens, sp.Throttle.TokenRatio, sp.BudgetShare())})
	}
	table(w, []string{"spec", "attempts", "backoff", "statuses", "hedge delay", "hedge budget", "budget"}, rows)
}
