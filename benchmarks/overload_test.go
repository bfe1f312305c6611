package benchmarks

import (
	"cmp"
	"errors"
	"math"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SmokeScale shrinks the overload scenarios for `go test`: long enough
// for every part of each to run (the trouble, its end), far too short for
// their figures.
const SmokeScale = 0.05

// An open load starts each client's requests once per interval, the
// group's requests within half a spacing of their slots, the same way
// for the same seed.
func TestScheduleKeepsTheRate(t *testing.T) {
	sc := Scenario{Duration: time.Second, Seed: OverloadSeed}
	g := Group{Clients: 4, Rate: 10, Deadline: time.Second}
	clients := make([]*http.Client, g.Clients)
	for i := range clients {
		clients[i] = &http.Client{}
	}
	sends := schedule(g, clients, sc)
	assert.Equal(t, sends, schedule(g, clients, sc), "same seed, same schedule")
	slices.SortFunc(sends, func(a, b send) int { return cmp.Compare(a.at, b.at) })
	spacing := 25 * time.Millisecond
	perClient := map[*http.Client]int{}
	for _, s := range sends {
		perClient[s.client]++
		assert.Equal(t, g.Deadline, s.deadline)
		assert.True(t, s.at >= 0 && s.at < sc.Duration, "within the load: %v", s.at)
	}
	for i, s := range sends[1 : len(sends)-1] {
		slot := spacing * time.Duration(i+1)
		assert.InDelta(t, slot, s.at, float64(spacing/2), "send %d", i+1)
	}
	assert.InDelta(t, 40, len(sends), 1, "10 per second for each of 4 clients")
	for _, n := range perClient {
		assert.InDelta(t, 10, n, 1, "a client's sends")
	}
}

// A load that cannot be scheduled sends nothing, rather than divide by
// zero or loop for ever.
func TestScheduleOfNothing(t *testing.T) {
	sc := Scenario{Duration: time.Second, Seed: OverloadSeed}
	one := []*http.Client{{}}
	for _, tc := range []struct {
		name    string
		g       Group
		clients []*http.Client
	}{
		{"no clients", Group{Rate: 10}, nil},
		{"an infinite rate", Group{Clients: 1, Rate: math.Inf(1)}, one},
		{"a rate past a nanosecond", Group{Clients: 1, Rate: 1e10}, one},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Empty(t, schedule(tc.g, tc.clients, sc))
		})
	}
}

// A closed load keeps each caller's one request in flight, until the
// load's end.
func TestClosedLoadKeepsOneRequestPerCaller(t *testing.T) {
	inBubble(t, func() {
		sc := Scenario{Name: "closed", Duration: time.Second, Window: Window{0, time.Second},
			Host: func(Scenario) Host { return NewWorkerHost(100, 10*time.Millisecond, Loss{}) },
			Load: []Group{{Clients: 2, Callers: 3, Deadline: time.Second}}}
		tr := sc.Run(Bare())
		assert.Len(t, tr.Requests, 2*3*100, "6 callers, 100 requests each of 10 ms")
		assert.InDelta(t, 2*3*99, tr.Goodput(sc.Window), 1e-9, "the last ones end at the load's end")
	})
}

// A caller refused at once pauses, rather than stop the clock.
func TestClosedLoadPausesAfterInstantFailures(t *testing.T) {
	inBubble(t, func() {
		refuse := Contender{Name: "refuse", New: func(http.RoundTripper) http.RoundTripper { return refuser{} },
			Refusal: func(error) string { return "refused" }}
		sc := Scenario{Name: "closed", Duration: 100 * time.Millisecond, Window: Window{0, 100 * time.Millisecond},
			Host: func(Scenario) Host { return NewOutageHost(0, 0) },
			Load: []Group{{Clients: 1, Callers: 1, Deadline: time.Second}}}
		tr := sc.Run(refuse)
		assert.Len(t, tr.Requests, int(sc.Duration/ClosedPause))
		assert.InDelta(t, 1, tr.Share(sc.Window, Request.Refused), 1e-9)
		assert.Empty(t, tr.Attempts)
	})
}

// refuser fails every request at once, sending nothing.
type refuser struct{}

func (refuser) RoundTrip(*http.Request) (*http.Response, error) { return nil, errRefused }

var errRefused = errors.New("refused")

// Every scenario runs with every contender that can, and every run
// accounts for each request and attempt: each attempt belongs to a
// request, each request ends by its deadline with an answer or a named
// failure, and none makes more attempts than its policy allows. The
// bubble fails the test if a run leaves a goroutine behind.
func TestSmokeOverload(t *testing.T) {
	for _, sc := range Scenarios() {
		sc = sc.Scaled(SmokeScale)
		for _, c := range Contenders() {
			if !c.Runs(sc) {
				continue
			}
			t.Run(sc.Name+"/"+c.Name, func(t *testing.T) {
				var tr Trial
				inBubble(t, func() { tr = sc.Run(c) })
				require.NotEmpty(t, tr.Requests)
				sent := 0
				for _, r := range tr.Requests {
					sent += r.Attempts
					assert.Equal(t, r.Status == 0, r.Failure != "", "an answer or a failure: %+v", r)
					assert.LessOrEqual(t, r.Attempts, 3, "attempts of %+v", r)
					assert.LessOrEqual(t, r.End-r.Start, time.Duration(5*time.Second), "within the longest deadline: %+v", r)
					if c.Name == "bare" {
						assert.Equal(t, 1, r.Attempts, "bare sends each request once: %+v", r)
					}
				}
				assert.Equal(t, len(tr.Attempts), sent, "every attempt belongs to a request")
				for _, m := range sc.Metrics {
					assert.False(t, m.Unit == "", "a metric with no unit")
				}
			})
		}
	}
}

// The trouble of S2 and S4 is scaled with the run, and the figures of a
// run whose host behaves read as the scenario says: the bare client sees
// every attempt answered in S0, and S4's outage in its window.
func TestSmokeOverloadFigures(t *testing.T) {
	inBubble(t, func() {
		sc := S0().Scaled(SmokeScale)
		tr := sc.Run(Bare())
		assert.InDelta(t, 200, tr.Goodput(sc.Window), 10)
		assert.Zero(t, tr.Share(sc.Window, Request.Refused))
	})
	inBubble(t, func() {
		sc := S4(false).Scaled(SmokeScale)
		require.Equal(t, Window{250 * time.Millisecond, 1750 * time.Millisecond}, sc.Trouble)
		tr := sc.Run(Bare())
		assert.Equal(t, 1.0, tr.StatusShare(sc.Trouble, 503))
		assert.Zero(t, tr.Goodput(Window{sc.Trouble.From + HostLatency, sc.Trouble.To}))
		d, ok := tr.Recovery()
		assert.True(t, ok, "recovered")
		assert.Zero(t, d, "at once")
	})
}

// The benchmarks open their bubbles through testing.RunTests, which this
// checks, at the smoke size: once, whatever the calls testing.Benchmark
// makes to find its b.N.
func TestBenchmarkBubble(t *testing.T) {
	var tr Trial
	var began time.Time
	runs := 0
	testing.Benchmark(func(b *testing.B) {
		if runs++; runs == 1 {
			inBubble(b, func() {
				began = time.Now()
				tr = S2().Scaled(SmokeScale).Run(Bare())
			})
		}
	})
	// A bubble's clock starts at midnight UTC, 2000-01-01.
	assert.Equal(t, 2000, began.UTC().Year(), "in a bubble")
	require.NotEmpty(t, tr.Requests)
	assert.Greater(t, tr.Requests[len(tr.Requests)-1].Start, tr.Scenario.Duration*9/10, "the load ran to its end")
}
