package main

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// pass is one run of a package's benchmark binary: a -bench pattern, its
// -benchtime and -count, and flags of the package's own (args), with
// more under -quick (quickArgs). dir is the package's directory, relative
// to the benchmarks module ("." for its own); a pass whose needs is not
// in PATH is left out, saying why.
type pass struct {
	bench, benchtime string
	count            int
	dir, needs       string
	args, quickArgs  []string
}

// fleetDir is the redisfleet module, whose BenchmarkFleet measures
// fleets against a real redis-server.
const fleetDir = "../redisfleet"

// passes are the runs of a full measurement. The load scenarios run once
// per count: their spread comes from -count. The success path runs
// enough iterations to steady its per-op figures. Members alone in an
// outage are counted exactly, so one run of them is enough. The overload
// scenarios run in virtual time, 15 s of CPU a count; many of their
// figures vary a little with the order in which goroutines woken at the
// same instant run, hence three. Under -quick they run at a quarter of
// their length.
var passes = []pass{
	{bench: "^BenchmarkSuccess$/^(GET|POST-1KiB)$/", benchtime: "2000x", count: 5},
	{bench: "^BenchmarkSuccess$/^POST-1MiB$/", benchtime: "200x", count: 5},
	{bench: "^BenchmarkOutage$", benchtime: "1x", count: 5},
	{bench: "^BenchmarkFlaky$", benchtime: "1x", count: 5},
	{bench: "^BenchmarkTail$", benchtime: "1x", count: 5},
	{bench: "^BenchmarkTailShortDelay$", benchtime: "1x", count: 5},
	{bench: "^BenchmarkTailShift$", benchtime: "1x", count: 5},
	{bench: "^BenchmarkRetryAfter$", benchtime: "1x", count: 3},
	{bench: "^BenchmarkUpload$", benchtime: "3x", count: 3},
	{bench: "^BenchmarkKeepAlive$", benchtime: "1x", count: 5},
	{bench: "^BenchmarkOverload$", benchtime: "1x", count: 3, quickArgs: []string{"-overload.scale", "0.25"}},
	{bench: "^BenchmarkFleet$/^outage$/^alone$", benchtime: "1x", count: 1, dir: fleetDir, needs: "redis-server"},
	{bench: "^BenchmarkFleet$/^outage$/^fleet$", benchtime: "1x", count: 3, dir: fleetDir, needs: "redis-server"},
	{bench: "^BenchmarkFleet$/^storedown$", benchtime: "1x", count: 3, dir: fleetDir, needs: "redis-server"},
}

// quick shrinks the passes, to try the tool itself.
func quick(ps []pass) []pass {
	out := make([]pass, len(ps))
	for i, p := range ps {
		p.count = 1
		p.args = append(slices.Clone(p.args), p.quickArgs...)
		if p.benchtime != "1x" {
			p.benchtime = "2x"
		}
		out[i] = p
	}
	return out
}

// measure builds the test binary of each package the passes name and runs
// every pass, echoing the output to log, and returns it all.
func measure(ps []pass, log io.Writer) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "figures")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bins := map[string]string{} // by dir
	var all bytes.Buffer
	for _, p := range ps {
		dir := cmp.Or(p.dir, ".")
		if p.needs != "" {
			if _, err := exec.LookPath(p.needs); err != nil {
				fmt.Fprintf(log, "--- %s left out: %s is not in PATH (apt-get install -y %s)\n", p.bench, p.needs, p.needs)
				continue
			}
		}
		bin, ok := bins[dir]
		if !ok {
			bin = filepath.Join(tmp, fmt.Sprintf("bench%d.test", len(bins)))
			build := exec.Command("go", "test", "-c", "-o", bin, ".")
			build.Dir, build.Stdout, build.Stderr = dir, log, log
			if err := build.Run(); err != nil {
				return nil, fmt.Errorf("building the benchmarks in %s: %w", dir, err)
			}
			bins[dir] = bin
		}
		fmt.Fprintf(log, "--- %s %s\n", dir, strings.Join(append([]string{p.bench, "-benchtime", p.benchtime, "-count", fmt.Sprint(p.count)}, p.args...), " "))
		args := append([]string{"-test.run", "^$", "-test.bench", p.bench,
			"-test.benchtime", p.benchtime, "-test.count", fmt.Sprint(p.count)}, p.args...)
		cmd := exec.Command(bin, args...)
		stderr := &dropLines{w: log, prefix: []byte("redis: ")}
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, io.MultiWriter(&all, log), stderr
		err := cmd.Run()
		stderr.flush()
		if stderr.dropped > 0 {
			fmt.Fprintf(log, "(%d lines of go-redis's log left out: it logs each failed dial while the store is down)\n", stderr.dropped)
		}
		if err != nil {
			return nil, fmt.Errorf("running %s in %s: %w", p.bench, dir, err)
		}
	}
	return all.Bytes(), nil
}

// dropLines writes to w the lines written to it, but those that begin
// with prefix, which it counts. A line split over writes is kept whole
// until its end.
type dropLines struct {
	w       io.Writer
	prefix  []byte
	line    []byte
	dropped int
}

func (d *dropLines) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			d.line = append(d.line, rest...)
			break
		}
		d.line = append(d.line, rest[:i+1]...)
		rest = rest[i+1:]
		if bytes.HasPrefix(d.line, d.prefix) {
			d.dropped++
		} else if _, err := d.w.Write(d.line); err != nil {
			return 0, err
		}
		d.line = d.line[:0]
	}
	return len(p), nil
}

// flush writes a last line that had no end, or drops it, as Write does
// a whole line.
func (d *dropLines) flush() {
	switch {
	case len(d.line) == 0:
	case bytes.HasPrefix(d.line, d.prefix):
		d.dropped++
	default:
		d.w.Write(d.line)
	}
	d.line = d.line[:0]
}

// Machine describes where the figures were measured.
type Machine struct {
	Go, Platform, CPU string
	CPUs              int
}

func machine() Machine {
	m := Machine{Platform: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU(), CPU: cpuModel()}
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.Go = strings.TrimSpace(string(out))
	}
	return m
}

// cpuModel is the first "model name" of /proc/cpuinfo, or "unknown".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return "unknown"
}
