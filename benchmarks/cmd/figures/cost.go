package main

import (
	"fmt"
	"io"

	"github.com/retryhttp/retryhttp/benchmarks"
)

// successOps are the success-path operations, by benchmark name and by
// what a reader calls them.
var successOps = []struct{ bench, name string }{
	{"Success/GET", "GET"},
	{"Success/POST-1KiB", "POST 1 KiB"},
	{"Success/POST-1MiB", "POST 1 MiB"},
}

// sharesBody says why a peer sat out a body scenario.
func sharesBody(benchmarks.Peer) string { return "hedges share one body reader" }

// writeSuccess writes the success-path tables and charts.
func (r report) writeSuccess(w io.Writer) error {
	fmt.Fprintln(w, "## Success path")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every request answered 200 at once, one after another over a pooled connection (`BenchmarkSuccess`). Allocations and bytes are per request, the server's share included, so the bare net/http row is the floor. POSTs come from `http.NewRequest` with a `bytes.Reader`, which sets `GetBody`.")
	fmt.Fprintln(w)
	bare, _ := benchmarks.Find("bare")
	for _, op := range successOps {
		fmt.Fprintf(w, "%s:\n\n", op.name)
		floor := r.stat(op.bench, bare, "allocs/op")
		var rows [][]string
		for _, p := range r.taking(op.bench) {
			a := r.stat(op.bench, p, "allocs/op")
			extra := none
			if a.N > 0 && floor.N > 0 {
				extra = fmt.Sprintf("%+.0f", a.Med-floor.Med)
			}
			rows = append(rows, []string{p.Label, median(a, count), extra,
				median(r.stat(op.bench, p, "B/op"), bytesOf), spread(r.stat(op.bench, p, "ns/op"), nanos)})
		}
		table(w, []string{"peer", "allocs/op", "vs bare", "B/op", "time/op"}, rows)
	}
	r.leftOut(w, "Success/POST-1KiB", sharesBody)
	ps := r.taking("Success/GET")
	c := chart{title: "Allocations per request, answered 200 at once", xlabel: "allocs/op (median)", cats: labels(ps)}
	for _, op := range successOps {
		vs, ls := r.medians(op.bench, "allocs/op", ps, count)
		c.series = append(c.series, series{op.name, vs, ls})
	}
	if err := r.chart(w, c, "success-allocs", "allocations per request on the success path"); err != nil {
		return err
	}
	ps = r.taking("Success/POST-1MiB")
	vs, ls := r.medians("Success/POST-1MiB", "B/op", ps, bytesOf)
	for i := range vs {
		vs[i] /= 1 << 20
	}
	c = chart{title: "Bytes allocated per 1 MiB POST (with GetBody)", xlabel: "MiB/op (median)", cats: labels(ps),
		series: []series{{"POST 1 MiB", vs, ls}}}
	return r.chart(w, c, "success-bytes", "bytes allocated per 1 MiB POST")
}

// uploads are the two upload benchmarks, by name and by what a reader
// calls them.
var uploads = []struct{ bench, name string }{
	{"Upload/unknown-length", "unknown length"},
	{"Upload/known-length", "declared length"},
}

// writeUpload writes the streamed upload's table and chart.
func (r report) writeUpload(w io.Writer) error {
	fmt.Fprintln(w, "## Streamed upload")
	fmt.Fprintf(w, "\nA PUT of %s made as it is read, without `GetBody`, of unknown length (chunked) or with its length declared, answered 200 (`BenchmarkUpload`). Allocated bytes count the whole process; the peak is how far the heap grew above where it stood, after a collection, when the upload began.\n\n", bytesOf(float64(benchmarks.Full.Upload)))
	ps := r.taking(uploads[0].bench)
	var rows [][]string
	for _, p := range ps {
		row := []string{p.Label}
		for _, u := range uploads {
			row = append(row, median(r.stat(u.bench, p, "B/op"), bytesOf), median(r.stat(u.bench, p, "peak-heap-B"), bytesOf))
		}
		row = append(row, median(r.stat(uploads[0].bench, p, "srv-req/op"), ratio), spread(r.stat(uploads[0].bench, p, "ns/op"), nanos))
		rows = append(rows, row)
	}
	table(w, []string{"peer", "unknown length: allocated", "peak heap growth", "declared length: allocated", "peak heap growth",
		"server requests per upload", "time (unknown length)"}, rows)
	r.leftOut(w, uploads[0].bench, sharesBody)
	c := chart{title: fmt.Sprintf("Memory for one %s streamed upload of unknown length", bytesOf(float64(benchmarks.Full.Upload))),
		xlabel: "MiB (median)", cats: labels(ps)}
	for _, m := range []struct{ unit, name string }{{"B/op", "allocated"}, {"peak-heap-B", "peak heap growth"}} {
		vs, ls := r.medians(uploads[0].bench, m.unit, ps, bytesOf)
		for i := range vs {
			vs[i] /= 1 << 20
		}
		c.series = append(c.series, series{m.name, vs, ls})
	}
	return r.chart(w, c, "upload", "memory per streamed upload")
}
