// Command figures runs the benchmarks of the peers side by side, the
// overload scenarios of the contenders (BenchmarkOverload, in virtual
// time), and the redisfleet module's BenchmarkFleet against a real
// redis-server, and writes their tables (docs/benchmarks.md) and charts
// (docs/benchmarks/) into the repository's docs directory. Without
// redis-server in PATH the fleet's figures are left out, saying so.
//
// Run it from the benchmarks directory:
//
//	go run ./cmd/figures
//
// It takes about six minutes on two cores, one of them for the fleet.
// -quick runs each benchmark once, briefly, and the overload scenarios
// at a quarter of their length, to try the tool; -from re-makes the
// tables and charts from the raw output of an earlier run without
// measuring again. The raw output is kept as docs/benchmarks/raw.txt:
// benchstat reads its result lines; the series of the overload runs
// travel in it as lines of the benchmarks' log.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/benchmarks"
)

// Meta is what a run records about itself at the top of its raw output,
// as "# key: value" lines that benchmark parsers skip.
type Meta struct {
	Date, Command, Wall string
	Machine             Machine
}

func main() {
	out := flag.String("out", "../docs", "the docs `directory` to write into")
	from := flag.String("from", "", "re-make the figures from this raw output `file` instead of measuring")
	short := flag.Bool("quick", false, "run each benchmark once, briefly (the figures are not worth keeping)")
	flag.Parse()
	log.SetFlags(0)
	if err := run(*out, *from, *short); err != nil {
		log.Fatal("figures: ", err)
	}
}

func run(dir, from string, short bool) error {
	if err := os.MkdirAll(filepath.Join(dir, chartDir), 0o755); err != nil {
		return err
	}
	raw, err := rawOutput(dir, from, short)
	if err != nil {
		return err
	}
	meta := readMeta(raw)
	runs, err := parse(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	series, err := parseSeries(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	r := report{runs: runs, dir: dir, peers: benchmarks.Peers(), hedgers: benchmarks.HedgePeers(), series: series}
	var md bytes.Buffer
	if err := write(&md, r, meta); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "benchmarks.md"), md.Bytes(), 0o644)
}

// rawOutput measures, saving the output with its Meta beside the charts,
// or reads it back from a file.
func rawOutput(dir, from string, short bool) ([]byte, error) {
	if from != "" {
		return os.ReadFile(from)
	}
	ps, cmd := passes, "cd benchmarks && go run ./cmd/figures"
	if short {
		ps, cmd = quick(passes), cmd+" -quick"
	}
	start := time.Now()
	meta := Meta{Date: start.UTC().Format("2006-01-02"), Command: cmd, Machine: machine()}
	out, err := measure(ps, os.Stderr)
	if err != nil {
		return nil, err
	}
	meta.Wall = time.Since(start).Round(time.Second).String()
	raw := append(meta.encode(), out...)
	return raw, os.WriteFile(filepath.Join(dir, chartDir, "raw.txt"), raw, 0o644)
}

func (m Meta) encode() []byte {
	var b bytes.Buffer
	for _, kv := range [][2]string{{"date", m.Date}, {"command", m.Command}, {"wall", m.Wall},
		{"go", m.Machine.Go}, {"platform", m.Machine.Platform}, {"cpus", fmt.Sprint(m.Machine.CPUs)}, {"cpu", m.Machine.CPU}} {
		fmt.Fprintf(&b, "# %s: %s\n", kv[0], kv[1])
	}
	return b.Bytes()
}

func readMeta(raw []byte) Meta {
	var m Meta
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "# "), ": ")
		if !ok || !strings.HasPrefix(sc.Text(), "# ") {
			continue
		}
		switch k {
		case "date":
			m.Date = v
		case "command":
			m.Command = v
		case "wall":
			m.Wall = v
		case "go":
			m.Machine.Go = v
		case "platform":
			m.Machine.Platform = v
		case "cpus":
			fmt.Sscan(v, &m.Machine.CPUs)
		case "cpu":
			m.Machine.CPU = v
		}
	}
	return m
}

// write writes the whole markdown file and its charts.
func write(w io.Writer, r report, m Meta) error {
	fmt.Fprintf(w, "# retryhttp beside its peers\n\n")
	fmt.Fprintf(w, "Measured on %s: %s, %s, %d CPUs (%s). Command: `%s` (wall time %s). Raw output, for benchstat: [benchmarks/raw.txt](benchmarks/raw.txt).\n\n",
		m.Date, m.Machine.Go, m.Machine.Platform, m.Machine.CPUs, m.Machine.CPU, m.Command, m.Wall)
	fmt.Fprintln(w, "Everything but the overload scenarios runs in one process against loopback `httptest` servers; the overload scenarios run against scripted hosts in virtual time (see their section). The machine is shared with other work, so claims rest on counts (allocations, bytes, server requests, connections), which do not depend on its speed; times are given as the median of the runs with their range.")
	fmt.Fprintln(w)
	r.writeSummary(w)
	r.writePeers(w)
	writeSpecs(w)
	overload := func(w io.Writer) error { return r.writeOverload(w, m.Date) }
	for _, section := range []func(io.Writer) error{
		r.writeSuccess, r.writeStorm, r.writeFleet, r.writeTail, r.writeHedgeBudget, r.writeRetryAfter, r.writeUpload, r.writeKeepAlive,
		overload,
	} {
		if err := section(w); err != nil {
			return err
		}
	}
	return nil
}
