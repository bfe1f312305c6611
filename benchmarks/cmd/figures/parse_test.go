package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	out := `goos: linux
BenchmarkOutage/retryhttp+budget-2   	       1	 812345 ns/op	         1.024 srv-req/req	 0 ok%
BenchmarkOutage/retryhttp+budget-2   	       1	 812345 ns/op	         1.030 srv-req/req	 0 ok%
BenchmarkOutage/retryhttp+budget-2   	       1	 812345 ns/op	         1.020 srv-req/req	 0 ok%
BenchmarkSuccess/GET/bare-2          	    2000	     21900 ns/op	    5400 B/op	      70 allocs/op
--- BENCH: BenchmarkX
    x_test.go:1: a log line 1 2
PASS
`
	runs, err := parse(strings.NewReader(out))
	require.NoError(t, err)
	assert.Len(t, runs, 2)
	assert.Equal(t, Stat{Med: 1.024, Min: 1.020, Max: 1.030, N: 3}, runs.stat("BenchmarkOutage/retryhttp+budget", "srv-req/req"))
	assert.Equal(t, Stat{Med: 70, Min: 70, Max: 70, N: 1}, runs.stat("BenchmarkSuccess/GET/bare", "allocs/op"))
	assert.Zero(t, runs.stat("BenchmarkSuccess/GET/bare", "conns").N)
	assert.Zero(t, runs.stat("BenchmarkNone", "ns/op").N)
}

func TestStatEvenCount(t *testing.T) {
	runs := Runs{"B": {{"x": 1}, {"x": 4}, {"x": 2}, {"x": 3}}}
	assert.Equal(t, Stat{Med: 2.5, Min: 1, Max: 4, N: 4}, runs.stat("B", "x"))
}

// The series logged after result lines are read back by benchmark name,
// the first run's of each; other lines, result lines and malformed
// series alike, are passed over.
func TestParseSeries(t *testing.T) {
	out := `BenchmarkOverload/S2-metastable/retryhttp-2   	       1	 275430677 ns/op	         1.000 attempts/req
--- BENCH: BenchmarkOverload/S2-metastable/retryhttp-2
    bench_overload_test.go:44: series BenchmarkOverload/S2-metastable/retryhttp step=250ms goodput=616,640 attempts=620,640 throttled=0,4
BenchmarkOverload/S2-metastable/retryhttp-2   	       1	 275430677 ns/op	         1.000 attempts/req
--- BENCH: BenchmarkOverload/S2-metastable/retryhttp-2
    bench_overload_test.go:44: series BenchmarkOverload/S2-metastable/retryhttp step=250ms goodput=1,1 attempts=1,1 throttled=1,1
    bench_overload_test.go:44: series BenchmarkOverload/S2-metastable/static step=250ms goodput=1,1 attempts=1 throttled=1,1
PASS
`
	series, err := parseSeries(strings.NewReader(out))
	require.NoError(t, err)
	assert.Equal(t, Series{"BenchmarkOverload/S2-metastable/retryhttp": {
		{At: 0, Goodput: 616, Attempts: 620},
		{At: 250 * time.Millisecond, Goodput: 640, Attempts: 640, Throttled: 4},
	}}, series)
	runs, err := parse(strings.NewReader(out))
	require.NoError(t, err)
	assert.Equal(t, 2, runs.stat("BenchmarkOverload/S2-metastable/retryhttp", "attempts/req").N, "the logs are no results")
}

// A line longer than bufio's default token, as a long series is, is
// read all the same.
func TestParseLongLines(t *testing.T) {
	long := "    x.go:1: " + strings.Repeat("7", 100<<10) + "\nBenchmarkX-2 1 5 ns/op\n"
	runs, err := parse(strings.NewReader(long))
	require.NoError(t, err)
	assert.Len(t, runs, 1)
	_, err = parseSeries(strings.NewReader(long))
	require.NoError(t, err)
}

// A ratio go test printed to four figures is made again from the counts
// on its line: 8002 attempts for 4000 requests print as 2.000, which a
// bound of 2 would pass, and are 2.0005.
func TestParseMakesRatiosExact(t *testing.T) {
	out := `BenchmarkOverload/S4-outage/retryhttp-2   1   5 ns/op   2.000 outage-attempts/req   8002 outage-attempts   4000 outage-requests   1.000 attempts/req
BenchmarkOverload/S4-outage/retryhttp-2   1   5 ns/op   2.000 outage-attempts/req   7998 outage-attempts   4000 outage-requests   1.000 attempts/req
`
	runs, err := parse(strings.NewReader(out))
	require.NoError(t, err)
	s := runs.stat("BenchmarkOverload/S4-outage/retryhttp", "outage-attempts/req")
	assert.InDelta(t, 2.0005, s.Max, 1e-12)
	assert.InDelta(t, 1.9995, s.Min, 1e-12)
	assert.Equal(t, Stat{Med: 1, Min: 1, Max: 1, N: 2}, runs.stat("BenchmarkOverload/S4-outage/retryhttp", "attempts/req"),
		"a ratio without its counts is kept as printed")
}
