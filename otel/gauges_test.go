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

// The gauges name a host as the request histograms do: an IPv6 address
// without its brackets, and no colon of an empty port, whether or not
// its URL has a port.
func TestGaugesNameHostsAsHistogramsDo(t *testing.T) {
	for _, host := range []string{"api.test:8443", "api.test", "api.test:", "[::1]:8443", "[::1]", "[fe80::1%25eth0]"} {
		t.Run(host, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reader := sdkmetric.NewManualReader()
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
				hooks, err := otel.Hooks(otel.Config{MeterProvider: mp})
				require.NoError(t, err)
				tr := &retryhttp.Transport{Base: &rt.Server{Script: []rt.Step{{Status: 429}}}, Hooks: hooks}
				reg, err := otel.Gauges(tr, otel.Config{MeterProvider: mp})
				require.NoError(t, err)
				defer reg.Unregister()
				req, err := http.NewRequest("GET", "https://"+host+"/", nil)
				require.NoError(t, err)
				if resp, err := tr.RoundTrip(req); err == nil {
					resp.Body.Close()
				}
				var rm metricdata.ResourceMetrics
				require.NoError(t, reader.Collect(context.Background(), &rm))
				addrs := map[string]map[string]bool{} // by metric name
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						addrs[m.Name] = map[string]bool{}
						var sets []attribute.Set
						switch d := m.Data.(type) {
						case metricdata.Gauge[float64]:
							for _, p := range d.DataPoints {
								sets = append(sets, p.Attributes)
							}
						case metricdata.Histogram[int64]:
							for _, p := range d.DataPoints {
								sets = append(sets, p.Attributes)
							}
						}
						for _, set := range sets {
							addr, _ := set.Value("server.address")
							addrs[m.Name][addr.AsString()] = true
						}
					}
				}
				require.NotEmpty(t, addrs[otel.RetriesMetric], "the 429s were retried")
				require.NotEmpty(t, addrs[otel.PaceRateMetric], "the 429s paced the host")
				assert.Equal(t, addrs[otel.RetriesMetric], addrs[otel.PaceRateMetric])
			})
		})
	}
}
