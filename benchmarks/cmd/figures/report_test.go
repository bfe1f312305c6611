package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/retryhttp/retryhttp/benchmarks"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeRuns gives every peer two runs of every benchmark the report reads,
// leaving out hedgedhttp where bodies are sent, the peers that do not
// hedge from the tail, and those whose delay is not fixed from the short
// delay, as the benchmarks do; and BenchmarkFleet's results at two sizes.
func fakeRuns() Runs {
	runs := Runs{}
	benches := []string{"Success/GET", "Success/POST-1KiB", "Success/POST-1MiB", "Outage", "Flaky", "Tail",
		"TailShortDelay", "TailShift",
		"RetryAfter", "Upload/unknown-length", "Upload/known-length", "KeepAlive/default-base", "KeepAlive/pooled-base"}
	for i, p := range benchmarks.AllPeers() {
		for _, b := range benches {
			if p.Caps.Body == benchmarks.BodyShared && (strings.HasPrefix(b, "Upload") || strings.HasPrefix(b, "Success/POST")) {
				continue
			}
			tail := strings.HasPrefix(b, "Tail")
			if tail && !in(p, benchmarks.HedgePeers()) || !tail && !in(p, benchmarks.Peers()) {
				continue
			}
			if b == "TailShortDelay" && (!p.Caps.Hedges || p.Delay != benchmarks.DelayFixed) {
				continue
			}
			m := map[string]float64{"ns/op": 1e6, "allocs/op": float64(100 + i), "B/op": 2 << 20,
				"srv-req/req": 1 + float64(i)/10, "ok%": 100, "err%": 0, "conns": 16, "p50-ms": 2, "p99-ms": 14,
				"p99.9-ms": 16, "extra%": float64(i) / 10, "status": 429, "deadline": 0, "ms": 1, "srv-req": 1, "peak-heap-B": 1 << 20, "srv-req/op": 1}
			if p.Name == "failsafe" && b == "RetryAfter" {
				m["status"], m["deadline"], m["ms"] = 0, 1, 2000
			}
			if p.Name == "failsafe+budget" && b == "Outage" {
				m["err%"] = 97
			}
			slow := map[string]float64{}
			for k, v := range m {
				slow[k] = v
			}
			slow["ns/op"] = 3e6
			switch {
			case p.Name == "bare" && tail:
				m["p99-ms"], slow["p99-ms"] = 200, 202
			case p.Name == "retryhttp-hedge-loadbudget":
				m["p99-ms"], slow["p99-ms"] = 5, 5
			case p.Name == "retryhttp-hedge-fixed-loadbudget" && b == "TailShift":
				slow["extra%"] = 2.5
			}
			runs["Benchmark"+b+"/"+p.Name] = append(runs["Benchmark"+b+"/"+p.Name], m, slow)
		}
	}
	for _, n := range []int{1000, 1} {
		for _, r := range fleetRuns {
			name := fleetSize{n, 10000 / n}.bench(r)
			v := 1.003 + float64(n)/1000
			if r.wiring == "fleet" && r.scenario == "outage" {
				v = 1.004
			}
			runs[name] = append(runs[name], map[string]float64{"attempts/req": v, "extra/member": 33, "max-ms": 350})
		}
	}
	return runs
}

// in reports whether ps has a peer named as p.
func in(p benchmarks.Peer, ps []benchmarks.Peer) bool {
	return slices.ContainsFunc(ps, func(q benchmarks.Peer) bool { return q.Name == p.Name })
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, chartDir), 0o755))
	var md bytes.Buffer
	meta := Meta{Date: "2026-01-02", Command: "go run ./cmd/figures", Wall: "9m",
		Machine: Machine{Go: "go version go1.26", Platform: "linux/amd64", CPUs: 2, CPU: "Some CPU"}}
	require.NoError(t, write(&md, report{runs: fakeRuns(), dir: dir, peers: benchmarks.Peers(), hedgers: benchmarks.HedgePeers()}, meta))
	out := md.String()
	for _, want := range []string{
		"Measured on 2026-01-02: go version go1.26, linux/amd64, 2 CPUs (Some CPU). Command: `go run ./cmd/figures` (wall time 9m)",
		"## Summary", "| failsafe-go | 105 (+5) | 1.50 | 16 | 100.0% | — | deadline error in 2.00 s | 2 MiB |",
		"| retryhttp hedge | 103 (+3) | 1.30 | 16 | 100.0% | 14.0 ms |",
		"| failsafe-go + budget | 106 (+6) | 1.60 (97% errors) |",
		"## Success path", "## Outage and flaky server", "## Heavy tail", "## Retry-After beyond the deadline",
		"## Streamed upload", "## Keep-alive under Client.Timeout",
		"| failsafe-go | deadline error | 2.00 s | 1 |",
		"| retryhttp | the 429 | 1.0 ms | 1 |",
		"| net/http | 100 | +0 | 2 MiB | 2.0 ms (1.0 ms–3.0 ms) |",
		"Left out: hedgedhttp (hedges share one body reader).",
		"## Hedging within a load budget", "## A fleet in an outage",
		"| retryhttp hedge + load budget | start of the tail | 2% of requests | 2.0 ms | 5.0 ms | 16.0 ms | +1.00% |",
		"| failsafe-go hedge + budget | 1ms | 0.02 of executions in flight (min 3) |",
		"| retryhttp hedge, quantile delay | 0.95 quantile (10ms until known) | — |",
		"- p99 at most 0.05 of bare's with at most 2% extra load (retryhttp hedge + load budget, heavy tail): p99 5.0 ms, 0.025 of bare's 201 ms (the slowest of 2 runs: 5.0 ms, 0.025); extra load +1.00%, at most +1.00%: met in every run.",
		"- Extra load within the 2% budget in every run, whatever sets the delay, the shift included: the highest is +2.50% (retryhttp hedge, fixed delay + load budget, shift: fast answers from 2 ms to 15 ms): not met.",
		"| 1 × 10,000 | 1.004 | 1.004 | 1.004 | 33 | 33 | 350 ms | 350 ms |",
		"| 1,000 × 10 | 2.003 | 1.004 | 2.003 |",
		"The highest median: 1.004 (met); the highest run: 1.004 at 1 × 10,000 (met).",
	} {
		assert.Contains(t, out, want)
	}
	assert.Less(t, strings.Index(out, "| 1 × 10,000 |"), strings.Index(out, "| 1,000 × 10 |"), "fewest members first")
	for _, name := range []string{"success-allocs", "success-bytes", "storm", "storm-conns", "tail", "retry-after", "upload", "keepalive",
		"hedge-budget", "fleet"} {
		assert.Contains(t, out, "(benchmarks/"+name+".png)")
		f, err := os.Open(filepath.Join(dir, chartDir, name+".png"))
		require.NoError(t, err)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err, name)
		assert.Greater(t, img.Bounds().Dx(), 400, name)
	}
}

// TestWriteWithoutFleet checks that a run without the fleet's results
// (no redis-server) says why, and draws no fleet chart.
func TestWriteWithoutFleet(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, chartDir), 0o755))
	runs := fakeRuns()
	for name := range runs {
		if strings.HasPrefix(name, fleetBench) {
			delete(runs, name)
		}
	}
	var md bytes.Buffer
	require.NoError(t, write(&md, report{runs: runs, dir: dir, peers: benchmarks.Peers(), hedgers: benchmarks.HedgePeers()}, Meta{}))
	assert.Contains(t, md.String(), "Not measured in this run: the fleet needs `redis-server` in PATH")
	assert.NotContains(t, md.String(), "fleet.png")
	assert.NoFileExists(t, filepath.Join(dir, chartDir, "fleet.png"))
}

func TestMetaRoundTrip(t *testing.T) {
	m := Meta{Date: "2026-01-02", Command: "cd benchmarks && go run ./cmd/figures", Wall: "9m12s",
		Machine: Machine{Go: "go version go1.26.8 linux/amd64", Platform: "linux/amd64", CPUs: 2, CPU: "AMD EPYC: x"}}
	raw := append(m.encode(), "BenchmarkX-2 1 5 ns/op\n"...)
	assert.Equal(t, m, readMeta(raw))
	runs, err := parse(bytes.NewReader(raw))
	require.NoError(t, err)
	assert.Len(t, runs, 1)
}

func TestFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{bytesOf(512), "512 B"}, {bytesOf(1536), "1.5 KiB"}, {bytesOf(64 << 20), "64 MiB"},
		{bytesOf(1.1 * (1 << 20)), "1.1 MiB"}, {bytesOf(158 << 20), "158 MiB"},
		{nanos(950), "950 ns"}, {nanos(23400), "23.4 µs"}, {nanos(2.5e6), "2.5 ms"}, {nanos(2.01e9), "2.01 s"},
		{spread(Stat{Med: 2, Min: 1, Max: 3, N: 3}, count), "2 (1–3)"},
		{spread(Stat{Med: 2, Min: 2, Max: 2, N: 3}, count), "2"},
		{spread(Stat{}, count), none},
		{millis(201.4), "201 ms"}, {millis(2001), "2.00 s"}, {millis(13.71), "13.7 ms"},
	} {
		assert.Equal(t, c.want, c.got)
	}
}
