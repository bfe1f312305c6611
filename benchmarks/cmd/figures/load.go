package main

import (
	"fmt"
	"io"

	"github.com/retryhttp/retryhttp/benchmarks"
)

// writeStorm writes the outage and flaky tables and chart.
func (r report) writeStorm(w io.Writer) error {
	l := benchmarks.Full.Storm
	fmt.Fprintln(w, "## Outage and flaky server")
	fmt.Fprintf(w, "\n%d GETs from %d goroutines, over one pooled base per peer. Outage: every answer a 503 with a short body (`BenchmarkOutage`). Flaky: 10%% of answers 503, drawn from a seeded generator (`BenchmarkFlaky`). Server requests per request is what the server got over what callers sent; errors are requests that got no answer at all; connections are what the server accepted.\n\n", l.Requests, l.Workers)
	var rows [][]string
	for _, p := range r.peers {
		row := []string{p.Label}
		for _, b := range []string{"Outage", "Flaky"} {
			row = append(row, spread(r.stat(b, p, "srv-req/req"), ratio))
			if b == "Flaky" {
				row = append(row, spread(r.stat(b, p, "ok%"), percent))
			}
			row = append(row, spread(r.stat(b, p, "err%"), percent), spread(r.stat(b, p, "conns"), count))
		}
		rows = append(rows, row)
	}
	table(w, []string{"peer", "outage: server req/req", "errors", "connections",
		"flaky: server req/req", "answered 200", "errors", "connections"}, rows)
	out, outL := r.medians("Outage", "srv-req/req", r.peers, ratio)
	fl, flL := r.medians("Flaky", "srv-req/req", r.peers, ratio)
	c := chart{title: "Server requests per request", xlabel: "server requests / client request (median)",
		cats: labels(r.peers), series: []series{{"outage (all 503)", out, outL}, {"flaky (10% 503)", fl, flL}}}
	if err := r.chart(w, c, "storm", "server requests per request in an outage and on a flaky server"); err != nil {
		return err
	}
	out, outL = r.medians("Outage", "conns", r.peers, count)
	fl, flL = r.medians("Flaky", "conns", r.peers, count)
	c = chart{title: fmt.Sprintf("Connections opened for %d requests from %d goroutines", l.Requests, l.Workers),
		xlabel: "connections the server accepted (median)",
		cats:   labels(r.peers), series: []series{{"outage (all 503)", out, outL}, {"flaky (10% 503)", fl, flL}}}
	return r.chart(w, c, "storm-conns", "connections opened in an outage and on a flaky server")
}

// hedgersOnly says why a peer sat out the tail scenario.
func hedgersOnly(benchmarks.Peer) string { return "retries only" }

// writeTail writes the heavy-tail table and chart.
func (r report) writeTail(w io.Writer) error {
	l := benchmarks.Full.Tail
	fmt.Fprintln(w, "## Heavy tail")
	fmt.Fprintf(w, "\n%d GETs from %d goroutines; the server answers in %v, or in %v for %.0f%% of arrivals (seeded, hedges count as arrivals), and lets a cancelled request go at once (`BenchmarkTail`). Latency is until the body is read; each cell is the median of the runs with their range.\n\n",
		l.Requests, l.Workers, benchmarks.TailFast, benchmarks.TailSlow, 100*benchmarks.TailSlowRate)
	ps := r.taking("Tail")
	var rows [][]string
	for _, p := range ps {
		rows = append(rows, []string{p.Label,
			spread(r.stat("Tail", p, "p50-ms"), millis), spread(r.stat("Tail", p, "p99-ms"), millis),
			spread(r.stat("Tail", p, "p99.9-ms"), millis), spread(r.stat("Tail", p, "srv-req/req"), ratio),
			spread(r.stat("Tail", p, "conns"), count)})
	}
	table(w, []string{"peer", "p50", "p99", "p99.9", "server req/req", "connections"}, rows)
	r.leftOut(w, "Tail", hedgersOnly)
	c := chart{title: "Latency on a heavy tail (2% of answers 100× slower)", xlabel: "ms (median of runs)", cats: labels(ps)}
	for _, q := range []struct{ unit, name string }{{"p50-ms", "p50"}, {"p99-ms", "p99"}, {"p99.9-ms", "p99.9"}} {
		vs, ls := r.medians("Tail", q.unit, ps, millis)
		c.series = append(c.series, series{q.name, vs, ls})
	}
	return r.chart(w, c, "tail", "latency quantiles on a heavy tail")
}

// writeRetryAfter writes the Retry-After table and chart.
func (r report) writeRetryAfter(w io.Writer) error {
	fmt.Fprintln(w, "## Retry-After beyond the deadline")
	fmt.Fprintf(w, "\nOne GET under a %v context deadline; the server answers 429 with `Retry-After: 120` (`BenchmarkRetryAfter`).\n\n", benchmarks.Full.Deadline)
	var rows [][]string
	secs, ls := make([]float64, len(r.peers)), make([]string, len(r.peers))
	for i, p := range r.peers {
		what := r.outcome(p)
		t := r.stat("RetryAfter", p, "ms")
		rows = append(rows, []string{p.Label, what, spread(t, millis), spread(r.stat("RetryAfter", p, "srv-req"), count)})
		secs[i] = orZero(t.Med) / 1000
		ls[i] = what + " in " + median(t, millis)
	}
	table(w, []string{"peer", "caller gets", "after", "server requests"}, rows)
	c := chart{title: "Retry-After: 120 under a 2 s deadline", xlabel: "seconds until the caller gets an answer or an error (median)",
		cats: labels(r.peers), series: []series{{"time", secs, ls}}}
	return r.chart(w, c, "retry-after", "time to answer under Retry-After beyond the deadline")
}

// outcome says what the caller got in the Retry-After scenario, in the
// median run.
func (r report) outcome(p benchmarks.Peer) string {
	st, dl := r.stat("RetryAfter", p, "status"), r.stat("RetryAfter", p, "deadline")
	switch {
	case st.N == 0:
		return none
	case st.Med > 0:
		return fmt.Sprintf("the %.0f", st.Med)
	case dl.Med > 0:
		return "deadline error"
	}
	return "another error"
}

// writeKeepAlive writes the keep-alive table and chart.
func (r report) writeKeepAlive(w io.Writer) error {
	l := benchmarks.Full.KeepAlive
	fmt.Fprintln(w, "## Keep-alive under Client.Timeout")
	fmt.Fprintf(w, "\n%d GETs from %d goroutines through an `http.Client` with `Timeout` set (`BenchmarkKeepAlive`): connections the server accepted, over each peer's own default base transport, and over the same pooled base (16 idle connections per host) for all.\n\n", l.Requests, l.Workers)
	var rows [][]string
	for _, p := range r.peers {
		rows = append(rows, []string{p.Label,
			spread(r.stat("KeepAlive/default-base", p, "conns"), count),
			spread(r.stat("KeepAlive/pooled-base", p, "conns"), count),
			spread(r.stat("KeepAlive/default-base", p, "err%"), percent)})
	}
	table(w, []string{"peer", "own default base", "pooled base", "errors (default base)"}, rows)
	def, defL := r.medians("KeepAlive/default-base", "conns", r.peers, count)
	pool, poolL := r.medians("KeepAlive/pooled-base", "conns", r.peers, count)
	c := chart{title: fmt.Sprintf("Connections opened for %d GETs under Client.Timeout", l.Requests),
		xlabel: "connections (median)", cats: labels(r.peers),
		series: []series{{"own default base", def, defL}, {"pooled base", pool, poolL}}}
	return r.chart(w, c, "keepalive", "connections opened under Client.Timeout")
}
