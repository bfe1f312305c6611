package main

import (
	"strings"
	"testing"

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
