package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// table writes a markdown table.
func table(w io.Writer, header []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(header, " | "))
	fmt.Fprintf(w, "|%s\n", strings.Repeat(" --- |", len(header)))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
	fmt.Fprintln(w)
}

// none stands in a cell for a figure that was not measured.
const none = "—"

// spread writes s's median with f, and its range when the runs differ.
func spread(s Stat, f func(float64) string) string {
	if s.N == 0 {
		return none
	}
	if s.N == 1 || f(s.Min) == f(s.Max) {
		return f(s.Med)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.Med), f(s.Min), f(s.Max))
}

// median writes s's median with f.
func median(s Stat, f func(float64) string) string {
	if s.N == 0 {
		return none
	}
	return f(s.Med)
}

func count(v float64) string { return fmt.Sprintf("%.0f", v) }

func ratio(v float64) string { return fmt.Sprintf("%.2f", v) }

func percent(v float64) string { return fmt.Sprintf("%.1f%%", v) }

func millis(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2f s", v/1000)
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f ms", v)
	}
	return fmt.Sprintf("%.1f ms", v)
}

// bytesOf writes a byte count in B, KiB or MiB.
func bytesOf(v float64) string {
	switch {
	case v < 1<<10:
		return fmt.Sprintf("%.0f B", v)
	case v < 1<<20:
		return fmt.Sprintf("%.1f KiB", v/(1<<10))
	case v < 100<<20 && v != math.Trunc(v/(1<<20))*(1<<20):
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	}
	return fmt.Sprintf("%.0f MiB", v/(1<<20))
}

// nanos writes a time in ns in the unit that suits it.
func nanos(v float64) string {
	switch {
	case v < 1e3:
		return fmt.Sprintf("%.0f ns", v)
	case v < 1e6:
		return fmt.Sprintf("%.1f µs", v/1e3)
	case v < 1e9:
		return fmt.Sprintf("%.1f ms", v/1e6)
	}
	return fmt.Sprintf("%.2f s", v/1e9)
}

// orZero is v, or 0 where v is not a number, for charts.
func orZero(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
