package benchmarks

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A series written for a log reads back whole, wherever the log puts it
// in its line, its rates rounded to a hundredth.
func TestSeriesLine(t *testing.T) {
	s := []Sample{
		{At: 0, Goodput: 640, Attempts: 644, Throttled: 0},
		{At: 250 * ms, Goodput: 213.333333, Attempts: 1e6, Throttled: 4},
	}
	line := FormatSeries("BenchmarkOverload/S2-metastable/retryhttp", SeriesStep, s)
	assert.Equal(t, "series BenchmarkOverload/S2-metastable/retryhttp step=250ms goodput=640,213.33 attempts=644,1000000 throttled=0,4", line)
	name, got, ok := ParseSeries("    bench_overload_test.go:44: " + line)
	require.True(t, ok)
	assert.Equal(t, "BenchmarkOverload/S2-metastable/retryhttp", name)
	s[1].Goodput = 213.33
	assert.Equal(t, s, got)

	name, got, ok = ParseSeries(FormatSeries("B", time.Second, nil))
	assert.True(t, ok, "an empty series")
	assert.Equal(t, "B", name)
	assert.Empty(t, got)
}

func TestParseSeriesRefusesMalformedLines(t *testing.T) {
	for _, tc := range []struct{ name, line string }{
		{"no series", "BenchmarkOverload/S0-healthy/bare-2 1 30193075 ns/op"},
		{"no step", "series B goodput=1 attempts=1 throttled=1"},
		{"a step of zero", "series B step=0s goodput=1 attempts=1 throttled=1"},
		{"a step of nothing", "series B step=ms goodput=1 attempts=1 throttled=1"},
		{"a rate missing", "series B step=1s goodput=1 attempts=1"},
		{"rates out of order", "series B step=1s attempts=1 goodput=1 throttled=1"},
		{"lengths differ", "series B step=1s goodput=1,2 attempts=1 throttled=1"},
		{"not a number", "series B step=1s goodput=x attempts=1 throttled=1"},
		{"negative", "series B step=1s goodput=-1 attempts=1 throttled=1"},
		{"NaN", "series B step=1s goodput=NaN attempts=1 throttled=1"},
		{"infinite", "series B step=1s goodput=+Inf attempts=1 throttled=1"},
		{"an empty rate", "series B step=1s goodput=1, attempts=1,2 throttled=1,2"},
		{"something after", "series B step=1s goodput=1 attempts=1 throttled=1 more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s, ok := ParseSeries(tc.line)
			assert.False(t, ok)
			assert.Nil(t, s)
		})
	}
}

// Whatever the line, ParseSeries returns without panicking, and what it
// reads, written and read again, comes back the same from then on.
func FuzzParseSeries(f *testing.F) {
	f.Add("series B step=250ms goodput=640,1.5 attempts=644,2 throttled=0,0")
	f.Add("x: series B step=1h goodput= attempts= throttled=")
	f.Add("series B step=1s goodput=1e308 attempts=0.125 throttled=0")
	f.Fuzz(func(t *testing.T, line string) {
		name, s, ok := ParseSeries(line)
		if !ok {
			return
		}
		step := time.Duration(1)
		if len(s) > 1 {
			step = s[1].At
		}
		if step <= 0 {
			return // a step so long that its second sample's time overflows
		}
		name2, s2, ok := ParseSeries(FormatSeries(name, step, s))
		require.True(t, ok, "%q", line)
		assert.Equal(t, name, name2)
		require.Len(t, s2, len(s))
		_, s3, ok := ParseSeries(FormatSeries(name, step, s2))
		require.True(t, ok)
		assert.Equal(t, s2, s3)
	})
}
