package benchmarks

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ms = time.Millisecond

// trialOf is a trial of a 1 s scenario offering 10 requests per second,
// in trouble in [200 ms, 500 ms), with these requests and attempts.
func trialOf(requests []Request, attempts []Attempt) Trial {
	return Trial{Scenario: Scenario{Duration: time.Second, Window: Window{0, time.Second},
		Trouble: Window{200 * ms, 500 * ms}, Load: []Group{{Clients: 2, Rate: 5}}},
		Requests: requests, Attempts: attempts}
}

func TestTrialFigures(t *testing.T) {
	tr := trialOf([]Request{
		{Start: 0, End: 10 * ms, Status: 200, Attempts: 1},
		{Start: 100 * ms, End: 400 * ms, Status: 429, Attempts: 3},
		{Start: 300 * ms, End: 1300 * ms, Failure: FailDeadline, Attempts: 2},
		{Start: 600 * ms, End: 600 * ms, Failure: "shed"},
		{Start: 900 * ms, End: 1100 * ms, Status: 204, Attempts: 1},
	}, []Attempt{
		{Arrived: 0, Answered: 10 * ms, Status: 200},
		{Arrived: 100 * ms, Answered: 110 * ms, Status: 429},
		{Arrived: 200 * ms, Answered: 210 * ms, Status: 429},
		{Arrived: 300 * ms, Answered: 310 * ms, Status: 429},
		{Arrived: 300 * ms, Answered: 700 * ms, Status: 200},
		{Arrived: 390 * ms, Answered: 400 * ms, Status: 429},
		{Arrived: 900 * ms, Answered: 1100 * ms, Status: 204},
	})
	all, early := tr.Scenario.Window, Window{0, 500 * ms}
	assert.InDelta(t, 1.0, tr.Goodput(all), 1e-9, "one 2xx came within the second")
	assert.InDelta(t, 1.0, tr.Goodput(Window{0, 2 * time.Second}), 1e-9, "two within two seconds")
	assert.InDelta(t, 7.0, tr.AttemptRate(all), 1e-9)
	assert.InDelta(t, 4.0/7, tr.StatusShare(all, 429), 1e-9)
	assert.InDelta(t, 4.0/6, tr.StatusShare(early, 429), 1e-9)
	assert.True(t, math.IsNaN(tr.StatusShare(Window{2 * time.Second, 3 * time.Second}, 429)), "no attempt")
	assert.InDelta(t, 7.0/5, tr.PerRequest(all), 1e-9)
	assert.InDelta(t, 6.0/3, tr.PerRequest(early), 1e-9, "attempts counted whenever they came")
	assert.InDelta(t, 1.0/5, tr.Share(all, Request.Refused), 1e-9)
	assert.InDelta(t, 1.0/5, tr.Share(all, func(r Request) bool { return r.Failure == FailDeadline }), 1e-9)
	assert.InDelta(t, 1000.0, tr.Quantile(all, 0.99), 1e-9, "the deadline's whole second")
	assert.InDelta(t, 200.0, tr.Quantile(all, 0.6), 1e-9)
	assert.InDelta(t, 400.0, tr.HostQuantile(all, 1), 1e-9)
	assert.InDelta(t, 10.0, tr.HostQuantile(all, 0.5), 1e-9)
	assert.True(t, math.IsNaN(tr.Quantile(Window{5 * time.Second, 6 * time.Second}, 0.5)), "no request")
}

func TestRequestOutcomes(t *testing.T) {
	for _, tc := range []struct {
		r           Request
		ok, refused bool
	}{
		{Request{Status: 200}, true, false},
		{Request{Status: 299}, true, false},
		{Request{Status: 429}, false, false},
		{Request{Failure: FailDeadline}, false, false},
		{Request{Failure: FailError}, false, false},
		{Request{Failure: "held"}, false, true},
	} {
		assert.Equal(t, tc.ok, tc.r.OK(), "%+v", tc.r)
		assert.Equal(t, tc.refused, tc.r.Refused(), "%+v", tc.r)
	}
}

func TestTrialSeries(t *testing.T) {
	tr := trialOf([]Request{
		{End: 50 * ms, Status: 200},
		{End: 60 * ms, Status: 429},
		{End: 450 * ms, Status: 200},
		{End: 999 * ms, Status: 200},
		{End: time.Second, Status: 200}, // past the load's end
	}, []Attempt{
		{Arrived: 10 * ms, Status: 200},
		{Arrived: 20 * ms, Status: 429},
		{Arrived: 420 * ms, Status: 503},
	})
	s := tr.Series(400 * ms)
	require.Len(t, s, 3)
	assert.Equal(t, []Sample{
		{At: 0, Goodput: 2.5, Attempts: 5, Throttled: 2.5},
		{At: 400 * ms, Goodput: 2.5, Attempts: 2.5, Throttled: 2.5},
		{At: 800 * ms, Goodput: 5},
	}, s, "rates per second; the last step is 200 ms long")
	assert.Nil(t, tr.Series(0))
}

// Goodput comes back when every step from then on holds 80% of the
// offered rate (10 per second: one answer per 100 ms step).
func TestTrialRecovery(t *testing.T) {
	every := func(from time.Duration) []Request {
		var out []Request
		for at := from; at < time.Second; at += 100 * ms {
			out = append(out, Request{End: at + 50*ms, Status: 200})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		requests []Request
		want     time.Duration
		ok       bool
	}{
		{"never down", every(0), 0, true},
		{"back 200 ms after", every(700 * ms), 200 * ms, true},
		{"back at the last step", every(900 * ms), 400 * ms, true},
		{"a step missing after", append(every(700 * ms)[:1], every(900*ms)...), 400 * ms, true},
		{"never back", nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := trialOf(tc.requests, nil).Recovery()
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
	tr := trialOf(every(0), nil)
	tr.Scenario.Trouble = Window{}
	_, ok := tr.Recovery()
	assert.False(t, ok, "no trouble to recover from")
}
