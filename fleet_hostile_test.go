package retryhttp_test

import (
	"context"
	"net/http"
	"sync/atomic"
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

// blindFleet is a shared Fleet that, while blind is set, cannot tell
// (its store is slow or down) and answers as a Fleet then must: allow,
// no hold.
type blindFleet struct {
	*memfleet.Fleet
	blind atomic.Bool
}

func (f *blindFleet) Look(host, rule string) retryhttp.FleetView {
	if f.blind.Load() {
		return retryhttp.FleetView{}
	}
	return f.Fleet.Look(host, rule)
}

// ResetBackoff ends the fleet's holds that the Transport knows of, the
// ones its requests met included, even when the Fleet cannot tell at
// that instant: once it can again, the hold it shows is the one that
// was ended, and holds no request of that Transport.
func TestResetBackoffEndsTheFleetsHoldsMetWhileTheFleetCannotTell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			if req.URL.Path == "/limit" {
				return rt.Step{Status: 429, Header: http.Header{"Retry-After": {"30"}}}
			}
			return rt.Step{}
		}}
		fleet := &blindFleet{Fleet: memfleet.New()}
		a := &retryhttp.Transport{Base: srv, Fleet: fleet}
		b := &retryhttp.Transport{Base: srv, Fleet: fleet}
		_, err := getWithin(t, a, retryhttp.WithoutRetries(t.Context()), "/limit", 0)
		require.NoError(t, err)
		_, err = getWithin(t, b, t.Context(), "/x", time.Second)
		require.ErrorIs(t, err, retryhttp.ErrHeld, "the fleet's hold holds b")
		require.Len(t, b.Stats().Hosts["api.test"].Holds, 1, "b knows of the fleet's hold")

		fleet.blind.Store(true)
		b.ResetBackoff("api.test")
		fleet.blind.Store(false)
		assert.Empty(t, b.Stats().Hosts["api.test"].Holds, "ended by the host's owner")
		status, err := getWithin(t, b, t.Context(), "/x", time.Second)
		require.NoError(t, err, "the hold b knew of is over for b")
		assert.Equal(t, 200, status)
		assert.Empty(t, b.Stats().Hosts["api.test"].Holds, "and not met again")
	})
}

// panickyFleet is a shared Fleet whose Look panics from the look-th call
// on (0: never), and whose Report panics from the report-th on.
type panickyFleet struct {
	*memfleet.Fleet
	look, report    int64
	looks, reported atomic.Int64
}

func (f *panickyFleet) Look(host, rule string) retryhttp.FleetView {
	if n := f.looks.Add(1); f.look > 0 && n >= f.look {
		panic("the fleet is broken")
	}
	return f.Fleet.Look(host, rule)
}

func (f *panickyFleet) Report(host string, r retryhttp.FleetReport) {
	if n := f.reported.Add(1); f.report > 0 && n >= f.report {
		panic("the fleet is broken")
	}
	f.Fleet.Report(host, r)
}

// A Fleet that panics ends its request as a hook that panics does: the
// panic reaches the caller's goroutine with its value, once every
// attempt is cancelled and closed, the answer kept for the caller
// closed and the request's body closed; the Transport goes on working.
func TestFleetPanicsReachTheCaller(t *testing.T) {
	hedged := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
		Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 10 * time.Millisecond}}}, Hold: &policy.Hold{}}
	tests := []struct {
		name         string
		cfg          *policy.Config
		look, report int64
	}{
		{"Look, before the first attempt", nil, 1, 0},
		{"Look, after an attempt that may be retried", nil, 2, 0},
		{"Look, before a retry", nil, 3, 0},
		{"Report", nil, 0, 1},
		{"Look, before a hedge", hedged, 2, 0},
		{"Report, of a hedge", hedged, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(n int, req *http.Request) rt.Step {
					if req.Header.Get(retryhttp.AttemptsHeader) == "" {
						return rt.Step{Status: 503, Delay: 50 * time.Millisecond, Body: "busy"}
					}
					return rt.Step{Delay: time.Second, Body: "ok"}
				}}
				fleet := &panickyFleet{Fleet: memfleet.New(), look: tt.look, report: tt.report}
				var answered, closedAnswers atomic.Int64
				tr := &retryhttp.Transport{Policy: tt.cfg, Fleet: fleet, Base: roundTripFunc(func(req *http.Request) (*http.Response, error) {
					resp, err := srv.RoundTrip(req)
					if resp != nil {
						answered.Add(1)
						resp.Body = &closeCounter{ReadCloser: resp.Body, n: &closedAnswers}
					}
					return resp, err
				})}
				var closed atomic.Int64
				req := newRequest(t, t.Context(), "PUT", "payload")
				req.Body = &closeCounter{ReadCloser: req.Body, n: &closed}
				recovered := func() (p any) {
					defer func() { p = recover() }()
					resp, err := tr.RoundTrip(req)
					if err == nil {
						resp.Body.Close()
					}
					return nil
				}()
				require.Equal(t, "the fleet is broken", recovered)
				assert.Equal(t, int64(1), closed.Load(), "the request's body closed once")
				synctest.Wait()
				assert.Equal(t, answered.Load(), closedAnswers.Load(), "every answer closed")

				fleet.look, fleet.report = 0, 0
				_, err := getWithin(t, tr, t.Context(), "/after", 0)
				require.NoError(t, err, "the Transport goes on working")
			})
		})
	}
}

// garbageFleet answers every Look with view, whatever it is told, and
// flips Spent at each Look when flap is set.
type garbageFleet struct {
	view  retryhttp.FleetView
	flap  bool
	looks atomic.Int64
}

func (f *garbageFleet) Report(string, retryhttp.FleetReport) {}

func (f *garbageFleet) Look(string, string) retryhttp.FleetView {
	v := f.view
	if f.flap {
		v.Spent = f.looks.Add(1)%2 == 0
	}
	return v
}

// A Fleet that answers nonsense never makes a request wait past its
// limits, nor panics: a hold that ended, or has no end, is none; one
// that ends in the year 9999, or has no status, holds the request for
// maxServerDelay (60 s under policy.Default), when one goes first, and
// its answer ends the hold; a budget that flaps refuses a retry or lets
// it go.
func TestFleetGarbageNeverHangsOrPanics(t *testing.T) {
	tests := []struct {
		name string
		view func(now time.Time) retryhttp.FleetView
		flap bool
		// held is how long the request is held before its first attempt.
		held time.Duration
	}{
		{"a hold that ended", func(now time.Time) retryhttp.FleetView {
			return retryhttp.FleetView{HoldUntil: now.Add(-time.Hour), HoldStatus: 429}
		}, false, 0},
		{"a status with no hold", func(time.Time) retryhttp.FleetView { return retryhttp.FleetView{HoldStatus: 429} }, false, 0},
		{"a hold eight thousand years long", func(now time.Time) retryhttp.FleetView {
			return retryhttp.FleetView{HoldUntil: now.AddDate(8000, 0, 0), HoldStatus: 429}
		}, false, time.Minute},
		{"a hold with no status", func(now time.Time) retryhttp.FleetView {
			return retryhttp.FleetView{HoldUntil: now.Add(time.Hour)}
		}, false, time.Minute},
		{"a budget that flaps", func(time.Time) retryhttp.FleetView { return retryhttp.FleetView{} }, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, cfg := range []*policy.Config{nil, {Rules: []policy.Rule{{Name: []policy.Name{{}},
				Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 10 * time.Millisecond}}}, Hold: &policy.Hold{}}} {
				synctest.Test(t, func(t *testing.T) {
					fleet := &garbageFleet{view: tt.view(time.Now()), flap: tt.flap}
					var first time.Time
					tr, srv := newScripted(cfg, rt.Step{Status: 503}, rt.Step{Status: 503}, rt.Step{Body: "ok"})
					tr.Fleet = fleet
					tr.Hooks = &retrytrace.Hooks{AttemptStart: func(i retrytrace.AttemptStartInfo) {
						if i.Attempt == 1 {
							first = time.Now()
						}
					}}
					start := time.Now()
					if tt.held > 0 {
						_, err := getWithin(t, tr, t.Context(), "/x", time.Second)
						require.ErrorIs(t, err, retryhttp.ErrHeld, "a request that cannot wait out the hold is refused at once")
						assert.Zero(t, srv.Count(), "nothing sent")
						var he *retryhttp.HoldError
						require.ErrorAs(t, err, &he)
						assert.Equal(t, tt.held, he.Remaining)
						holds := tr.Stats().Hosts["api.test"].Holds
						require.Len(t, holds, 1)
						assert.True(t, holds[0].Fleet)
						assert.Equal(t, start.Add(tt.held), holds[0].Until)
					}
					_, err := getWithin(t, tr, t.Context(), "/x", time.Hour)
					require.NoError(t, err)
					assert.Positive(t, srv.Count())
					within(t, first.Sub(start), tt.held, time.Second, "held as long as the policy waits for a server, at most")
					assert.Less(t, time.Since(first), 5*time.Second, "no wait past the policy's limits")
					assert.Empty(t, tr.Stats().Hosts["api.test"].Holds)
					if tt.held > 0 {
						asked := time.Now()
						_, err := getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/x", time.Hour)
						require.NoError(t, err)
						assert.Equal(t, asked, time.Now(), "the answer of the request that went first ended the hold")
					}
				})
			}
		})
	}
}

// Each attempt is reported to the fleet as DESIGN's accounting counts
// it: a retryable failure takes a token, a success adds, and an attempt
// cancelled (a hedge that lost, one the caller gave up on) neither; an
// answer that sets a hold reports the hold.
func TestFleetReportsEachKindOfAttempt(t *testing.T) {
	throttle := &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}
	retrying := func() *policy.Config {
		cfg := retryConfig(3, 503, 429)
		cfg.Throttle, cfg.Hold = throttle, &policy.Hold{}
		return cfg
	}
	hedging := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
		Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: 10 * time.Millisecond}}}, Throttle: throttle}
	tests := []struct {
		name     string
		cfg      *policy.Config
		classify func(int, *http.Response, error) retryhttp.Verdict
		steps    []rt.Step
		cancelAt time.Duration // the caller gives up then; 0: never
		want     map[retryhttp.FleetBudget]int
		holds    int // reports that carry a hold
	}{
		{"a success after retries", retrying(), nil,
			[]rt.Step{{Status: 503}, {Status: 503}, {Body: "ok"}}, 0,
			map[retryhttp.FleetBudget]int{retryhttp.FleetFailure: 2, retryhttp.FleetSuccess: 1}, 0},
		{"a 429 that holds", retrying(), nil,
			[]rt.Step{{Status: 429, Header: http.Header{"Retry-After": {"2"}}}, {Body: "ok"}}, 0,
			map[retryhttp.FleetBudget]int{retryhttp.FleetFailure: 1, retryhttp.FleetSuccess: 1}, 1},
		{"a Throttled verdict", retrying(), func(_ int, resp *http.Response, _ error) retryhttp.Verdict {
			if resp != nil && resp.StatusCode == 400 {
				return retryhttp.Throttled.After(time.Second)
			}
			return retryhttp.UsePolicy
		}, []rt.Step{{Status: 400}, {Body: "ok"}}, 0,
			map[retryhttp.FleetBudget]int{retryhttp.FleetFailure: 1, retryhttp.FleetSuccess: 1}, 1},
		{"a hedge that lost", hedging, nil,
			[]rt.Step{{Delay: time.Second, Body: "slow"}, {Body: "fast"}}, 0,
			map[retryhttp.FleetBudget]int{retryhttp.FleetSuccess: 1}, 0},
		{"an attempt the caller gave up on", retrying(), nil,
			[]rt.Step{{Delay: time.Second}}, 100 * time.Millisecond,
			map[retryhttp.FleetBudget]int{}, 0},
		{"a hedged request the caller gave up on", hedging, nil,
			[]rt.Step{{Delay: time.Second}}, 100 * time.Millisecond,
			map[retryhttp.FleetBudget]int{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fleet := newMemFleet()
				tr, _ := newScripted(tt.cfg, tt.steps...)
				tr.Fleet, tr.Classify = fleet, tt.classify
				ctx := t.Context()
				if tt.cancelAt > 0 {
					var cancel func()
					ctx, cancel = context.WithTimeout(ctx, tt.cancelAt)
					defer cancel()
				}
				resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
				if tt.cancelAt > 0 {
					require.Error(t, err)
				} else {
					require.NoError(t, err)
					readAll(t, resp)
				}
				synctest.Wait()
				assert.Equal(t, tt.want, fleet.budgets())
				holds := 0
				for _, r := range fleet.reports {
					if !r.HoldUntil.IsZero() {
						holds++
					}
				}
				assert.Equal(t, tt.holds, holds, "reports of a hold")
			})
		})
	}
}
