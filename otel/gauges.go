package otel

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	otelglobal "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/retryhttp/retryhttp"
)

// The names of the gauges that [Gauges] observes, per host.
const (
	// PaceRateMetric is the rate a paced host is sent at (policy.Pace):
	// retryhttp.HostStats.PaceRate. Unit {request}/s; a host not paced
	// is not observed.
	PaceRateMetric = "retryhttp.client.host.pace.rate"
	// ConcurrencyLimitMetric is a host's concurrency limit
	// (policy.Admission), and InFlightMetric the attempts in flight
	// under it: retryhttp.HostStats.ConcurrencyLimit and InFlight. Unit {attempt};
	// a host without admission is not observed.
	ConcurrencyLimitMetric = "retryhttp.client.host.concurrency.limit"
	InFlightMetric         = "retryhttp.client.host.concurrency.in_flight"
)

// Gauges observes, at each collection, the pace and the concurrency
// limit of each host tr keeps, from [retryhttp.Transport.Stats]:
// [PaceRateMetric], [ConcurrencyLimitMetric] and [InFlightMetric], with
// server.address and, when the host's URL names a port, server.port: a
// key of Stats.Hosts does not say its scheme, so the port that the
// request histograms infer from it (443 for https) is not given. Only
// cfg.MeterProvider is used (nil: the global provider). Unregister the
// returned registration to stop; the error is that of creating an
// instrument or registering the callback.
//
// Each collection costs a Stats, whose cost grows with the hosts tr
// keeps: collect at a scrape's pace, not per request.
func Gauges(tr *retryhttp.Transport, cfg Config) (metric.Registration, error) {
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otelglobal.GetMeterProvider()
	}
	meter := mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	rate, err := meter.Float64ObservableGauge(PaceRateMetric, metric.WithUnit("{request}/s"),
		metric.WithDescription("Rate a paced host is sent requests at."))
	if err != nil {
		return nil, fmt.Errorf("retryhttp/otel: %w", err)
	}
	limit, err := meter.Int64ObservableGauge(ConcurrencyLimitMetric, metric.WithUnit("{attempt}"),
		metric.WithDescription("Concurrency limit of a host."))
	if err != nil {
		return nil, fmt.Errorf("retryhttp/otel: %w", err)
	}
	inFlight, err := meter.Int64ObservableGauge(InFlightMetric, metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts in flight under a host's concurrency limit."))
	if err != nil {
		return nil, fmt.Errorf("retryhttp/otel: %w", err)
	}
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for host, hs := range tr.Stats().Hosts {
			if hs.PaceRate == 0 && hs.ConcurrencyLimit == 0 {
				continue
			}
			set := metric.WithAttributeSet(hostAttrs(host))
			if hs.PaceRate > 0 {
				o.ObserveFloat64(rate, hs.PaceRate, set)
			}
			if hs.ConcurrencyLimit > 0 {
				o.ObserveInt64(limit, int64(hs.ConcurrencyLimit), set)
				o.ObserveInt64(inFlight, int64(hs.InFlight), set)
			}
		}
		return nil
	}, rate, limit, inFlight)
	if err != nil {
		return nil, fmt.Errorf("retryhttp/otel: %w", err)
	}
	return reg, nil
}

// hostAttrs are server.address and, when host has one, server.port of a
// key of retryhttp.Stats.Hosts: a URL host, lowercased. The address is
// the URL's host name, as the request histograms have it (url.URL's
// Hostname): an IPv6 address without its brackets, and no colon of an
// empty port, with a port or not.
func hostAttrs(host string) attribute.Set {
	h, p, err := net.SplitHostPort(host)
	switch {
	case err != nil && strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]"):
		h = host[1 : len(host)-1]
	case err != nil:
		h = host
	}
	if port, err := strconv.Atoi(p); err == nil {
		return attribute.NewSet(semconv.ServerAddress(h), semconv.ServerPort(port))
	}
	return attribute.NewSet(semconv.ServerAddress(h))
}
