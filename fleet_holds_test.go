package retryhttp_test

import (
	"net/http"
	"slices"
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
)

// aYearOn is the end of a hold a year from now.
func aYearOn() time.Time { return time.Now().Add(365 * 24 * time.Hour) }

// A fleet's hold holds a member no longer than the member's own
// maxServerDelay (60 s under policy.Default) past the moment it first
// met the hold, whoever set it and for however long: when that cap ends,
// one request goes first and the others wait for its answer, which here
// ends the hold for the member, though the fleet still shows it.
func TestAFleetHoldLastsAtMostTheMembersMaxServerDelay(t *testing.T) {
	tests := []struct {
		name string
		// hold sets a hold in fleet, on api.test and the rule "*".
		hold func(t *testing.T, fleet retryhttp.Fleet)
	}{
		{"a Report of a year", func(_ *testing.T, fleet retryhttp.Fleet) {
			fleet.Report("api.test", retryhttp.FleetReport{Rule: "*", HoldUntil: aYearOn(), HoldStatus: 429})
		}},
		{"a member that waits longer", func(t *testing.T, fleet retryhttp.Fleet) {
			cfg := policy.Default()
			cfg.MaxServerDelay = 10 * time.Minute
			patient := &retryhttp.Transport{Policy: cfg, Fleet: fleet,
				Base: script(rt.Step{Status: 429, Header: http.Header{"Retry-After": {"300"}}})}
			status, err := getWithin(t, patient, retryhttp.WithoutRetries(t.Context()), "/limit", 0)
			require.NoError(t, err)
			require.Equal(t, 429, status)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fleet := memfleet.New()
				tt.hold(t, fleet)
				time.Sleep(10 * time.Second) // the member meets the hold later than it was set

				var mu sync.Mutex
				var sent []time.Time
				srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
					mu.Lock()
					defer mu.Unlock()
					sent = append(sent, time.Now())
					return rt.Step{Delay: time.Second}
				}}
				tr := &retryhttp.Transport{Base: srv, Fleet: fleet}
				met := time.Now()
				var wg sync.WaitGroup
				for range 5 {
					wg.Go(func() {
						status, err := getWithin(t, tr, retryhttp.WithoutRetries(t.Context()), "/x", 2*time.Hour)
						if assert.NoError(t, err, "a request that can wait out the member's cap waits") {
							assert.Equal(t, 200, status)
						}
					})
				}
				synctest.Wait()
				assert.Equal(t, []retryhttp.Hold{{Rule: "*", Status: 429, Since: met, Until: met.Add(time.Minute), Fleet: true}},
					tr.Stats().Hosts["api.test"].Holds, "the fleet's hold, cut at the member's maxServerDelay")
				wg.Wait()

				require.Len(t, sent, 5)
				within(t, sent[0].Sub(met), time.Minute, time.Second, "one goes first when the member's cap ends")
				for _, at := range sent[1:] {
					assert.GreaterOrEqual(t, at, sent[0].Add(time.Second), "the others wait for its answer")
				}
				require.True(t, fleet.Look("api.test", "*").HoldUntil.After(time.Now()), "the fleet still shows its hold")
				asked := time.Now()
				status, err := getWithin(t, tr, t.Context(), "/after", 2*time.Second)
				require.NoError(t, err)
				assert.Equal(t, 200, status)
				require.Len(t, sent, 6)
				assert.Equal(t, asked, sent[5], "the probe's answer ended the hold for the member: sent at once")
				assert.Empty(t, tr.Stats().Hosts["api.test"].Holds)
			})
		})
	}
}

// viewFleet is a Fleet that shows the hold it is set to show, on every
// host and rule, whatever it is told.
type viewFleet struct {
	mu   sync.Mutex
	view retryhttp.FleetView
}

func (f *viewFleet) Report(string, retryhttp.FleetReport) {}

func (f *viewFleet) Look(string, string) retryhttp.FleetView {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.view
}

func (f *viewFleet) show(v retryhttp.FleetView) {
	f.mu.Lock()
	f.view = v
	f.mu.Unlock()
}

// A fleet's hold that the member met is the same hold for as long as the
// fleet shows the same end: its cap runs from when the member first met
// it, and once its probe's answer ended it, it stays ended, even when the
// fleet could not tell for a while and shows it again. A hold whose end
// moved is a new one, met afresh and cut afresh.
func TestAFleetHoldIsNewOnlyWhenItsEndMoves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{})
		end := aYearOn()
		fleet := &viewFleet{view: retryhttp.FleetView{HoldUntil: end, HoldStatus: 503}}
		tr := &retryhttp.Transport{Base: srv, Fleet: fleet}
		met := time.Now()
		_, err := getWithin(t, tr, t.Context(), "/hasty", time.Second)
		var held *retryhttp.HoldError
		require.ErrorAs(t, err, &held, "a request that cannot wait out the member's cap")
		assert.Equal(t, time.Minute, held.Remaining, "held until the member's cap, not the fleet's end")
		assert.Equal(t, 503, held.Status)

		time.Sleep(30 * time.Second)
		_, err = getWithin(t, tr, t.Context(), "/hasty", time.Second)
		require.ErrorAs(t, err, &held, "the same end, shown again")
		assert.Equal(t, 30*time.Second, held.Remaining, "the cap runs from when the hold was first met")

		status, err := getWithin(t, tr, t.Context(), "/probe", time.Hour)
		require.NoError(t, err)
		assert.Equal(t, 200, status)
		within(t, time.Since(met), time.Minute, time.Second, "it went first when the cap ended")

		for _, step := range []struct {
			name string
			view retryhttp.FleetView
		}{
			{"the same end", retryhttp.FleetView{HoldUntil: end, HoldStatus: 503}},
			{"the fleet cannot tell", retryhttp.FleetView{}},
			{"the same end, after a spell the fleet could not tell", retryhttp.FleetView{HoldUntil: end, HoldStatus: 503}},
			{"an earlier end", retryhttp.FleetView{HoldUntil: end.Add(-time.Hour), HoldStatus: 503}},
		} {
			fleet.show(step.view)
			asked := time.Now()
			status, err := getWithin(t, tr, t.Context(), "/settled", time.Second)
			require.NoError(t, err, step.name)
			assert.Equal(t, 200, status, step.name)
			assert.Equal(t, asked, time.Now(), "%s: the hold its probe's answer ended stays ended", step.name)
		}

		fleet.show(retryhttp.FleetView{HoldUntil: end.Add(time.Second), HoldStatus: 429})
		moved := time.Now()
		_, err = getWithin(t, tr, t.Context(), "/hasty", time.Second)
		require.ErrorAs(t, err, &held, "an end that moved is a new hold")
		assert.Equal(t, time.Minute, held.Remaining, "cut afresh from when it was met")
		assert.Equal(t, 429, held.Status)
		assert.Equal(t, []retryhttp.Hold{{Rule: "*", Status: 429, Since: moved, Until: moved.Add(time.Minute), Fleet: true}},
			tr.Stats().Hosts["api.test"].Holds)
		assert.False(t, slices.ContainsFunc(srv.Attempts(), func(a rt.Attempt) bool { return a.Path == "/hasty" }),
			"no refused request was sent")
	})
}
