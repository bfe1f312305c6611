package status_test

import (
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// recentFailures counts the host's among the recent failures: a host
// whose name is longer than a failure keeps of it still has its failure
// counted, and ranked on.
func TestALongHostKeepsItsRecentFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		long := strings.Repeat("a", 300) + ".test"
		tr := &retryhttp.Transport{Base: &rt.Server{Choose: func(int, *http.Request) rt.Step { return rt.Step{Status: 503} }}}
		get(t, &http.Client{Transport: tr}, "https://"+long+"/x")
		st := tr.Stats()
		require.Len(t, st.Failures, 1)
		require.Contains(t, st.Hosts, long)
		p := pageOf(t, tr)
		require.Len(t, p.Hosts, 1)
		assert.Equal(t, 1, p.Hosts[0].RecentFailures)
	})
}
