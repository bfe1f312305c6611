package otel_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/otel"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// The gauges show a paced host's rate and a host's concurrency limit, by
// server.address and server.port.
func TestGauges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(n int, _ *http.Request) rt.Step {
			if n <= 22 {
				return rt.Step{Status: 429}
			}
			return rt.Step{}
		}}
		cfg := policy.Default()
		cfg.Admission = &policy.Admission{MaxConcurrency: 7}
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		reader := sdkmetric.NewManualReader()
		reg, err := otel.Gauges(tr, otel.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
		require.NoError(t, err)
		defer reg.Unregister()
		for range 10 { // twenty-two 429s, lost work, then answers
			req, err := http.NewRequest("GET", "https://api.test:8443/", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
		}
		limit := tr.Stats().Hosts["api.test:8443"].ConcurrencyLimit
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(context.Background(), &rm))
		got := map[string]float64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch d := m.Data.(type) {
				case metricdata.Gauge[float64]:
					for _, p := range d.DataPoints {
						assertHost(t, p.Attributes)
						got[m.Name] = p.Value
					}
				case metricdata.Gauge[int64]:
					for _, p := range d.DataPoints {
						assertHost(t, p.Attributes)
						got[m.Name] = float64(p.Value)
					}
				}
			}
		}
		assert.Greater(t, got[otel.PaceRateMetric], 0.0, "paced after the 429")
		assert.Less(t, limit, 7, "the 429s, lost work, cut the limit")
		assert.Equal(t, float64(limit), got[otel.ConcurrencyLimitMetric], "the limit Stats has")
		assert.Equal(t, 0.0, got[otel.InFlightMetric])
	})
}

func assertHost(t *testing.T, set attribute.Set) {
	t.Helper()
	addr, _ := set.Value("server.address")
	port, _ := set.Value("server.port")
	assert.Equal(t, "api.test", addr.AsString())
	assert.Equal(t, int64(8443), port.AsInt64())
}
