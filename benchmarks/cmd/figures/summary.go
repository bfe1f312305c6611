package main

import (
	"fmt"
	"io"

	"github.com/retryhttp/retryhttp/benchmarks"
)

// writeSummary writes one row per peer with a headline figure of each
// scenario: the table for a README.
func (r report) writeSummary(w io.Writer) {
	fmt.Fprintln(w, "## Summary")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Medians of the runs; the sections below give the ranges and what each scenario is. %s marks a scenario a peer is not for.\n\n", none)
	bare, _ := benchmarks.Find("bare")
	floor := r.stat("Success/GET", bare, "allocs/op")
	var rows [][]string
	for _, p := range r.peers {
		allocs := r.stat("Success/GET", p, "allocs/op")
		extra := median(allocs, count)
		if allocs.N > 0 && floor.N > 0 && p.Name != bare.Name {
			extra += fmt.Sprintf(" (%+.0f)", allocs.Med-floor.Med)
		}
		outage := median(r.stat("Outage", p, "srv-req/req"), ratio)
		if e := r.stat("Outage", p, "err%"); e.N > 0 && e.Med > 0 {
			outage += fmt.Sprintf(" (%.0f%% errors)", e.Med)
		}
		rows = append(rows, []string{p.Label, extra, outage,
			median(r.stat("Outage", p, "conns"), count),
			median(r.stat("Flaky", p, "ok%"), percent),
			median(r.stat("Tail", p, "p99-ms"), millis),
			r.outcome(p) + " in " + median(r.stat("RetryAfter", p, "ms"), millis),
			median(r.stat("Upload/unknown-length", p, "B/op"), bytesOf),
		})
	}
	l := benchmarks.Full
	table(w, []string{"peer", "allocs per GET (vs bare)",
		fmt.Sprintf("outage: server requests per request (%d from %d)", l.Storm.Requests, l.Storm.Workers),
		"outage: connections", "10% 503s: answered 200", "heavy tail: p99",
		fmt.Sprintf("Retry-After: 120, %v deadline: caller gets", l.Deadline),
		fmt.Sprintf("%s streamed upload: allocated", bytesOf(float64(l.Upload)))}, rows)
}
