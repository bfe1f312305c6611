package otel_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/otel"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
	"github.com/retryhttp/retryhttp/status"
)

// tally counts what the hooks were told.
type tally struct {
	mu                             sync.Mutex
	starts, extra, hedges, resends int
	waits                          map[retrytrace.WaitReason]int
	refusals                       map[retrytrace.RefusalReason]int
	done, doneExtra, doneHedges    int
	doneTransparent                int
	retryDelay                     time.Duration
}

func (c *tally) hooks() *retrytrace.Hooks {
	c.waits, c.refusals = map[retrytrace.WaitReason]int{}, map[retrytrace.RefusalReason]int{}
	return &retrytrace.Hooks{
		AttemptStart: func(a retrytrace.AttemptStartInfo) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.starts++
			switch {
			case a.Resend:
				c.resends++
			case a.Attempt > 1:
				c.extra++
				if a.Hedge {
					c.hedges++
				}
			}
		},
		Wait: func(w retrytrace.WaitInfo) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.waits[w.Reason]++
		},
		Refused: func(r retrytrace.RefusedInfo) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.refusals[r.Reason]++
		},
		Done: func(d retrytrace.DoneInfo) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.done++
			c.doneExtra += max(d.Attempts-1, 0)
			c.doneHedges += d.Hedges
			c.doneTransparent += d.TransparentRetries
			c.retryDelay += d.RetryDelay
		},
	}
}

// syncBuffer is a buffer a slog handler writes while the test reads it
// at the end.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// mixedBase answers each host as its name says.
func mixedBase() http.RoundTripper {
	servers := map[string]*rt.Server{
		"ok.test":    {Script: []rt.Step{{}}},
		"retry.test": {Choose: func(n int, _ *http.Request) rt.Step { return rt.Step{Status: []int{503, 200}[n%2]} }},
		"fail.test":  {Script: []rt.Step{{Status: 503}}},
		"held.test": {Script: []rt.Step{{Status: 429, Header: http.Header{"Retry-After": {"2"}}},
			{}, {}, {}, {Status: 429, Header: http.Header{"Retry-After": {"1"}}}, {}}},
		"paced.test": {Choose: func(n int, _ *http.Request) rt.Step {
			if n%3 == 0 {
				return rt.Step{Status: 429}
			}
			return rt.Step{}
		}},
		"hedge.test": {Script: []rt.Step{{Delay: 50 * time.Millisecond}}},
		"slow.test":  {Script: []rt.Step{{Delay: time.Second}}},
	}
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return servers[req.URL.Host].RoundTrip(req)
	})
}

// Stats, the status page, the hooks, LogHooks and the otel metrics and
// spans tell the same story of the same traffic: a mix of retries, a
// spent budget, holds, a pace, hedges and shedding through one
// Transport.
func TestAllViewsAgree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var counted tally
		var logs syncBuffer
		reader := sdkmetric.NewManualReader()
		spans := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
		otelHooks, err := otel.Hooks(otel.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
			TracerProvider: tp})
		require.NoError(t, err)
		logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

		cfg := policy.Default()
		cfg.MaxServerDelay = 5 * time.Second
		cfg.Rules = append([]policy.Rule{{Name: []policy.Name{{Host: "hedge.test"}},
			Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 10 * time.Millisecond}}}, cfg.Rules...)
		cfg.Admission = &policy.Admission{MaxConcurrency: 4, MaxWait: 50 * time.Millisecond}
		tr := &retryhttp.Transport{Base: mixedBase(), Policy: cfg,
			Hooks: retrytrace.JoinHooks(counted.hooks(), retrytrace.LogHooks(logger), otelHooks)}

		send := func(host string, timeout time.Duration) {
			ctx, cancel := context.WithTimeout(t.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, "GET", "https://"+host+"/v1/x?token=SECRET", nil)
			require.NoError(t, err)
			if resp, err := tr.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
		}
		// The page and Stats are read all along, as an operator and a
		// scraper would, while requests run.
		stop := make(chan struct{})
		var readers sync.WaitGroup
		readers.Go(func() {
			page := status.Handler(tr)
			for {
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Millisecond):
				}
				for _, target := range []string{"/", "/?format=json"} {
					w := httptest.NewRecorder()
					page.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
					assert.Equal(t, http.StatusOK, w.Code)
				}
				_ = tr.Stats()
			}
		})
		var wg sync.WaitGroup
		for round := range 6 {
			for i := range 10 {
				for _, host := range []string{"ok.test", "retry.test", "fail.test", "held.test", "paced.test", "hedge.test", "slow.test"} {
					timeout := 30 * time.Second
					if i%3 == 0 {
						timeout = 500 * time.Millisecond
					}
					wg.Go(func() { send(host, timeout) })
				}
				time.Sleep(time.Duration(round*7+i) * 10 * time.Millisecond)
			}
			wg.Wait()
		}
		close(stop)
		readers.Wait()
		synctest.Wait()

		st := tr.Stats()
		total := st.Total
		t.Logf("total: %+v", total)
		counted.mu.Lock()
		defer counted.mu.Unlock()
		t.Logf("hooks: %+v", &counted)

		// The hooks.
		assert.Equal(t, int(total.Requests), counted.done, "requests: Stats vs Done hooks")
		assert.Equal(t, int(total.ExtraAttempts), counted.extra, "extra attempts: Stats vs AttemptStart")
		assert.Equal(t, int(total.ExtraAttempts), counted.doneExtra, "extra attempts: Stats vs DoneInfo.Attempts")
		assert.Equal(t, int(total.Hedges), counted.hedges, "hedges: Stats vs AttemptStart")
		assert.Equal(t, int(total.Hedges), counted.doneHedges, "hedges: Stats vs DoneInfo.Hedges")
		assert.Equal(t, int(total.TransparentRetries), counted.doneTransparent, "transparent: Stats vs DoneInfo")
		byReason := map[retrytrace.RefusalReason]uint64{
			retrytrace.RefusedBudget: total.BudgetRefusals, retrytrace.RefusedFleet: total.FleetRefusals,
			retrytrace.RefusedHeld: total.HoldRefusals, retrytrace.RefusedHedgeBudget: total.HedgeBudgetRefusals,
			retrytrace.RefusedPaced: total.PaceRefusals, retrytrace.RefusedShed: total.Shed,
		}
		for reason, n := range byReason {
			assert.Equal(t, int(n), counted.refusals[reason], "refusals %q: Stats vs Refused", reason)
		}
		waits := map[retrytrace.WaitReason]uint64{retrytrace.WaitHold: total.HoldWaits,
			retrytrace.WaitPace: total.PaceWaits, retrytrace.WaitAdmission: total.AdmissionWaits}
		for reason, n := range waits {
			assert.Equal(t, int(n), counted.waits[reason], "waits %q: Stats vs Wait", reason)
		}
		// The workload meets what it is meant to.
		for _, n := range []uint64{total.ExtraAttempts, total.Hedges, total.BudgetRefusals, total.HoldsSet,
			total.HoldWaits, total.PaceWaits, total.AdmissionWaits, total.Shed} {
			assert.NotZero(t, n, "the workload exercises each count: %+v", total)
		}

		// The status page's JSON.
		w := httptest.NewRecorder()
		status.Handler(tr).ServeHTTP(w, httptest.NewRequest("GET", "/?format=json", nil))
		require.Equal(t, http.StatusOK, w.Code)
		var page struct {
			Total map[string]float64 `json:"total"`
			Hosts []map[string]any   `json:"hosts"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &page))
		assert.Equal(t, float64(total.Requests), page.Total["requests"])
		assert.Equal(t, float64(total.ExtraAttempts), page.Total["extraAttempts"])
		assert.Equal(t, float64(total.Shed), page.Total["shed"])
		assert.Equal(t, float64(total.HoldWaits), page.Total["holdWaits"])
		assert.InDelta(t, float64(total.HoldWaitTime)/1e6, page.Total["holdWaitTimeMs"], 0.001)
		sum := map[string]float64{}
		for _, h := range page.Hosts {
			for _, k := range []string{"requests", "extraAttempts", "hedges", "budgetRefusals", "holdRefusals",
				"paceRefusals", "shed", "holdWaits", "paceWaits", "admissionWaits"} {
				sum[k] += h[k].(float64)
			}
		}
		for k, v := range sum {
			assert.Equal(t, page.Total[k], v, "page: hosts' %s sum to the total", k)
		}
		assert.NotContains(t, w.Body.String(), "SECRET")

		// LogHooks.
		logRefusals, logWaits, logHedges := map[string]int{}, map[string]int{}, 0
		sc := bufio.NewScanner(bytes.NewReader(logs.b.Bytes()))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			require.NotContains(t, sc.Text(), "SECRET")
			var rec map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
			reason, _ := rec["reason"].(string)
			switch rec["msg"] {
			case "retryhttp: attempt refused":
				logRefusals[reason]++
			case "retryhttp: waiting":
				logWaits[reason]++
			case "retryhttp: hedging":
				logHedges++
			}
		}
		for reason, n := range byReason {
			assert.Equal(t, int(n), logRefusals[string(reason)], "refusals %q: Stats vs LogHooks", reason)
		}
		for reason, n := range waits {
			assert.Equal(t, int(n), logWaits[string(reason)], "waits %q: Stats vs LogHooks", reason)
		}
		assert.Equal(t, int(total.Hedges), logHedges, "hedges: Stats vs LogHooks")

		// otel.
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(t.Context(), &rm))
		metrics := map[string]metricdata.Aggregation{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				metrics[m.Name] = m.Data
			}
		}
		histSum := func(name string) (count uint64, sum float64) {
			h, _ := metrics[name].(metricdata.Histogram[int64])
			for _, dp := range h.DataPoints {
				count += dp.Count
				sum += float64(dp.Sum)
			}
			hf, _ := metrics[name].(metricdata.Histogram[float64])
			for _, dp := range hf.DataPoints {
				count += dp.Count
				sum += dp.Sum
			}
			return count, sum
		}
		_, retriesSum := histSum(otel.RetriesMetric)
		_, hedgesSum := histSum(otel.HedgesMetric)
		_, transparentSum := histSum(otel.TransparentRetriesMetric)
		assert.Equal(t, float64(total.ExtraAttempts), retriesSum+hedgesSum, "extra attempts: Stats vs otel retries+hedges")
		assert.Equal(t, float64(total.Hedges), hedgesSum, "hedges: Stats vs otel")
		assert.Equal(t, float64(total.TransparentRetries), transparentSum, "transparent: Stats vs otel")
		_, delaySum := histSum(otel.RetryDelayMetric)
		assert.InDelta(t, counted.retryDelay.Seconds(), delaySum, 1e-6, "retry delay: DoneInfo vs otel")
		otelRefusals := map[string]int64{}
		sumData, _ := metrics[otel.RefusalsMetric].(metricdata.Sum[int64])
		for _, dp := range sumData.DataPoints {
			reason, _ := dp.Attributes.Value(otel.RefusalReasonKey)
			otelRefusals[reason.AsString()] += dp.Value
		}
		for reason, n := range byReason {
			assert.Equal(t, int64(n), otelRefusals[string(reason)], "refusals %q: Stats vs otel", reason)
		}
		for name, want := range map[string]struct {
			n uint64
			d time.Duration
		}{
			otel.HoldDelayMetric:      {total.HoldWaits, total.HoldWaitTime},
			otel.PaceDelayMetric:      {total.PaceWaits, total.PaceWaitTime},
			otel.AdmissionDelayMetric: {total.AdmissionWaits, total.AdmissionWaitTime},
		} {
			n, sum := histSum(name)
			assert.Equal(t, want.n, n, "%s: count of Stats vs otel", name)
			assert.InDelta(t, want.d.Seconds(), sum, 1e-6, "%s: time of Stats vs otel", name)
		}
		assert.Len(t, spans.GetSpans(), counted.starts, "a span per attempt started")
		for _, s := range spans.GetSpans() {
			assert.NotContains(t, fmt.Sprint(s.Attributes, s.Status), "SECRET")
		}
	})
}
