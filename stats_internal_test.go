package retryhttp

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHistogramBucket(t *testing.T) {
	cases := []struct{ k, want int }{
		{1, 0}, {2, 1}, {3, 2}, {4, 3}, {5, 4}, {9, 4}, {10, 5}, {99, 5},
		{100, 6}, {999, 6}, {1000, 7}, {1 << 30, 7},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.k), func(t *testing.T) {
			assert.Equal(t, tc.want, histogramBucket(tc.k), "got bucket for retry %d", tc.k)
		})
	}
}

func TestStatsHostsAreBounded(t *testing.T) {
	hosts := newHostMap[counters](maxStatsHosts)
	for i := range maxStatsHosts + 500 {
		hosts.get(fmt.Sprintf("h%d.test", i)).requests.Add(1)
	}
	snap := snapshot(newRuleStats(0), hosts)
	assert.Len(t, snap.Hosts, maxStatsHosts+1)
	assert.Equal(t, uint64(500), snap.Hosts[overflowHost].Requests)
}
