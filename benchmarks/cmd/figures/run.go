package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// pass is one run of the benchmark binary: a -bench pattern, its
// -benchtime and -count.
type pass struct {
	bench, benchtime string
	count            int
}

// passes are the runs of a full measurement. The load scenarios run once
// per count: their spread comes from -count. The success path runs
// enough iterations to steady its per-op figures.
var passes = []pass{
	{"^BenchmarkSuccess$/^(GET|POST-1KiB)$/", "2000x", 5},
	{"^BenchmarkSuccess$/^POST-1MiB$/", "200x", 5},
	{"^BenchmarkOutage$", "1x", 5},
	{"^BenchmarkFlaky$", "1x", 5},
	{"^BenchmarkTail$", "1x", 5},
	{"^BenchmarkTailShortDelay$", "1x", 5},
	{"^BenchmarkTailShift$", "1x", 5},
	{"^BenchmarkRetryAfter$", "1x", 3},
	{"^BenchmarkUpload$", "3x", 3},
	{"^BenchmarkKeepAlive$", "1x", 5},
}

// quick shrinks the passes, to try the tool itself.
func quick(ps []pass) []pass {
	out := make([]pass, len(ps))
	for i, p := range ps {
		p.count = 1
		if p.benchtime != "1x" {
			p.benchtime = "2x"
		}
		out[i] = p
	}
	return out
}

// measure builds the package's test binary in dir and runs every pass,
// echoing the output to log, and returns it all.
func measure(ps []pass, log io.Writer) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "figures")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "benchmarks.test")
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Stdout, build.Stderr = log, log
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("building the benchmarks: %w", err)
	}
	var all bytes.Buffer
	for _, p := range ps {
		fmt.Fprintf(log, "--- %s -benchtime %s -count %d\n", p.bench, p.benchtime, p.count)
		cmd := exec.Command(bin, "-test.run", "^$", "-test.bench", p.bench,
			"-test.benchtime", p.benchtime, "-test.count", fmt.Sprint(p.count))
		cmd.Stdout = io.MultiWriter(&all, log)
		cmd.Stderr = log
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("running %s: %w", p.bench, err)
		}
	}
	return all.Bytes(), nil
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
