package otel_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/internal/memfleet"
	"github.com/retryhttp/retryhttp/otel"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
	"github.com/retryhttp/retryhttp/status"
)

// record is a slog record as a handler is given it.
type record struct {
	msg   string
	attrs map[string]slog.Value
}

// recorder is a slog.Handler that keeps every record, at every level.
type recorder struct {
	mu      *sync.Mutex
	records *[]record
}

func newRecorder() recorder { return recorder{mu: new(sync.Mutex), records: new([]record)} }

func (recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r recorder) WithAttrs([]slog.Attr) slog.Handler     { return r }
func (r recorder) WithGroup(string) slog.Handler          { return r }

func (r recorder) Handle(_ context.Context, rec slog.Record) error {
	attrs := map[string]slog.Value{}
	rec.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.records = append(*r.records, record{rec.Message, attrs})
	return nil
}

func (r recorder) all() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]record(nil), *r.records...)
}

// hostTally counts, per host, what the hooks were told.
type hostTally struct {
	mu         sync.Mutex
	requests   map[string]int
	extra      map[string]int
	hedges     map[string]int
	waits      map[[2]string]int // host, reason
	refusals   map[[2]string]int // host, reason
	retryDelay map[string]time.Duration
}

func (c *hostTally) hooks() *retrytrace.Hooks {
	c.requests, c.extra, c.hedges = map[string]int{}, map[string]int{}, map[string]int{}
	c.waits, c.refusals, c.retryDelay = map[[2]string]int{}, map[[2]string]int{}, map[string]time.Duration{}
	return &retrytrace.Hooks{
		AttemptStart: func(a retrytrace.AttemptStartInfo) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if a.Attempt > 1 && !a.Resend {
				c.extra[host(a.Request)]++
				if a.Hedge {
					c.hedges[host(a.Request)]++
				}
			}
		},
		Wait: func(w retrytrace.WaitInfo) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.waits[[2]string{host(w.Request), string(w.Reason)}]++
		},
		Refused: func(r retrytrace.RefusedInfo) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.refusals[[2]string{host(r.Request), string(r.Reason)}]++
		},
		Done: func(d retrytrace.DoneInfo) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.requests[host(d.Request)]++
			c.retryDelay[host(d.Request)] += d.RetryDelay
		},
	}
}

// host is a request's host as Stats keys it.
func host(req *http.Request) string { return strings.ToLower(req.URL.Host) }

// hostCase drives one kind of trouble through a Transport, and names the
// counts it must make, so that agreeing on zeros proves nothing.
type hostCase struct {
	name   string
	cfg    func() *policy.Config
	base   http.RoundTripper
	fleet  func(t *testing.T) retryhttp.Fleet
	drive  func(t *testing.T, send func(url string, timeout time.Duration))
	host   string
	counts func(c retryhttp.Counters) []uint64
	// During drive, the page, Stats and the gauges are read together
	// while these figures are set.
	during func(h retryhttp.HostStats) bool
}

var hostCases = []hostCase{
	{
		name: "throttled",
		cfg: func() *policy.Config {
			cfg := policy.Default()
			cfg.MaxServerDelay = 5 * time.Second
			return cfg
		},
		base: &rt.Server{Choose: func(n int, _ *http.Request) rt.Step {
			if n%4 == 1 {
				return rt.Step{Status: 429, Header: http.Header{"Retry-After": {"2"}}}
			}
			return rt.Step{}
		}},
		drive: func(t *testing.T, send func(string, time.Duration)) {
			var wg sync.WaitGroup
			for i := range 40 {
				timeout := 30 * time.Second
				if i%3 == 0 {
					timeout = time.Second
				}
				wg.Go(func() { send("https://Throttle.test/v1", timeout) })
				time.Sleep(150 * time.Millisecond)
			}
			wg.Wait()
		},
		host: "throttle.test",
		counts: func(c retryhttp.Counters) []uint64 {
			return []uint64{c.HoldsSet, c.HoldWaits, c.HoldRefusals, c.PaceWaits, c.PaceRefusals}
		},
		during: func(h retryhttp.HostStats) bool { return h.PaceRate > 0 },
	},
	{
		name: "slow",
		cfg: func() *policy.Config {
			cfg := policy.Default()
			cfg.Admission = &policy.Admission{MaxConcurrency: 2, MaxWait: 100 * time.Millisecond}
			return cfg
		},
		base: &rt.Server{Script: []rt.Step{{Delay: time.Second}}},
		drive: func(t *testing.T, send func(string, time.Duration)) {
			var wg sync.WaitGroup
			for range 12 {
				wg.Go(func() { send("https://slow.test/v1", 30*time.Second) })
				time.Sleep(60 * time.Millisecond)
			}
			wg.Wait()
		},
		host:   "slow.test",
		counts: func(c retryhttp.Counters) []uint64 { return []uint64{c.AdmissionWaits, c.Shed} },
		during: func(h retryhttp.HostStats) bool { return h.InFlight > 0 },
	},
	{
		name: "hedged",
		cfg: func() *policy.Config {
			return &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
				Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 10 * time.Millisecond, MaxExtraLoad: 0.05}}}}
		},
		base: &rt.Server{Script: []rt.Step{{Delay: 50 * time.Millisecond}}},
		drive: func(t *testing.T, send func(string, time.Duration)) {
			for range 40 {
				send("https://hedge.test/v1", 30*time.Second)
			}
		},
		host:   "hedge.test",
		counts: func(c retryhttp.Counters) []uint64 { return []uint64{c.Hedges, c.HedgeBudgetRefusals} },
	},
	{
		name: "hedged in line",
		cfg: func() *policy.Config {
			return &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
				Hedge: &policy.Hedge{MaxAttempts: 4, HedgingDelay: 10 * time.Millisecond}}},
				Admission: &policy.Admission{MaxConcurrency: 3, MaxWait: 30 * time.Millisecond}}
		},
		base: &rt.Server{Choose: func(n int, _ *http.Request) rt.Step {
			return rt.Step{Delay: time.Duration(20+n%7*15) * time.Millisecond}
		}},
		drive: func(t *testing.T, send func(string, time.Duration)) {
			var wg sync.WaitGroup
			for range 30 {
				wg.Go(func() { send("https://line.test/v1", 30*time.Second) })
				time.Sleep(7 * time.Millisecond)
			}
			wg.Wait()
		},
		host:   "line.test",
		counts: func(c retryhttp.Counters) []uint64 { return []uint64{c.Hedges, c.AdmissionWaits, c.Shed} },
		during: func(h retryhttp.HostStats) bool { return h.InFlight > 0 },
	},
	{
		name: "a fleet's budget spent",
		cfg: func() *policy.Config {
			cfg := policy.Default()
			cfg.Hold, cfg.Pace = &policy.Hold{Off: true}, &policy.Pace{Off: true}
			return cfg
		},
		base: &rt.Server{Script: []rt.Step{{Status: 503}}},
		// Another member has spent the host's fleet budget: this one's own
		// bucket is full, the fleet's refuses.
		fleet: func(t *testing.T) retryhttp.Fleet {
			fleet := memfleet.New()
			other := &retryhttp.Transport{Base: &rt.Server{Script: []rt.Step{{Status: 503}}}, Fleet: fleet}
			for range 60 {
				req, err := http.NewRequestWithContext(t.Context(), "GET", "https://fleet.test/v1", nil)
				require.NoError(t, err)
				if resp, err := other.RoundTrip(req); err == nil {
					resp.Body.Close()
				}
			}
			return fleet
		},
		drive: func(t *testing.T, send func(string, time.Duration)) {
			for range 5 {
				send("https://fleet.test/v1", 30*time.Second)
			}
		},
		host:   "fleet.test",
		counts: func(c retryhttp.Counters) []uint64 { return []uint64{c.FleetRefusals} },
	},
}

// Per host, Stats, the status page's JSON, the hooks, LogHooks' records
// and the otel metrics give the same counts of the same traffic, under
// the same names: a throttled host (holds and a pace), a slow one under
// admission (shedding), a hedged one whose hedge budget runs out, and
// one whose fleet budget is spent. While requests run, the pace's rate,
// the concurrency limit and the attempts in flight read the same on the
// page, in Stats and in the otel gauges.
func TestEachHostAgreesEverywhere(t *testing.T) {
	for _, tc := range hostCases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { tc.run(t) })
		})
	}
}

func (tc *hostCase) run(t *testing.T) {
	var counted hostTally
	logs := newRecorder()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	otelHooks, err := otel.Hooks(otel.Config{MeterProvider: mp, TracerProvider: noop.NewTracerProvider()})
	require.NoError(t, err)
	tr := &retryhttp.Transport{Base: tc.base, Policy: tc.cfg(),
		Hooks: retrytrace.JoinHooks(counted.hooks(), retrytrace.LogHooks(slog.New(logs)), otelHooks)}
	if tc.fleet != nil {
		tr.Fleet = tc.fleet(t)
	}
	reg, err := otel.Gauges(tr, otel.Config{MeterProvider: mp})
	require.NoError(t, err)
	defer reg.Unregister()

	seen := false
	var watch sync.WaitGroup
	stop := make(chan struct{})
	watch.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			// Nothing else runs, and time stands still in the bubble,
			// while the three are read.
			synctest.Wait()
			st := tr.Stats().Hosts[tc.host]
			if tc.during == nil || !tc.during(st) {
				continue
			}
			seen = true
			g := gaugesOf(t, reader)[tc.host]
			row := pageOf(t, tr).hosts[tc.host]
			assert.InDelta(t, st.PaceRate, g.rate, 1e-9, "pace rate: Stats vs otel")
			assert.InDelta(t, st.PaceRate, row.PaceRate, 0.001, "pace rate: Stats vs page")
			assert.Equal(t, int64(st.ConcurrencyLimit), g.limit, "concurrency limit: Stats vs otel")
			assert.Equal(t, st.ConcurrencyLimit, row.ConcurrencyLimit, "concurrency limit: Stats vs page")
			assert.Equal(t, int64(st.InFlight), g.inFlight, "in flight: Stats vs otel")
			assert.Equal(t, st.InFlight, row.InFlight, "in flight: Stats vs page")
		}
	})
	tc.drive(t, func(url string, timeout time.Duration) {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		require.NoError(t, err)
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
	})
	close(stop)
	watch.Wait()
	synctest.Wait()
	if tc.during != nil {
		assert.True(t, seen, "the live figures were read while set")
	}

	st := tr.Stats().Hosts[tc.host]
	t.Logf("%s: %+v", tc.host, st.Counters)
	for i, n := range tc.counts(st.Counters) {
		assert.NotZero(t, n, "count %d: the traffic makes what it is meant to", i)
	}
	row := pageOf(t, tr).hosts[tc.host]
	otelOf := metricsOf(t, reader)
	counted.mu.Lock()
	defer counted.mu.Unlock()
	logged := logsOf(logs.all(), tc.host)

	assert.Equal(t, st.Requests, row.Requests, "requests: Stats vs page")
	assert.Equal(t, int(st.Requests), counted.requests[tc.host], "requests: Stats vs Done")
	assert.Equal(t, st.ExtraAttempts, row.ExtraAttempts, "extra attempts: Stats vs page")
	assert.Equal(t, int(st.ExtraAttempts), counted.extra[tc.host], "extra attempts: Stats vs AttemptStart")
	assert.InDelta(t, float64(st.ExtraAttempts), otelOf.sum(otel.RetriesMetric, tc.host)+otelOf.sum(otel.HedgesMetric, tc.host), 0,
		"extra attempts: Stats vs otel retries and hedges")
	assert.Equal(t, st.Hedges, row.Hedges, "hedges: Stats vs page")
	assert.Equal(t, int(st.Hedges), counted.hedges[tc.host], "hedges: Stats vs AttemptStart")
	assert.Equal(t, int(st.Hedges), logged.hedges, "hedges: Stats vs LogHooks")
	assert.InDelta(t, float64(st.Hedges), otelOf.sum(otel.HedgesMetric, tc.host), 0, "hedges: Stats vs otel")

	refusals := []struct {
		reason retrytrace.RefusalReason
		stats  uint64
		page   uint64
	}{
		{retrytrace.RefusedBudget, st.BudgetRefusals, row.BudgetRefusals},
		{retrytrace.RefusedFleet, st.FleetRefusals, row.FleetRefusals},
		{retrytrace.RefusedHedgeBudget, st.HedgeBudgetRefusals, row.HedgeBudgetRefusals},
		{retrytrace.RefusedHeld, st.HoldRefusals, row.HoldRefusals},
		{retrytrace.RefusedPaced, st.PaceRefusals, row.PaceRefusals},
		{retrytrace.RefusedShed, st.Shed, row.Shed},
	}
	for _, r := range refusals {
		assert.Equal(t, r.stats, r.page, "refusals %q: Stats vs page", r.reason)
		assert.Equal(t, int(r.stats), counted.refusals[[2]string{tc.host, string(r.reason)}], "refusals %q: Stats vs Refused", r.reason)
		assert.Equal(t, int(r.stats), logged.refusals[string(r.reason)], "refusals %q: Stats vs LogHooks", r.reason)
		assert.Equal(t, int64(r.stats), otelOf.refusals[[2]string{tc.host, string(r.reason)}], "refusals %q: Stats vs otel", r.reason)
	}
	waits := []struct {
		reason      retrytrace.WaitReason
		metric      string
		stats, page uint64
		statsTime   time.Duration
		pageTimeMs  float64
	}{
		{retrytrace.WaitHold, otel.HoldDelayMetric, st.HoldWaits, row.HoldWaits, st.HoldWaitTime, row.HoldWaitTimeMs},
		{retrytrace.WaitPace, otel.PaceDelayMetric, st.PaceWaits, row.PaceWaits, st.PaceWaitTime, row.PaceWaitTimeMs},
		{retrytrace.WaitAdmission, otel.AdmissionDelayMetric, st.AdmissionWaits, row.AdmissionWaits, st.AdmissionWaitTime, row.AdmissionWaitTimeMs},
	}
	for _, w := range waits {
		assert.Equal(t, w.stats, w.page, "waits %q: Stats vs page", w.reason)
		assert.Equal(t, int(w.stats), counted.waits[[2]string{tc.host, string(w.reason)}], "waits %q: Stats vs Wait", w.reason)
		assert.Equal(t, int(w.stats), logged.waits[string(w.reason)], "waits %q: Stats vs LogHooks", w.reason)
		assert.Equal(t, w.stats, otelOf.count(w.metric, tc.host), "waits %q: Stats vs otel", w.reason)
		assert.InDelta(t, float64(w.statsTime)/float64(time.Millisecond), w.pageTimeMs, 0.001, "wait time %q: Stats vs page (ms)", w.reason)
		assert.InDelta(t, w.statsTime.Seconds(), otelOf.sum(w.metric, tc.host), 1e-6, "wait time %q: Stats vs otel (s)", w.reason)
	}
	assert.InDelta(t, counted.retryDelay[tc.host].Seconds(), otelOf.sum(otel.RetryDelayMetric, tc.host), 1e-6,
		"retry delay: DoneInfo vs otel")
	assert.Equal(t, counted.retryDelay[tc.host], logged.retryDelay, "retry delay: DoneInfo vs LogHooks")
}

// loggedHost is what LogHooks recorded of one host.
type loggedHost struct {
	hedges     int
	waits      map[string]int
	refusals   map[string]int
	retryDelay time.Duration
}

func logsOf(records []record, host string) loggedHost {
	l := loggedHost{waits: map[string]int{}, refusals: map[string]int{}}
	for _, r := range records {
		// LogHooks give the host as the caller wrote it, Stats lowercased.
		if !strings.EqualFold(r.attrs["host"].String(), host) {
			continue
		}
		reason := r.attrs["reason"].String()
		switch r.msg {
		case "retryhttp: hedging":
			l.hedges++
		case "retryhttp: waiting":
			l.waits[reason]++
		case "retryhttp: attempt refused":
			l.refusals[reason]++
		case "retryhttp: answered", "retryhttp: gave up":
			l.retryDelay += r.attrs["retry_delay"].Duration()
		}
	}
	return l
}

// hostRow is a host of the page's JSON.
type hostRow struct {
	Host                                               string
	Requests, ExtraAttempts, Hedges                    uint64
	BudgetRefusals, FleetRefusals, HedgeBudgetRefusals uint64
	HoldRefusals, PaceRefusals, Shed                   uint64
	HoldWaits, PaceWaits, AdmissionWaits               uint64
	HoldWaitTimeMs, PaceWaitTimeMs                     float64
	AdmissionWaitTimeMs                                float64
	PaceRate                                           float64
	ConcurrencyLimit, InFlight                         int
}

type pageRows struct{ hosts map[string]hostRow }

func pageOf(t *testing.T, tr *retryhttp.Transport) pageRows {
	w := httptest.NewRecorder()
	status.Handler(tr).ServeHTTP(w, httptest.NewRequest("GET", "/?format=json", nil))
	require.Equal(t, http.StatusOK, w.Code)
	var page struct{ Hosts []hostRow }
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &page))
	p := pageRows{hosts: map[string]hostRow{}}
	for _, h := range page.Hosts {
		p.hosts[h.Host] = h
	}
	return p
}

// hostGauges are the otel gauges of a host.
type hostGauges struct {
	rate            float64
	limit, inFlight int64
}

func gaugesOf(t *testing.T, reader *sdkmetric.ManualReader) map[string]hostGauges {
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]hostGauges{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					a, _ := p.Attributes.Value(semconv.ServerAddressKey)
					g := out[a.AsString()]
					g.rate = p.Value
					out[a.AsString()] = g
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					a, _ := p.Attributes.Value(semconv.ServerAddressKey)
					g := out[a.AsString()]
					switch m.Name {
					case otel.ConcurrencyLimitMetric:
						g.limit = p.Value
					case otel.InFlightMetric:
						g.inFlight = p.Value
					}
					out[a.AsString()] = g
				}
			}
		}
	}
	return out
}

// otelHosts are the otel metrics of the hooks, by server.address.
type otelHosts struct {
	counts   map[[2]string]uint64  // metric, address
	sums     map[[2]string]float64 // metric, address
	refusals map[[2]string]int64   // address, reason
}

func (o otelHosts) count(metric, host string) uint64 { return o.counts[[2]string{metric, host}] }
func (o otelHosts) sum(metric, host string) float64  { return o.sums[[2]string{metric, host}] }

func metricsOf(t *testing.T, reader *sdkmetric.ManualReader) otelHosts {
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	o := otelHosts{counts: map[[2]string]uint64{}, sums: map[[2]string]float64{}, refusals: map[[2]string]int64{}}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					a, _ := p.Attributes.Value(semconv.ServerAddressKey)
					o.counts[[2]string{m.Name, a.AsString()}] += p.Count
					o.sums[[2]string{m.Name, a.AsString()}] += float64(p.Sum)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					a, _ := p.Attributes.Value(semconv.ServerAddressKey)
					o.counts[[2]string{m.Name, a.AsString()}] += p.Count
					o.sums[[2]string{m.Name, a.AsString()}] += p.Sum
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					a, _ := p.Attributes.Value(semconv.ServerAddressKey)
					r, _ := p.Attributes.Value(otel.RefusalReasonKey)
					o.refusals[[2]string{a.AsString(), r.AsString()}] += p.Value
				}
			}
		}
	}
	return o
}
