package otel_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.opentelemetry.io/otel/trace"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/otel"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// apiAttrs are the request histograms' attributes for a GET to
// https://api.test under rule.
func apiAttrs(rule string) attribute.Set {
	return attribute.NewSet(
		attribute.String("server.address", "api.test"), attribute.Int("server.port", 443),
		attribute.String("http.request.method", "GET"), attribute.String("retryhttp.rule", rule))
}

// spanAttrs are the attributes every attempt span of a GET to
// https://api.test/v1/items carries, followed by more.
func spanAttrs(rule string, more ...attribute.KeyValue) []attribute.KeyValue {
	return append([]attribute.KeyValue{
		attribute.String("http.request.method", "GET"),
		attribute.String("server.address", "api.test"), attribute.Int("server.port", 443),
		attribute.String("url.full", "https://api.test/v1/items"),
		attribute.String("retryhttp.rule", rule),
	}, more...)
}

func TestRetriedRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		tr := &retryhttp.Transport{Base: statuses(503, 503, 200), Policy: retryPolicy(3), Hooks: r.hooks}
		parent := r.get(t, tr, "https://api.test/v1/items?token=secret")

		got := r.metrics(t)
		assert.Len(t, got, 2, "no hedges, no transparent retries")
		metricdatatest.AssertEqual(t, retries(apiAttrs("*"), 2), got[otel.RetriesMetric],
			metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
		metricdatatest.AssertEqual(t, retryDelay(apiAttrs("*"), 0.3), got[otel.RetryDelayMetric],
			metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())

		spans := r.attempts()
		require.Len(t, spans, 3)
		want := [][]attribute.KeyValue{
			spanAttrs("*",
				attribute.Int("retryhttp.attempt", 1), attribute.Bool("retryhttp.hedge", false), attribute.Bool("retryhttp.resend", false),
				attribute.String("retryhttp.outcome", "retryable"), attribute.Int("http.response.status_code", 503),
				attribute.String("error.type", "503")),
			spanAttrs("*",
				attribute.Int("retryhttp.attempt", 2), attribute.Bool("retryhttp.hedge", false), attribute.Bool("retryhttp.resend", false),
				attribute.Int("http.request.resend_count", 1),
				attribute.Float64("retryhttp.wait.delay", 0.1), attribute.String("retryhttp.wait.reason", "backoff"),
				attribute.String("retryhttp.outcome", "retryable"), attribute.Int("http.response.status_code", 503),
				attribute.String("error.type", "503")),
			spanAttrs("*",
				attribute.Int("retryhttp.attempt", 3), attribute.Bool("retryhttp.hedge", false), attribute.Bool("retryhttp.resend", false),
				attribute.Int("http.request.resend_count", 2),
				attribute.Float64("retryhttp.wait.delay", 0.2), attribute.String("retryhttp.wait.reason", "backoff"),
				attribute.String("retryhttp.outcome", "success"), attribute.Int("http.response.status_code", 200)),
		}
		wantStatus := []codes.Code{codes.Error, codes.Error, codes.Unset}
		for i, s := range spans {
			assert.Equal(t, "GET", s.Name)
			assert.Equal(t, trace.SpanKindClient, s.SpanKind)
			assert.Equal(t, parent.SpanContext(), s.Parent, "attempt %d is a child of the caller's span", i+1)
			assert.ElementsMatch(t, want[i], s.Attributes, "attempt %d", i+1)
			assert.Equal(t, wantStatus[i], s.Status.Code, "attempt %d", i+1)
			assert.Empty(t, s.Status.Description, "a status code says it all")
		}
		// Each attempt's span covers the attempt, not the wait before it.
		assert.Equal(t, spans[0].EndTime.Add(100*time.Millisecond), spans[1].StartTime)
		assert.Equal(t, spans[1].EndTime.Add(200*time.Millisecond), spans[2].StartTime)
	})
}

// The error code the rule's table read from an answer is an attribute of
// its attempt's span; an answer with none has no such attribute.
func TestErrorCodeIsRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		var calls atomic.Int64
		mt := httpmock.NewMockTransport()
		mt.RegisterNoResponder(func(*http.Request) (*http.Response, error) {
			if calls.Add(1) == 1 {
				return httpmock.NewStringResponse(503, `{"error": {"code": "busy"}}`), nil
			}
			return httpmock.NewStringResponse(200, ""), nil
		})
		cfg := retryPolicy(2)
		cfg.Rules[0].ErrorCodes = &policy.ErrorCodes{JSON: "error.code", Final: []string{"gone"}}
		tr := &retryhttp.Transport{Base: mt, Policy: cfg, Hooks: r.hooks}
		r.get(t, tr, "https://api.test/v1/items")
		spans := r.attempts()
		require.Len(t, spans, 2)
		first, second := attribute.NewSet(spans[0].Attributes...), attribute.NewSet(spans[1].Attributes...)
		code, ok := first.Value(otel.ErrorCodeKey)
		assert.True(t, ok, "the first answer's code")
		assert.Equal(t, "busy", code.AsString())
		_, ok = second.Value(otel.ErrorCodeKey)
		assert.False(t, ok, "a success has none")
	})
}

// A hedged request's attempts each end their span, the loser's as
// cancelled (Error, error.type "cancelled"), whether its base ends with
// the cancellation's error or, as a real one may when the headers come
// at that instant, with a response.
func TestHedgedRequest(t *testing.T) {
	for _, lateAnswer := range []bool{false, true} {
		t.Run(map[bool]string{false: "the loser ends with an error", true: "the loser ends with a response"}[lateAnswer], func(t *testing.T) {
			testHedgedRequest(t, lateAnswer)
		})
	}
}

func testHedgedRequest(t *testing.T, lateAnswer bool) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		// The first attempt hangs until it is cancelled; the hedge answers.
		var mu sync.Mutex
		calls := 0
		mt := httpmock.NewMockTransport()
		mt.RegisterNoResponder(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			calls++
			first := calls == 1
			mu.Unlock()
			if first {
				<-req.Context().Done()
				if lateAnswer {
					return httpmock.NewStringResponse(200, "late"), nil
				}
				return nil, context.Cause(req.Context())
			}
			return httpmock.NewStringResponse(200, ""), nil
		})
		cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: 50 * time.Millisecond, NonFatalStatusCodes: []int{503}}}}}
		tr := &retryhttp.Transport{Base: mt, Policy: cfg, Hooks: r.hooks}
		parent := r.get(t, tr, "https://api.test/v1/items")

		got := r.metrics(t)
		assert.Len(t, got, 1, "no retries, so no retry delay either")
		metricdatatest.AssertEqual(t, hedges(apiAttrs("*"), 1), got[otel.HedgesMetric],
			metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())

		spans := r.attempts()
		require.Len(t, spans, 2)
		hedge, first := spans[0], spans[1] // the winner ends first
		assert.ElementsMatch(t, spanAttrs("*",
			attribute.Int("retryhttp.attempt", 2), attribute.Bool("retryhttp.hedge", true), attribute.Bool("retryhttp.resend", false),
			attribute.Int("http.request.resend_count", 1),
			attribute.Float64("retryhttp.wait.delay", 0.05), attribute.String("retryhttp.wait.reason", "hedge-delay"),
			attribute.String("retryhttp.outcome", "success"), attribute.Int("http.response.status_code", 200),
		), hedge.Attributes)
		assert.Equal(t, codes.Unset, hedge.Status.Code)
		want := []attribute.KeyValue{
			attribute.Int("retryhttp.attempt", 1), attribute.Bool("retryhttp.hedge", false), attribute.Bool("retryhttp.resend", false),
			attribute.String("retryhttp.outcome", "cancelled"), attribute.String("error.type", "cancelled"),
		}
		attrs := first.Attributes
		if lateAnswer {
			// Its answer is reported when it comes in before the loop
			// cuts it off, which the scheduler decides: its status may
			// be there or not, its outcome is cancelled either way.
			attrs = slices.DeleteFunc(slices.Clone(attrs), func(kv attribute.KeyValue) bool {
				return kv.Key == "http.response.status_code"
			})
		}
		assert.ElementsMatch(t, spanAttrs("*", want...), attrs)
		assert.Equal(t, codes.Error, first.Status.Code, "a cancelled hedge's span is an Error")
		if !lateAnswer {
			assert.Contains(t, first.Status.Description, "another hedge won")
		}
		for _, s := range spans {
			assert.Equal(t, parent.SpanContext(), s.Parent)
		}
		assert.Equal(t, first.StartTime.Add(50*time.Millisecond), hedge.StartTime)
	})
}

// closedPort returns the address of a loopback port nothing listens on,
// so that a dial to it is refused at once.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func TestTransparentResend(t *testing.T) {
	r := newRig(t)
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr := &retryhttp.Transport{Base: base, Policy: &policy.Config{}, Hooks: r.hooks}
	addr := closedPort(t)
	// No span in the context: the attempt spans are roots.
	req, err := http.NewRequestWithContext(t.Context(), "GET", "http://"+addr+"/v1/items", nil)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	require.Error(t, err, "nothing listens there")

	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	portN, err := strconv.Atoi(port)
	require.NoError(t, err)
	attrs := attribute.NewSet(
		attribute.String("server.address", host), attribute.Int("server.port", portN),
		attribute.String("http.request.method", "GET"), attribute.String("retryhttp.rule", "(none)"))
	got := r.metrics(t)
	assert.Len(t, got, 1, "no retries, no hedges, no wait")
	metricdatatest.AssertEqual(t, transparentRetries(attrs, 1), got[otel.TransparentRetriesMetric],
		metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())

	spans := r.attempts()
	require.Len(t, spans, 2, "the attempt and its resend")
	for i, s := range spans {
		assert.ElementsMatch(t, []attribute.KeyValue{
			attribute.String("http.request.method", "GET"),
			attribute.String("server.address", host), attribute.Int("server.port", portN),
			attribute.String("url.full", "http://"+addr+"/v1/items"),
			attribute.String("retryhttp.rule", "(none)"),
			attribute.Int("retryhttp.attempt", 1), attribute.Bool("retryhttp.hedge", false), attribute.Bool("retryhttp.resend", i == 1),
			attribute.String("retryhttp.outcome", "never-sent"), attribute.String("error.type", "never-sent"),
		}, s.Attributes, "span %d", i)
		assert.False(t, s.Parent.IsValid(), "a root span")
		assert.Equal(t, codes.Error, s.Status.Code)
		assert.Contains(t, s.Status.Description, "connection refused")
	}
}

// secretURL carries secrets in its userinfo, query and fragment, the
// query with characters that could end a URL in a text.
const secretURL = "https://alice:hunter2@api.test/v1/items?q=a'b\"c <d>&token=s3cret#frag-secret"

func TestNoSecretIsRecorded(t *testing.T) {
	cases := map[string]http.RoundTripper{
		// A base that wraps an http.Client quotes the URL in its errors.
		"error quoting the URL": roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return nil, &url.Error{Op: "Get", URL: req.URL.String(), Err: errors.New("boom")}
		}),
		"error with the URL bare": roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return nil, fmt.Errorf("GET %s: boom", req.URL)
		}),
		"response with headers": roundTripFunc(func(*http.Request) (*http.Response, error) {
			resp := httpmock.NewStringResponse(503, "")
			resp.Header.Set("Set-Cookie", "session=cookie-secret")
			return resp, nil
		}),
	}
	for name, base := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			tr := &retryhttp.Transport{Base: base, Policy: &policy.Config{}, Hooks: r.hooks}
			req, err := http.NewRequestWithContext(t.Context(), "GET", secretURL, nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer header-secret")
			if resp, err := tr.RoundTrip(req); err == nil {
				require.NoError(t, resp.Body.Close())
			}
			spans := r.attempts()
			require.Len(t, spans, 1)
			s := spans[0]
			assert.Contains(t, s.Attributes, attribute.String("url.full", "https://REDACTED:REDACTED@api.test/v1/items"))
			all := s.Status.Description
			for _, kv := range s.Attributes {
				all += " " + kv.Value.String()
			}
			assert.Contains(t, all, "api.test", "the check sees the recorded text")
			for _, secret := range []string{"alice", "hunter2", "s3cret", "frag-secret", "header-secret", "cookie-secret"} {
				assert.NotContains(t, all, secret)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestRefusalIsAnEventOnTheCallerSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		mt := httpmock.NewMockTransport()
		mt.RegisterNoResponder(func(*http.Request) (*http.Response, error) {
			resp := httpmock.NewStringResponse(503, "")
			resp.Header.Set("Retry-After", "3600") // past the longest server delay waited for
			return resp, nil
		})
		tr := &retryhttp.Transport{Base: mt, Policy: retryPolicy(3), Hooks: r.hooks}
		r.get(t, tr, "https://api.test/v1/items")

		var events []string
		for _, s := range r.spans.GetSpans() {
			for _, e := range s.Events {
				set := attribute.NewSet(e.Attributes...)
				events = append(events, s.Name+" "+e.Name+" "+set.Encoded(attribute.DefaultEncoder()))
			}
		}
		assert.Equal(t, []string{"caller retryhttp.refused retryhttp.attempt=2,retryhttp.refusal.reason=delay-too-long"}, events)
		got := r.metrics(t)
		assert.NotContains(t, got, otel.RetryDelayMetric, "one attempt, no wait: no request histogram")
		assert.NotContains(t, got, otel.RetriesMetric)
		refusals := got[otel.RefusalsMetric].Data.(metricdata.Sum[int64]).DataPoints
		require.Len(t, refusals, 1, "the refusal is counted")
		assert.Equal(t, int64(1), refusals[0].Value)
		reason, _ := refusals[0].Attributes.Value(otel.RefusalReasonKey)
		assert.Equal(t, "delay-too-long", reason.AsString())
	})
}

// heldOnce is a host that answers its first request 429 with
// Retry-After: retryAfter, holding itself, and every other 200.
func heldOnce(retryAfter string) *httpmock.MockTransport {
	mt := httpmock.NewMockTransport()
	var calls atomic.Int64
	mt.RegisterNoResponder(func(*http.Request) (*http.Response, error) {
		if calls.Add(1) == 1 {
			resp := httpmock.NewStringResponse(429, "")
			resp.Header.Set("Retry-After", retryAfter)
			return resp, nil
		}
		return httpmock.NewStringResponse(200, "ok"), nil
	})
	return mt
}

// A wait for a hold on the host is recorded, with the request's
// attributes, and so is a request a hold refused.
func TestHoldsAreRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		mt := heldOnce("2")
		tr := &retryhttp.Transport{Base: mt, Hooks: r.hooks} // policy.Default holds hosts
		send := func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, "GET", "https://api.test/v1/items", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}
		require.NoError(t, send(retryhttp.WithoutRetries(t.Context()))) // the 429: the host is held for 2 s
		short, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		require.ErrorIs(t, send(short), retryhttp.ErrHeld, "would wait past its deadline: refused at once")
		require.NoError(t, send(t.Context()), "waits for the hold to end")
		hold := r.metrics(t)[otel.HoldDelayMetric].Data.(metricdata.Histogram[float64]).DataPoints
		require.Len(t, hold, 1, "a wait for a hold is recorded")
		assert.Equal(t, uint64(1), hold[0].Count)
		assert.GreaterOrEqual(t, hold[0].Sum, 2.0)
		var reasons []string
		for _, dp := range r.metrics(t)[otel.RefusalsMetric].Data.(metricdata.Sum[int64]).DataPoints {
			reason, _ := dp.Attributes.Value(otel.RefusalReasonKey)
			reasons = append(reasons, reason.AsString())
		}
		assert.Contains(t, reasons, string(retrytrace.RefusedHeld))
	})
}

// A wait is recorded as long as it lasted, not as announced: a request
// waiting on a 30 s hold that ResetBackoff ends after a second records a
// second.
func TestHoldDelayIsTheTimeWaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		mt := heldOnce("30")
		tr := &retryhttp.Transport{Base: mt, Hooks: r.hooks}
		req, err := http.NewRequestWithContext(retryhttp.WithoutRetries(t.Context()), "GET", "https://api.test/v1/items", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req) // the 429: the host is held for 30 s
		require.NoError(t, err)
		resp.Body.Close()
		go func() {
			time.Sleep(time.Second) // virtual time
			tr.ResetBackoff("")
		}()
		req, err = http.NewRequestWithContext(t.Context(), "GET", "https://api.test/v1/items", nil)
		require.NoError(t, err)
		resp, err = tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		hold := r.metrics(t)[otel.HoldDelayMetric].Data.(metricdata.Histogram[float64]).DataPoints
		require.Len(t, hold, 1)
		assert.Equal(t, uint64(1), hold[0].Count)
		assert.InDelta(t, 1.0, hold[0].Sum, 0.01, "the second it waited, not the 30 announced")
	})
}

func TestConcurrentRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		// Each request's first attempt gets a 503, its retry a 200.
		mt := httpmock.NewMockTransport()
		mt.RegisterNoResponder(func(req *http.Request) (*http.Response, error) {
			if req.Header.Get(retryhttp.AttemptsHeader) == "" {
				return httpmock.NewStringResponse(503, ""), nil
			}
			return httpmock.NewStringResponse(200, ""), nil
		})
		tr := &retryhttp.Transport{Base: mt, Policy: retryPolicy(3), Hooks: r.hooks}
		const n = 64
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				req, err := http.NewRequestWithContext(t.Context(), "GET", "https://api.test/v1/items", nil)
				if !assert.NoError(t, err) {
					return
				}
				resp, err := tr.RoundTrip(req)
				if assert.NoError(t, err) {
					assert.NoError(t, resp.Body.Close())
				}
			})
		}
		wg.Wait()

		ones, delays := make([]int64, n), make([]float64, n)
		for i := range n {
			ones[i], delays[i] = 1, 0.1
		}
		got := r.metrics(t)
		metricdatatest.AssertEqual(t, retries(apiAttrs("*"), ones...), got[otel.RetriesMetric],
			metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
		metricdatatest.AssertEqual(t, retryDelay(apiAttrs("*"), delays...), got[otel.RetryDelayMetric],
			metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
		outcomes := map[string]int{}
		for _, s := range r.attempts() {
			for _, kv := range s.Attributes {
				if kv.Key == "retryhttp.outcome" {
					outcomes[kv.Value.AsString()]++
				}
			}
		}
		assert.Equal(t, map[string]int{"retryable": n, "success": n}, outcomes)
	})
}

func TestZeroConfigUsesGlobalProviders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hooks, err := otel.Hooks(otel.Config{})
		require.NoError(t, err)
		tr := &retryhttp.Transport{Base: statuses(503, 200), Policy: retryPolicy(2), Hooks: hooks}
		req, err := http.NewRequestWithContext(t.Context(), "GET", "https://api.test/", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, "1", resp.Header.Get(retryhttp.AttemptsHeader))
	})
}
