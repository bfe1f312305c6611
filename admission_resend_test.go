package retryhttp_test

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/internal/memfleet"
	"github.com/retryhttp/retryhttp/policy"
)

// A transparent resend that a hold kept back keeps the concurrency slot
// of its first try while it waits, and goes on it: the host's limit
// counts it. With a limit of one, the resend and another request waiting
// out the same hold never reach the host together.
func TestAResendAfterAHoldGoesOnItsSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fleet := memfleet.New()
		var mu sync.Mutex
		var now, most int
		var first atomic.Bool
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Path == "/a" && first.CompareAndSwap(false, true) {
				time.Sleep(50 * time.Millisecond)
				fleet.Report("api.test", retryhttp.FleetReport{Rule: "*", HoldUntil: time.Now().Add(time.Second), HoldStatus: 429})
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
			}
			mu.Lock()
			now++
			most = max(most, now)
			mu.Unlock()
			time.Sleep(300 * time.Millisecond)
			mu.Lock()
			now--
			mu.Unlock()
			return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
		})
		cfg := retryConfig(3, 503)
		cfg.Admission = &policy.Admission{MaxConcurrency: 1, MaxWait: 5 * time.Second}
		tr := &retryhttp.Transport{Base: base, Policy: cfg, Fleet: fleet}
		var wg sync.WaitGroup
		for _, path := range []string{"/a", "/b"} {
			wg.Go(func() {
				if path == "/b" {
					time.Sleep(100 * time.Millisecond) // during the hold, which both wait out; its spread (100 ms at most) is shorter than an answer
				}
				req, err := http.NewRequestWithContext(t.Context(), "GET", "https://api.test"+path, nil)
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err, path)
				readAll(t, resp)
			})
		}
		wg.Wait()
		assert.Equal(t, 1, most, "a limit of one: the host never sees two attempts at once")
		assert.Zero(t, tr.Stats().Hosts["api.test"].InFlight)
	})
}

// A hedge that waited in line and got its slot as the attempt before it
// answered a non-fatal status with a server delay does not sit on the
// slot through that delay: nothing is in flight while the request waits,
// and another request to the host goes at once.
func TestAHedgeWaitingOutAServerDelayHoldsNoSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var first atomic.Bool
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			time.Sleep(100 * time.Millisecond)
			if req.URL.Path == "/h" && first.CompareAndSwap(false, true) {
				return &http.Response{StatusCode: 503, Header: http.Header{"Retry-After": {"2"}}, Body: http.NoBody, Request: req}, nil
			}
			return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
		})
		cfg := hedgeConfig(3, 10*time.Millisecond, 503)
		cfg.Hold, cfg.Pace = &policy.Hold{Off: true}, &policy.Pace{Off: true} // the limit alone
		cfg.Admission = &policy.Admission{MaxConcurrency: 1, MaxWait: 5 * time.Second}
		tr := &retryhttp.Transport{Base: base, Policy: cfg}
		var wg sync.WaitGroup
		wg.Go(func() {
			req, err := http.NewRequestWithContext(t.Context(), "GET", "https://api.test/h", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			readAll(t, resp)
		})
		time.Sleep(500 * time.Millisecond) // /h's first attempt answered 503, Retry-After: 2; its hedge waits
		synctest.Wait()
		assert.Zero(t, tr.Stats().Hosts["api.test"].InFlight, "nothing in flight while /h waits")
		start := time.Now()
		req, err := http.NewRequestWithContext(t.Context(), "GET", "https://api.test/b", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "/b goes at once")
		wg.Wait()
	})
}
