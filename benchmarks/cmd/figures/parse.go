package main

import (
	"bufio"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/retryhttp/retryhttp/benchmarks"
)

// Runs holds, for each benchmark name (its -GOMAXPROCS suffix dropped),
// the metrics of each of its result lines, unit to value.
type Runs map[string][]map[string]float64

// procSuffix is the -GOMAXPROCS suffix go test adds to benchmark names.
var procSuffix = regexp.MustCompile(`-\d+$`)

// parse reads go test -bench output and keeps the result lines: a name
// starting with Benchmark, an iteration count, then value-unit pairs.
func parse(r io.Reader) (Runs, error) {
	runs := Runs{}
	sc := lines(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		m := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				m = nil
				break
			}
			m[f[i+1]] = v
		}
		if m != nil {
			exact(m)
			name := procSuffix.ReplaceAllString(f[0], "")
			runs[name] = append(runs[name], m)
		}
	}
	return runs, sc.Err()
}

// exact puts in m, for each "P-attempts" and "P-requests" it has, the
// ratio of the two as "P-attempts/req": go test prints a metric to four
// figures, so that a ratio of 2.0004 reads 2.000 and passes a bound of
// 2, while it prints a count of a thousand or more whole.
func exact(m map[string]float64) {
	for unit, attempts := range m {
		p, ok := strings.CutSuffix(unit, "-attempts")
		if requests := m[p+"-requests"]; ok && requests > 0 {
			m[p+"-attempts/req"] = attempts / requests
		}
	}
}

// isCount reports whether unit is one of the counts exact makes a ratio
// from, which the tables do not show: the ratio says it.
func isCount(unit string) bool {
	return strings.HasSuffix(unit, "-attempts") || strings.HasSuffix(unit, "-requests")
}

// Stat is the median and range of one metric over a benchmark's runs.
type Stat struct {
	Med, Min, Max float64
	N             int
}

// stat returns unit's Stat over the runs of name; N is 0 when there are
// none.
func (r Runs) stat(name, unit string) Stat {
	var vs []float64
	for _, m := range r[name] {
		if v, ok := m[unit]; ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return Stat{}
	}
	slices.Sort(vs)
	med := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		med = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	return Stat{Med: med, Min: vs[0], Max: vs[len(vs)-1], N: len(vs)}
}

// maxLine is the longest line the parsers read: a series of a few
// hundred steps takes a few KiB.
const maxLine = 1 << 20

// lines scans r line by line, up to maxLine each.
func lines(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxLine)
	return sc
}

// Series holds, for each benchmark name (its -GOMAXPROCS suffix
// dropped), the series that its first run logged
// ([benchmarks.FormatSeries]).
type Series map[string][]benchmarks.Sample

// parseSeries reads the series logged in go test -bench output.
func parseSeries(r io.Reader) (Series, error) {
	out := Series{}
	sc := lines(r)
	for sc.Scan() {
		name, s, ok := benchmarks.ParseSeries(sc.Text())
		if !ok {
			continue
		}
		name = procSuffix.ReplaceAllString(name, "")
		if _, seen := out[name]; !seen {
			out[name] = s
		}
	}
	return out, sc.Err()
}
