package retryhttp_test

import (
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// The traffic of TestChaosOneTransportUnderLoad over loopback, through
// the Transport's own base and dialer, for a bounded stretch of real time:
// hosts that answer by the same script, one reached by a name with several
// addresses, and one that refuses every dial. Only what real time cannot
// make vary is checked: nothing races, panics, or outlives the Transport.
func TestChaosOverLoopback(t *testing.T) {
	const run, workers = 2 * time.Second, 16
	before := goleakIgnore()
	tr := chaosTransport(nil) // the Transport's own base, as dial.NewBase builds it
	// Registered first, run last: after the servers have closed.
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		assertNoLeak(t, before)
	})
	c := &chaosRun{t: t, tr: tr, scheme: "http"}
	for range 3 {
		c.hosts = append(c.hosts, strings.TrimPrefix((&rt.Server{Choose: chaosStep}).Start(t).URL, "http://"))
	}
	_, port, err := net.SplitHostPort(c.hosts[2])
	require.NoError(t, err)
	c.hosts = append(c.hosts, "localhost:"+port, deadAddr(t))
	seed := rand.Uint64()
	t.Logf("seed %d", seed)

	stop := c.disturbing(seed)
	var callers sync.WaitGroup
	var next atomic.Int64
	end := time.Now().Add(run)
	for w := range workers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		callers.Go(func() {
			for time.Now().Before(end) {
				c.call(int(next.Add(1)), rng)
			}
		})
	}
	callers.Wait()
	stop()
	t.Logf("%d calls: %d answered, %d failed, %d invalid; total %+v",
		c.calls.Load(), c.ok.Load(), c.bad.Load(), c.invalid.Load(), tr.Stats().Total)
}

// deadAddr returns a loopback address that refuses every dial: a port
// that was listened on, then closed.
func deadAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}
