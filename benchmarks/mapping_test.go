package benchmarks

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testSpec has a capped backoff (100, 200, then 300 ms) so that every part
// of the mapping shows within four attempts.
func testSpec() Spec {
	return Spec{
		MaxAttempts:    4,
		InitialBackoff: 100 * time.Millisecond,
		MaxBackoff:     300 * time.Millisecond,
		Multiplier:     2,
		Jitter:         0.2,
		Statuses:       []int{429, 503},
		HedgeDelay:     50 * time.Millisecond,
		HedgeQuantile:  0.95,
		MaxExtraLoad:   0.02,
		Throttle:       *policy.Default().Throttle,
	}
}

// extraAttempts reports whether p sends more than one attempt for a
// listed status: a retrier or a hedger that tells statuses apart.
func extraAttempts(p Peer) bool {
	return p.Caps.Statuses && (p.Caps.Retries || p.Caps.Hedges)
}

// TestAttempts checks, for every peer built from the same Spec, how many
// attempts the server sees and which answer comes back, on scripted
// servers: listed statuses are retried up to MaxAttempts, others not.
func TestAttempts(t *testing.T) {
	cases := []struct {
		name     string
		statuses []int
		// want attempts and status when p sends extra attempts, and
		// when it does not.
		attempts, status         int
		onceAttempts, onceStatus int
	}{
		{"always 503", []int{503}, 4, 503, 1, 503},
		{"always 429", []int{429}, 4, 429, 1, 429},
		{"503 then 200", []int{503, 200}, 2, 200, 1, 503},
		{"503 twice then 200", []int{503, 503, 200}, 3, 200, 1, 503},
		{"500, not listed", []int{500, 200}, 1, 500, 1, 500},
		{"404, not listed", []int{404, 200}, 1, 404, 1, 404},
		{"200", []int{200, 503}, 1, 200, 1, 200},
	}
	for _, p := range Peers() {
		for _, c := range cases {
			t.Run(p.Name+"/"+c.name, func(t *testing.T) {
				inTime(t, p, func(t *testing.T, _ bool) {
					s := newScript(c.statuses...)
					status, err := do(t, p.New(testSpec(), mem{s}))
					require.NoError(t, err)
					wantN, wantStatus := c.onceAttempts, c.onceStatus
					if extraAttempts(p) {
						wantN, wantStatus = c.attempts, c.status
					}
					assert.Len(t, s.seen(), wantN, "attempts")
					assert.Equal(t, wantStatus, status, "status")
				})
			})
		}
	}
}

// TestBackoff checks the waits between the attempts of every retrier
// against the Spec: min(initial*multiplier^n, max), spread by the jitter
// for the peers that have it and exact for the others. Over several
// requests a jittered peer must show some spread.
func TestBackoff(t *testing.T) {
	spec := testSpec()
	for _, p := range Peers() {
		if !p.Caps.Retries {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				spread := false
				for range 5 {
					s := newScript(503)
					_, err := do(t, p.New(spec, mem{s}))
					require.NoError(t, err)
					at := s.seen()
					require.Len(t, at, spec.MaxAttempts)
					for n := range len(at) - 1 {
						got, mid := at[n+1]-at[n], spec.Wait(n)
						if !p.Caps.Jitter {
							assert.Equal(t, mid, got, "wait before retry %d", n)
							continue
						}
						j := time.Duration(spec.Jitter * float64(mid))
						assert.True(t, got >= mid-j && got <= mid+j, "wait before retry %d: got %v, want %v ± %v", n, got, mid, j)
						spread = spread || got != mid
					}
				}
				assert.Equal(t, p.Caps.Jitter, spread, "waits spread by jitter")
			})
		})
	}
}

// TestHedgeDelay checks that every hedger starts the next attempt one
// HedgeDelay after the last while none has answered, up to MaxAttempts:
// those with a quantile delay too, as a new host's latencies are not yet
// known. A hedger under a load budget is checked by TestLoadBudget.
func TestHedgeDelay(t *testing.T) {
	spec := testSpec()
	for _, p := range HedgePeers() {
		if !p.Caps.Hedges || p.Caps.LoadBudget {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			inTime(t, p, func(t *testing.T, virtual bool) {
				s := newScript(200)
				s.hold = time.Second
				status, err := do(t, p.New(spec, mem{s}))
				require.NoError(t, err)
				assert.Equal(t, 200, status)
				at := s.seen()
				require.Len(t, at, spec.MaxAttempts)
				for i := range at {
					want := time.Duration(i) * spec.HedgeDelay
					if virtual {
						assert.Equal(t, want, at[i], "attempt %d", i+1)
					} else {
						// A timer never fires early; it may fire late.
						assert.GreaterOrEqual(t, at[i], want, "attempt %d", i+1)
					}
				}
			})
		})
	}
}

// TestRetryAfter checks that the retriers that read Retry-After wait what
// the server asks (within the jitter each applies), and the others their
// backoff.
func TestRetryAfter(t *testing.T) {
	spec := testSpec()
	for _, p := range Peers() {
		if !p.Caps.Retries {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newScript(429, 200)
				s.header = http.Header{"Retry-After": {"3"}}
				status, err := do(t, p.New(spec, mem{s}))
				require.NoError(t, err)
				assert.Equal(t, 200, status)
				at := s.seen()
				require.Len(t, at, 2)
				lo, hi := spec.Wait(0)*8/10, spec.Wait(0)*12/10
				if p.Caps.RetryAfter {
					lo, hi = 3*time.Second*8/10, 3*time.Second*12/10
				}
				assert.True(t, at[1] >= lo && at[1] <= hi, "waited %v, want %v to %v", at[1], lo, hi)
			})
		})
	}
}

// TestDeadline sends a request with a 2 s deadline to a server that asks
// for 120 s: a peer that cuts waits at the deadline hands back the 429 at
// once, a retrier that does not fails at the deadline.
func TestDeadline(t *testing.T) {
	for _, p := range Peers() {
		if !p.Caps.Retries {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newScript(429)
				s.header = http.Header{"Retry-After": {"120"}}
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://peer.test/", nil)
				require.NoError(t, err)
				start := time.Now()
				resp, err := (&http.Client{Transport: p.New(testSpec(), mem{s})}).Do(req)
				took := time.Since(start)
				if p.Caps.Deadline {
					require.NoError(t, err)
					resp.Body.Close()
					assert.Equal(t, 429, resp.StatusCode)
					assert.Zero(t, took)
					return
				}
				assert.True(t, errors.Is(err, context.DeadlineExceeded), "got %v, want the deadline", err)
				assert.Equal(t, 2*time.Second, took)
			})
		})
	}
}

// TestBudget runs an outage (every answer a 503 after 1 ms) from 32
// callers at once, 20 requests each, in virtual time: a retrier or hedger
// without a budget sends MaxAttempts per request, one with a budget fewer. A refused
// request gets its 503 back from a peer that keeps the answer, and
// failsafe-go's budget error from the others.
func TestBudget(t *testing.T) {
	spec := LoadSpec()
	for _, p := range Peers() {
		if !extraAttempts(p) {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newScript(503)
				s.hold = time.Millisecond
				rt := p.New(spec, mem{s})
				const callers, each = 32, 20
				var wg sync.WaitGroup
				var refused atomic.Int64
				for range callers {
					wg.Go(func() {
						for range each {
							status, err := do(t, rt)
							if errors.Is(err, budget.ErrExceeded) {
								refused.Add(1)
								continue
							}
							assert.NoError(t, err)
							assert.Equal(t, 503, status)
						}
					})
				}
				wg.Wait()
				assert.Equal(t, p.Caps.Budget && !p.Caps.KeepsAnswer, refused.Load() > 0, "requests failed by a refusal")
				perRequest := float64(len(s.seen())) / (callers * each)
				if p.Caps.Budget {
					assert.Less(t, perRequest, 0.8*float64(spec.MaxAttempts), "attempts per request")
				} else {
					assert.Equal(t, float64(spec.MaxAttempts), perRequest, "attempts per request")
				}
			})
		})
	}
}

// TestIdempotency sends a POST (with GetBody) answered 503 then 200: a
// peer that retries or hedges only idempotent requests sends it once.
func TestIdempotency(t *testing.T) {
	for _, p := range Peers() {
		t.Run(p.Name, func(t *testing.T) {
			inTime(t, p, func(t *testing.T, _ bool) {
				s := newScript(503, 200)
				req, err := http.NewRequest(http.MethodPost, "http://peer.test/", strings.NewReader("order"))
				require.NoError(t, err)
				resp, err := (&http.Client{Transport: p.New(testSpec(), mem{s})}).Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				wantN, wantStatus := 1, 503
				if extraAttempts(p) && !p.Caps.Idempotent {
					wantN, wantStatus = 2, 200
				}
				assert.Len(t, s.seen(), wantN, "attempts")
				assert.Equal(t, wantStatus, resp.StatusCode)
			})
		})
	}
}
