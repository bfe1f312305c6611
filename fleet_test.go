package retryhttp_test

import (
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/internal/memfleet"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// memFleet is the in-memory Fleet that stands for a shared store in tests
// of what the Transport does with a Fleet, recording what it is told and
// asked.
type memFleet struct {
	*memfleet.Fleet
	mu      sync.Mutex
	reports []retryhttp.FleetReport
	looks   int
}

func newMemFleet() *memFleet { return &memFleet{Fleet: memfleet.New()} }

func (f *memFleet) Report(host string, r retryhttp.FleetReport) {
	f.mu.Lock()
	f.reports = append(f.reports, r)
	f.mu.Unlock()
	f.Fleet.Report(host, r)
}

func (f *memFleet) Look(host, rule string) retryhttp.FleetView {
	f.mu.Lock()
	f.looks++
	f.mu.Unlock()
	return f.Fleet.Look(host, rule)
}

// budgets returns how many reports of each budget effect f received.
func (f *memFleet) budgets() map[retryhttp.FleetBudget]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := map[retryhttp.FleetBudget]int{}
	for _, r := range f.reports {
		n[r.Budget]++
	}
	return n
}

// A fleet of 100 members, 10 requests each, against a host that always
// answers 503 spends one budget, not a hundred: about maxTokens/2 extra
// attempts in all, as one Transport would, where members on their own
// spend 20 each. The refusals have their own reason.
func TestFleetSharesItsBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const members, each = 100, 10
		srv := script(rt.Step{Status: 503})
		fleet := newMemFleet()
		var log hookLog
		var refused uint64
		for range members {
			tr := &retryhttp.Transport{Base: srv, Fleet: fleet, Hooks: log.hooks("")}
			for range each {
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				readAll(t, resp)
			}
			refused += tr.Stats().Total.FleetRefusals
		}
		extra := srv.Count() - members*each
		assert.LessOrEqual(t, extra, 60, "extra attempts of the fleet, against %d for members on their own", members*20)
		assert.Positive(t, refused, "the fleet refused retries")
		fleetRefusals := 0
		for _, r := range log.refused() {
			if r.Reason == retrytrace.RefusedFleet {
				fleetRefusals++
			}
		}
		assert.Equal(t, int(refused), fleetRefusals, "each refusal reported with its reason")
		assert.Equal(t, srv.Count(), fleet.budgets()[retryhttp.FleetFailure], "every attempt reported")
	})
}

// A retry is gated by the fleet again when its backoff ends: failures the
// fleet saw during the wait count, and the last response comes back.
func TestFleetGatesARetryAgainAfterItsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fleet := newMemFleet()
		cfg := retryConfig(3, 503)
		cfg.Throttle = &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}
		tr, srv := newScripted(cfg, rt.Step{Status: 503, Body: "busy"})
		tr.Fleet = fleet
		var log hookLog
		tr.Hooks = log.hooks("")
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			assert.Equal(t, "busy", readAll(t, resp), "the last response, kept through the wait")
		}()
		time.Sleep(50 * time.Millisecond) // inside the first backoff of 100 ms
		for range 5 {                     // the rest of the fleet fails meanwhile
			fleet.Report("api.test", retryhttp.FleetReport{Rule: "*", Budget: retryhttp.FleetFailure, Throttle: cfg.Throttle})
		}
		<-done
		srv.WantAttempts(t, 1)
		require.Len(t, log.refused(), 1)
		assert.Equal(t, retrytrace.RefusedFleet, log.refused()[0].Reason)
		assert.Len(t, log.waits(), 1, "refused when the wait ended")
	})
}

// One member's Retry-After holds every member of the fleet.
func TestFleetHoldHoldsEveryMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fleet := newMemFleet()
		limited := script(rt.Step{Status: 429, Header: http.Header{"Retry-After": {"10"}}}, rt.Step{Body: "ok"})
		a := &retryhttp.Transport{Base: limited, Fleet: fleet, Policy: policy.None()}
		a.Policy.Hold = &policy.Hold{}
		resp, err := a.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		require.Equal(t, 429, resp.StatusCode)

		other := script(rt.Step{Body: "ok"})
		b := &retryhttp.Transport{Base: other, Fleet: fleet, Policy: policy.None()}
		b.Policy.Hold = &policy.Hold{}
		start := time.Now()
		resp, err = b.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		other.WantAttempts(t, 1)
		within(t, time.Since(start), 10*time.Second, time.Second, "the other member waits out the fleet's hold")
		assert.Equal(t, uint64(1), b.Stats().Total.HoldWaits)
	})
}

// Attempts that tell the fleet nothing are not reported: a transparent
// resend's first try, a dial refused inside its backoff window; under no
// throttle, nothing is budgeted.
func TestFleetReportsWhatCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fleet := newMemFleet()
		srv := script(rt.Step{Fault: rt.Reset}, rt.Step{Body: "ok"})
		unthrottled := retryConfig(2, 503)
		unthrottled.Throttle = &policy.Throttle{Off: true}
		tr, _ := newCalls(unthrottled, refuse, srv.RoundTrip)
		tr.Fleet = fleet
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Empty(t, fleet.budgets(), "no throttle: no budget reported")

		fleet = newMemFleet()
		cfg := retryConfig(3, 503)
		cfg.Throttle = &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}
		tr, _ = newCalls(cfg, refuse, srv.RoundTrip)
		tr.Fleet = fleet
		resp, err = tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, map[retryhttp.FleetBudget]int{retryhttp.FleetSuccess: 1}, fleet.budgets(),
			"the refused dial was resent transparently: only the answer counts")
	})
}

// A hold that only the fleet knows holds requests as the Transport's own
// do, and Stats lists it, marked as the fleet's, once a request met it;
// the host's owner ends it with ResetBackoff, and the list with it.
func TestFleetHoldIsInStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			if req.URL.Path == "/limit" {
				return rt.Step{Status: 429, Header: http.Header{"Retry-After": {"10"}}}
			}
			return rt.Step{}
		}}
		fleet := memfleet.New()
		a := &retryhttp.Transport{Base: srv, Fleet: fleet}
		b := &retryhttp.Transport{Base: srv, Fleet: fleet}
		start := time.Now()
		_, err := getWithin(t, a, retryhttp.WithoutRetries(t.Context()), "/limit", 0)
		require.NoError(t, err)
		own := a.Stats().Hosts["api.test"].Holds
		require.Len(t, own, 1)
		assert.False(t, own[0].Fleet, "the member that met the answer holds on its own")

		time.Sleep(2 * time.Second)
		_, err = getWithin(t, b, t.Context(), "/x", time.Second)
		require.ErrorIs(t, err, retryhttp.ErrHeld)
		met := time.Now()
		time.Sleep(time.Second)
		assert.Equal(t, []retryhttp.Hold{{Rule: "*", Status: 429, Since: met, Until: start.Add(10 * time.Second), Fleet: true}},
			b.Stats().Hosts["api.test"].Holds, "the fleet's hold, since a request met it")

		b.ResetBackoff("api.test")
		assert.Empty(t, b.Stats().Hosts["api.test"].Holds, "ended by the host's owner")
		_, err = getWithin(t, b, t.Context(), "/x", time.Second)
		require.NoError(t, err)
		assert.Empty(t, b.Stats().Hosts["api.test"].Holds, "and not met again")
	})
}

// A hedge that had ended on its own when another won counts as any
// attempt does, in the Transport's budget and the fleet's alike: its
// answer is an answer of the host's, though it came too late to be
// chosen. (Here it comes as the winner is chosen.)
func TestFleetSeesTheHedgesThatEndedBeforeTheWinner(t *testing.T) {
	throttle := &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}
	tests := []struct {
		name   string
		loser  rt.Step // the answer to attempt 1, which loses
		want   map[retryhttp.FleetBudget]int
		tokens float64 // the Transport's own budget after the request
		holds  int     // holds reported
	}{
		{"a non-fatal 503", rt.Step{Status: 503}, map[retryhttp.FleetBudget]int{retryhttp.FleetFailure: 1, retryhttp.FleetSuccess: 1}, 9, 0},
		{"a 429 that holds", rt.Step{Status: 429, Header: http.Header{"Retry-After": {"2"}}},
			map[retryhttp.FleetBudget]int{retryhttp.FleetFailure: 1, retryhttp.FleetSuccess: 1}, 9, 1},
		{"a success", rt.Step{Body: "late"}, map[retryhttp.FleetBudget]int{retryhttp.FleetSuccess: 2}, 10, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}}, Hedge: &policy.Hedge{MaxAttempts: 2,
					HedgingDelay: 10 * time.Millisecond, NonFatalStatusCodes: []int{503, 429}}}}, Throttle: throttle, Hold: &policy.Hold{}}
				release := make(chan struct{})
				srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
					if req.Header.Get(retryhttp.AttemptsHeader) == "" {
						<-release
						return tt.loser
					}
					return rt.Step{Body: "won"}
				}}
				fleet := newMemFleet()
				tr := &retryhttp.Transport{Base: srv, Policy: cfg, Fleet: fleet,
					Hooks: &retrytrace.Hooks{AttemptDone: func(i retrytrace.AttemptDoneInfo) {
						if i.Attempt == 2 { // the winner, on the request's goroutine
							close(release)
							synctest.Wait() // attempt 1's answer is in
						}
					}}}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				assert.Equal(t, "won", readAll(t, resp))
				synctest.Wait()
				assert.Equal(t, tt.want, fleet.budgets(), "the fleet's budget")
				assert.InDelta(t, tt.tokens, tr.Stats().Hosts["api.test"].Tokens, 1e-9, "the Transport's own")
				holds := 0
				for _, r := range fleet.reports {
					if !r.HoldUntil.IsZero() {
						holds++
					}
				}
				assert.Equal(t, tt.holds, holds, "reports of a hold")
				assert.Len(t, tr.Stats().Hosts["api.test"].Holds, tt.holds, "the Transport's own holds")
				assert.Zero(t, tr.Stats().Total.HedgesCancelled, "nothing cut off: attempt 1 had ended")
			})
		})
	}
}
