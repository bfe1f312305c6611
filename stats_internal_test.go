package retryhttp

import (
	"fmt"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/policy"

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
	st := &state{hosts: newHostTable(nil, 0), pool: newBufferPool(BufferLimits{})}
	st.pol.Store(newActive(policy.None()))
	for i := range maxStatsHosts + 500 {
		st.hosts.stats.Get(fmt.Sprintf("h%d.test", i)).requests.Add(1)
	}
	snap := st.snapshot(time.Now())
	assert.Len(t, snap.Hosts, maxStatsHosts+1)
	assert.Equal(t, uint64(500), snap.Hosts[overflowHost].Requests)
}
