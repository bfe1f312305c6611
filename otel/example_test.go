package otel_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/otel"
	"github.com/retryhttp/retryhttp/policy"
)

// A request retried once: two attempt spans under the caller's span, and
// the request's retries and retry delay.
func Example() {
	// An SDK that keeps what it gets, for the example to print.
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	hooks, err := otel.Hooks(otel.Config{
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		TracerProvider: tp,
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	// A server whose first answer is a 503.
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "hello")
	}))
	defer srv.Close()

	tr := &retryhttp.Transport{Hooks: hooks, Policy: &policy.Config{Rules: []policy.Rule{{
		Name: []policy.Name{{Method: "GET"}},
		Retry: &policy.Retry{MaxAttempts: 3, RetryableStatusCodes: []int{503},
			Backoff: policy.Exponential{Initial: 10 * time.Millisecond, Max: time.Second, Multiplier: 2}},
	}}}}
	defer tr.CloseIdleConnections()
	ctx, caller := tp.Tracer("example").Start(context.Background(), "caller")
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/items?token=secret", nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	caller.End()

	printSpans(spans, caller)
	printHistograms(ctx, reader, 10*time.Millisecond)
	// Output:
	// GET true retryhttp.attempt=1 retryhttp.outcome=retryable http.response.status_code=503
	// GET true retryhttp.attempt=2 retryhttp.outcome=success http.response.status_code=200 retryhttp.wait.delay=0.01
	// retryhttp.client.request.retries {retry} 1 retryhttp.rule=GET
	// retryhttp.client.request.retry_delay s >=0.01 retryhttp.rule=GET
}

// printSpans prints the attempt spans, and whether each is a child of the
// caller's span.
func printSpans(spans *tracetest.InMemoryExporter, caller trace.Span) {
	for _, s := range spans.GetSpans() {
		if s.Name == "caller" {
			continue
		}
		fmt.Println(s.Name, s.Parent.SpanID() == caller.SpanContext().SpanID(), show(s.Attributes,
			"retryhttp.attempt", "retryhttp.outcome", "http.response.status_code", "retryhttp.wait.delay"))
	}
}

// printHistograms prints each histogram's unit, sum and rule. The sum of
// a delay, the time the waits lasted, is printed as at least backoff, the
// wait announced, when it is: a wait lasts a little longer than announced,
// by however long the machine takes to wake the request.
func printHistograms(ctx context.Context, reader *sdkmetric.ManualReader, backoff time.Duration) {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch h := m.Data.(type) {
		case metricdata.Histogram[int64]:
			fmt.Println(m.Name, m.Unit, h.DataPoints[0].Sum, show(h.DataPoints[0].Attributes.ToSlice(), "retryhttp.rule"))
		case metricdata.Histogram[float64]:
			var sum any = h.DataPoints[0].Sum
			if h.DataPoints[0].Sum >= backoff.Seconds() {
				sum = fmt.Sprintf(">=%g", backoff.Seconds())
			}
			fmt.Println(m.Name, m.Unit, sum, show(h.DataPoints[0].Attributes.ToSlice(), "retryhttp.rule"))
		}
	}
}

// show formats the attributes named by keys, in that order.
func show(attrs []attribute.KeyValue, keys ...string) string {
	var out string
	for _, k := range keys {
		for _, kv := range attrs {
			if string(kv.Key) == k {
				out += fmt.Sprintf(" %s=%s", k, kv.Value.String())
			}
		}
	}
	if out == "" {
		return ""
	}
	return out[1:]
}
