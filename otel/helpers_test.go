package otel_test

import (
	"context"
	"net/http"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/otel"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// rig is an SDK with a manual reader and an in-memory span exporter,
// and the hooks that record to it.
type rig struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
	hooks  *retrytrace.Hooks
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{reader: sdkmetric.NewManualReader(), spans: tracetest.NewInMemoryExporter()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	hooks, err := otel.Hooks(otel.Config{MeterProvider: mp, TracerProvider: r.tp})
	require.NoError(t, err)
	r.hooks = hooks
	return r
}

// caller starts the caller's span, the parent of the attempt spans.
func (r *rig) caller(ctx context.Context) (context.Context, trace.Span) {
	return r.tp.Tracer("test").Start(ctx, "caller")
}

// get sends a GET of url through tr under the caller's span, which it
// ends with the request, and returns that span: the parent of the
// attempts' spans.
func (r *rig) get(t *testing.T, tr *retryhttp.Transport, url string) trace.Span {
	t.Helper()
	ctx, parent := r.caller(t.Context())
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	parent.End()
	return parent
}

// metrics collects what was recorded, by metric name.
func (r *rig) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(t.Context(), &rm))
	got := make(map[string]metricdata.Metrics)
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, otel.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	return got
}

// attempts returns the attempt spans ended so far, in the order they
// ended.
func (r *rig) attempts() tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range r.spans.GetSpans() {
		if s.Name != "caller" {
			out = append(out, s)
		}
	}
	return out
}

// statuses is a base that answers its calls with codes in turn, the last
// one ever after.
func statuses(codes ...int) http.RoundTripper {
	var calls atomic.Int64
	mt := httpmock.NewMockTransport()
	mt.RegisterNoResponder(func(*http.Request) (*http.Response, error) {
		i := int(calls.Add(1)) - 1
		return httpmock.NewStringResponse(codes[min(i, len(codes)-1)], ""), nil
	})
	return mt
}

// retryPolicy retries 503 up to maxAttempts, waiting 100 ms, then 200 ms,
// and so on, with no jitter. Its throttle and holds are off, so that every
// request retries however many fail at once.
func retryPolicy(maxAttempts int) *policy.Config {
	return &policy.Config{Rules: []policy.Rule{{
		Name: []policy.Name{{}},
		Retry: &policy.Retry{
			MaxAttempts:          maxAttempts,
			Backoff:              policy.Exponential{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 2},
			RetryableStatusCodes: []int{503},
		},
	}}, Throttle: &policy.Throttle{Off: true}, Hold: &policy.Hold{Off: true}}
}

// histogram is the expected cumulative histogram of values, one data
// point with the given attributes.
func histogram[N int64 | float64](name, unit, desc string, bounds []float64, attrs attribute.Set, values ...N) metricdata.Metrics {
	dp := metricdata.HistogramDataPoint[N]{Attributes: attrs, Bounds: bounds, BucketCounts: make([]uint64, len(bounds)+1)}
	lo, hi := values[0], values[0]
	for _, v := range values {
		// Bucket i holds (bounds[i-1], bounds[i]].
		dp.BucketCounts[sort.SearchFloat64s(bounds, float64(v))]++
		dp.Count++
		dp.Sum += v
		lo, hi = min(lo, v), max(hi, v)
	}
	dp.Min, dp.Max = metricdata.NewExtrema(lo), metricdata.NewExtrema(hi)
	return metricdata.Metrics{Name: name, Unit: unit, Description: desc, Data: metricdata.Histogram[N]{
		Temporality: metricdata.CumulativeTemporality,
		DataPoints:  []metricdata.HistogramDataPoint[N]{dp},
	}}
}

var (
	countBounds       = []float64{1, 2, 3, 4, 5}
	transparentBounds = []float64{1, 2, 3, 4, 5, 10}
	delayBounds       = []float64{0, 0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008,
		0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008, 0.01, 0.013, 0.016, 0.02,
		0.025, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3, 0.4,
		0.5, 0.65, 0.8, 1, 2, 5, 10, 20, 50, 100}
)

func retries(attrs attribute.Set, values ...int64) metricdata.Metrics {
	return histogram(otel.RetriesMetric, "{retry}", "Number of retries during the request.", countBounds, attrs, values...)
}

func transparentRetries(attrs attribute.Set, values ...int64) metricdata.Metrics {
	return histogram(otel.TransparentRetriesMetric, "{transparent_retry}", "Number of transparent retries during the request.", transparentBounds, attrs, values...)
}

func hedges(attrs attribute.Set, values ...int64) metricdata.Metrics {
	return histogram(otel.HedgesMetric, "{hedge}", "Number of hedges during the request.", countBounds, attrs, values...)
}

func retryDelay(attrs attribute.Set, values ...float64) metricdata.Metrics {
	return histogram(otel.RetryDelayMetric, "s", "Total time of delay while there is no active attempt during the request.", delayBounds, attrs, values...)
}
