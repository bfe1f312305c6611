package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDropLines(t *testing.T) {
	for _, c := range []struct {
		name    string
		writes  []string
		want    string
		dropped int
	}{
		{"none dropped", []string{"a\nb\n"}, "a\nb\n", 0},
		{"whole lines", []string{"redis: x\nkeep\nredis: y\n"}, "keep\n", 2},
		{"a line over writes", []string{"red", "is: x\nke", "ep\n"}, "keep\n", 1},
		{"the prefix not at the start", []string{"a redis: x\n"}, "a redis: x\n", 0},
		{"a last line with no end", []string{"keep\nlast"}, "keep\nlast", 0},
		{"a dropped last line with no end", []string{"keep\nredis: x"}, "keep\n", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			d := &dropLines{w: &out, prefix: []byte("redis: ")}
			for _, s := range c.writes {
				n, err := d.Write([]byte(s))
				assert.NoError(t, err)
				assert.Equal(t, len(s), n)
			}
			d.flush()
			assert.Equal(t, c.want, out.String())
			assert.Equal(t, c.dropped, d.dropped, "lines dropped")
		})
	}
}

// TestMeasureLeavesOutWhatItCannotRun checks that a pass whose program is
// missing is left out, saying so, and fails nothing.
func TestMeasureLeavesOutWhatItCannotRun(t *testing.T) {
	var log bytes.Buffer
	out, err := measure([]pass{{bench: "^BenchmarkFleet$", benchtime: "1x", count: 1, dir: fleetDir, needs: "no-such-program.test"}}, &log)
	assert.NoError(t, err)
	assert.Empty(t, out)
	assert.Contains(t, log.String(), "^BenchmarkFleet$ left out: no-such-program.test is not in PATH")
}

// -quick runs each pass once, briefly, and gives the overload scenarios
// their flag to run shorter, leaving the full passes as they are.
func TestQuick(t *testing.T) {
	full := []pass{
		{bench: "^BenchmarkSuccess$", benchtime: "2000x", count: 5},
		{bench: "^BenchmarkOverload$", benchtime: "1x", count: 3, args: []string{"-a"}, quickArgs: []string{"-overload.scale", "0.25"}},
	}
	got := quick(full)
	assert.Equal(t, []pass{
		{bench: "^BenchmarkSuccess$", benchtime: "2x", count: 1},
		{bench: "^BenchmarkOverload$", benchtime: "1x", count: 1, args: []string{"-a", "-overload.scale", "0.25"}, quickArgs: []string{"-overload.scale", "0.25"}},
	}, got)
	assert.Equal(t, []string{"-a"}, full[1].args, "the full pass unchanged")
	assert.Contains(t, passes, pass{bench: "^BenchmarkOverload$", benchtime: "1x", count: 3, quickArgs: []string{"-overload.scale", "0.25"}})
}
