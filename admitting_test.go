package retryhttp_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// admitting returns a Transport over srv with admission, its limit at
// most max, an attempt past it waiting up to wait.
func admitting(srv http.RoundTripper, max int, wait time.Duration) *retryhttp.Transport {
	cfg := policy.Default()
	cfg.Admission = &policy.Admission{MaxConcurrency: max, MaxWait: wait}
	return &retryhttp.Transport{Base: srv, Policy: cfg}
}

// Attempts past the limit wait in line for a slot, and go when one comes
// back; one that cannot get one within maxWait fails at once when its
// wait is over, nothing sent, with ErrShed.
func TestAdmissionLimitsConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step { return rt.Step{Delay: 500 * time.Millisecond} }}
		tr := admitting(srv, 2, time.Second)
		start := time.Now()
		errs := burst(t, tr, "/x", 3, 0)
		for _, err := range errs {
			require.NoError(t, err)
		}
		at := arrivals(srv)
		assert.Equal(t, []time.Duration{0, 0, 500 * time.Millisecond}, at, "the third waits for a slot")
		assert.Equal(t, time.Second, time.Since(start))
		total := tr.Stats().Total
		assert.Equal(t, uint64(1), total.AdmissionWaits)
		assert.Equal(t, 500*time.Millisecond, total.AdmissionWaitTime, "the time it waited, until a slot came back")

		shedding := admitting(srv, 1, 100*time.Millisecond)
		errs = burst(t, shedding, "/x", 2, 0)
		var shed int
		for _, err := range errs {
			if err != nil {
				shed++
				require.ErrorIs(t, err, retryhttp.ErrShed)
				var e *retryhttp.Error
				require.ErrorAs(t, err, &e)
				assert.Zero(t, e.Attempts, "nothing sent")
				assert.Contains(t, err.Error(), "concurrency limit")
			}
		}
		assert.Equal(t, 1, shed)
		hs := shedding.Stats().Hosts["api.test"]
		assert.Equal(t, uint64(1), hs.Shed)
		assert.Equal(t, 1, hs.ConcurrencyLimit)
		assert.Zero(t, hs.InFlight, "every slot came back")
	})
}

// A host that answers fast with 429s loses work, and its limit comes
// down: a throttle is never a fast answer. Once a queue has brought the
// limit down, fast 429s under a limit in use cannot raise it, as they
// would if they counted as fast successes; ResetBackoff lifts the limit
// back to its start.
func TestAdmissionThrottlesAreLostWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var throttling atomic.Bool
		q := &queue{workers: 4}
		q.srv = &rt.Server{Choose: func(int, *http.Request) rt.Step {
			if throttling.Load() {
				return rt.Step{Status: 429, Delay: time.Millisecond}
			}
			return rt.Step{Delay: 10 * time.Millisecond * time.Duration(max(1, q.inFlight.Load()/int64(q.workers)))}
		}}
		cfg := policy.Default()
		cfg.Admission = &policy.Admission{MaxConcurrency: 50, MaxWait: time.Second}
		cfg.Pace, cfg.Hold = &policy.Pace{Off: true}, &policy.Hold{Off: true} // the limit alone
		tr := &retryhttp.Transport{Base: q, Policy: cfg}
		loop(t, tr, 40, 10, 0)
		queued := tr.Stats().Hosts["api.test"].ConcurrencyLimit
		require.Less(t, queued, 20, "the queue brought the limit down")

		throttling.Store(true)
		loop(t, tr, 40, 10, 0) // 40 callers: a limit under 20 in use
		hs := tr.Stats().Hosts["api.test"]
		assert.Less(t, hs.ConcurrencyLimit, queued, "fast 429s never raise the limit; lost work cuts it")
		assert.Zero(t, hs.InFlight, "every slot came back")
		tr.ResetBackoff("api.test")
		assert.Equal(t, 50, tr.Stats().Hosts["api.test"].ConcurrencyLimit)
	})
}

// loop has callers callers each send n requests to tr one after another,
// under its policy's retries, each within deadline (0: none), and
// returns how many failed.
func loop(t *testing.T, tr *retryhttp.Transport, callers, n int, deadline time.Duration) int {
	t.Helper()
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range n {
				ctx, cancel := t.Context(), context.CancelFunc(func() {})
				if deadline > 0 {
					ctx, cancel = context.WithTimeout(ctx, deadline)
				}
				req, err := http.NewRequestWithContext(ctx, "GET", "https://api.test/x", nil)
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				if err == nil {
					readAll(t, resp)
				} else {
					failed.Add(1)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	return int(failed.Load())
}

// draw returns a source of random numbers in [0, 1), seeded, safe for
// concurrent use: the random errors of a scripted host.
func draw(seed uint64) func() float64 {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, seed))
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	}
}

// A healthy host that answers a few requests with a plain 5xx, at random,
// is not overloaded: its limit stays at its maximum, and no attempt waits
// or is shed, whether the limit is far above what the callers use or
// within their reach.
func TestAdmissionSporadicErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		max    int // 0: the default
		share  float64
		status int
	}{
		{name: "5% 503s", share: 0.05, status: 503},
		{name: "10% 503s", share: 0.10, status: 503},
		{name: "10% 500s", share: 0.10, status: 500},
		{name: "10% 503s, the limit in use", max: 64, share: 0.10, status: 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rnd := draw(7)
				srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
					if rnd() < tc.share {
						return rt.Step{Status: tc.status, Delay: 10 * time.Millisecond}
					}
					return rt.Step{Delay: 10 * time.Millisecond}
				}}
				tr := admitting(srv, tc.max, 0)
				loop(t, tr, 50, 40, 0)
				hs := tr.Stats().Hosts["api.test"]
				want := tc.max
				if want == 0 {
					want = policy.DefaultMaxConcurrency
				}
				assert.Equal(t, want, hs.ConcurrencyLimit, "no cut")
				assert.Zero(t, hs.AdmissionWaits, "no wait in line")
				assert.Zero(t, hs.Shed)
			})
		})
	}
}

// queue is a host that keeps a queue: its latency grows with the
// attempts in flight past its workers, as a host past its capacity does.
type queue struct {
	srv      *rt.Server
	workers  int
	inFlight atomic.Int64
}

func (q *queue) RoundTrip(req *http.Request) (*http.Response, error) {
	q.inFlight.Add(1)
	defer q.inFlight.Add(-1)
	return q.srv.RoundTrip(req)
}

// A host that truly collapses still cuts its limit: its latency climbs
// with the queue the callers build, or most of what it is sent is lost
// (timed out, refused with a 503, or throttled).
func TestAdmissionCutsOnCollapse(t *testing.T) {
	for _, tc := range []struct {
		name string
		host func() http.RoundTripper
	}{
		{name: "a queue", host: func() http.RoundTripper {
			q := &queue{workers: 4}
			q.srv = &rt.Server{Choose: func(int, *http.Request) rt.Step {
				return rt.Step{Delay: 10 * time.Millisecond * time.Duration(max(1, q.inFlight.Load()/int64(q.workers)))}
			}}
			return q
		}},
		{name: "most time out", host: func() http.RoundTripper {
			rnd := draw(3)
			return &rt.Server{Choose: func(int, *http.Request) rt.Step {
				if rnd() < 0.8 {
					return rt.Step{Fault: rt.Hang}
				}
				return rt.Step{Delay: 10 * time.Millisecond}
			}}
		}},
		{name: "most are refused with a plain 503", host: func() http.RoundTripper {
			rnd := draw(9)
			return &rt.Server{Choose: func(int, *http.Request) rt.Step {
				if rnd() < 0.8 {
					return rt.Step{Status: 503, Delay: time.Millisecond}
				}
				return rt.Step{Delay: 10 * time.Millisecond}
			}}
		}},
		{name: "most are throttled", host: func() http.RoundTripper {
			rnd := draw(5)
			return &rt.Server{Choose: func(int, *http.Request) rt.Step {
				if rnd() < 0.8 {
					return rt.Step{Status: 429, Delay: time.Millisecond}
				}
				return rt.Step{Delay: 10 * time.Millisecond}
			}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := policy.Default()
				cfg.Rules[0].Retry.PerAttemptTimeout = 100 * time.Millisecond
				cfg.Admission = &policy.Admission{MaxConcurrency: 64}
				cfg.Pace, cfg.Hold = &policy.Pace{Off: true}, &policy.Hold{Off: true} // the limit alone
				tr := &retryhttp.Transport{Base: tc.host(), Policy: cfg}
				loop(t, tr, 64, 20, 0)
				hs := tr.Stats().Hosts["api.test"]
				assert.Less(t, hs.ConcurrencyLimit, 32, "cut by half at least")
			})
		})
	}
}

// The limit follows the policy in force: a higher MaxConcurrency lifts a
// limit that sat at the old one, a lower one bounds it, and while the
// policy has no admission, Stats show none; attempts sent under the old
// policy still give their slots back.
func TestAdmissionFollowsThePolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step { return rt.Step{Delay: 500 * time.Millisecond} }}
		tr := admitting(srv, 2, time.Second)
		for _, err := range burst(t, tr, "/x", 2, 0) {
			require.NoError(t, err)
		}
		require.Equal(t, 2, tr.Stats().Hosts["api.test"].ConcurrencyLimit)

		with := func(max int) *policy.Config {
			cfg := policy.Default()
			if max > 0 {
				cfg.Admission = &policy.Admission{MaxConcurrency: max, MaxWait: time.Second}
			}
			return cfg
		}
		require.NoError(t, tr.SetPolicy(with(10)))
		assert.Equal(t, 10, tr.Stats().Hosts["api.test"].ConcurrencyLimit, "raised with the policy")
		start := time.Now()
		for _, err := range burst(t, tr, "/x", 10, 0) {
			require.NoError(t, err)
		}
		assert.Equal(t, 500*time.Millisecond, time.Since(start), "ten at once")
		assert.Zero(t, tr.Stats().Hosts["api.test"].AdmissionWaits)

		require.NoError(t, tr.SetPolicy(with(3)))
		assert.Equal(t, 3, tr.Stats().Hosts["api.test"].ConcurrencyLimit, "lowered with the policy")

		var wg sync.WaitGroup
		wg.Go(func() { burst(t, tr, "/x", 3, 0) })
		synctest.Wait() // three in flight under the limit
		require.Equal(t, 3, tr.Stats().Hosts["api.test"].InFlight)
		require.NoError(t, tr.SetPolicy(with(0)))
		hs := tr.Stats().Hosts["api.test"]
		assert.Zero(t, hs.ConcurrencyLimit, "no admission: no limit shown")
		assert.Zero(t, hs.InFlight)
		wg.Wait()

		require.NoError(t, tr.SetPolicy(with(3)))
		hs = tr.Stats().Hosts["api.test"]
		assert.Equal(t, 3, hs.ConcurrencyLimit)
		assert.Zero(t, hs.InFlight, "the attempts sent under admission gave their slots back")
		start = time.Now()
		for _, err := range burst(t, tr, "/x", 3, 0) {
			require.NoError(t, err)
		}
		assert.Equal(t, 500*time.Millisecond, time.Since(start), "three at once")
	})
}

// Reading Stats changes nothing, a policy's new MaxConcurrency included:
// after SetPolicy raises it, an attempt waiting in line stays there until
// a request of the host fits the limit to it or a slot comes back, and
// Stats shows the limit the policy in force gives all the same.
func TestStatsLeaveTheLineAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(int, *http.Request) rt.Step { return rt.Step{Delay: 2 * time.Second} }}
		tr := admitting(srv, 1, 10*time.Second)
		var wg sync.WaitGroup
		wg.Go(func() { burst(t, tr, "/x", 2, 0) })
		synctest.Wait() // one in flight, one in line
		require.Equal(t, 1, srv.Count())

		cfg := policy.Default()
		cfg.Admission = &policy.Admission{MaxConcurrency: 3, MaxWait: 10 * time.Second}
		require.NoError(t, tr.SetPolicy(cfg))
		time.Sleep(time.Second) // virtual time
		hs := tr.Stats().Hosts["api.test"]
		assert.Equal(t, 3, hs.ConcurrencyLimit, "the limit under the policy in force")
		assert.Equal(t, 1, hs.InFlight)
		synctest.Wait()
		assert.Equal(t, 1, srv.Count(), "reading Stats let the attempt in line go")
		wg.Wait()
		assert.Equal(t, 2, srv.Count())
	})
}
