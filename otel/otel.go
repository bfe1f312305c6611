package otel

import (
	"fmt"
	"net/http"
	"time"

	otelglobal "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/retryhttp/retryhttp/retrytrace"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/retryhttp/retryhttp/otel"

// The names of the histograms recorded once per request, at its end, in
// the manner of gRPC's retry metrics.
const (
	// RetriesMetric counts the retries of a request: its attempts after
	// the first that were not hedges. Unit {retry}; a request with none
	// records nothing.
	RetriesMetric = "retryhttp.client.request.retries"
	// TransparentRetriesMetric counts the transparent resends of a
	// request's attempts that never reached the server. Unit
	// {transparent_retry}; a request with none records nothing.
	TransparentRetriesMetric = "retryhttp.client.request.transparent_retries"
	// HedgesMetric counts the hedges of a request: its attempts after the
	// first sent while another was in flight. Unit {hedge}; a request
	// with none records nothing.
	HedgesMetric = "retryhttp.client.request.hedges"
	// RetryDelayMetric is the total time a request waited with no
	// attempt in flight (a retrytrace.DoneInfo's RetryDelay): backoffs,
	// server delays, holds, the pace, a place in line, dial backoff
	// windows. Unit s; recorded for a request that was retried or
	// waited, 0 included.
	RetryDelayMetric = "retryhttp.client.request.retry_delay"
)

// The names of the instruments recorded as things happen, not once per
// request.
const (
	// HoldDelayMetric is each wait of a request for a hold on its host
	// to end (a rate limit, or an outage the host announced). Unit s,
	// with the attributes of the request histograms.
	HoldDelayMetric = "retryhttp.client.hold.delay"
	// PaceDelayMetric is each wait of an attempt for a send slot of its
	// host's pace (policy.Pace), and AdmissionDelayMetric each wait in
	// line for a slot under its host's concurrency limit
	// (policy.Admission). Each of the three is recorded when the wait
	// ends, as long as it lasted. Unit s, with the attributes of the
	// request histograms.
	PaceDelayMetric      = "retryhttp.client.pace.delay"
	AdmissionDelayMetric = "retryhttp.client.admission.delay"
	// RefusalsMetric counts the attempts a policy would make that were
	// not made, by [RefusalReasonKey]: a spent budget, the fleet's, the
	// hedge budget, a hold, the pace, the concurrency limit (shed), a
	// deadline, a server's delay, a body that cannot be replayed. Unit
	// {attempt}, with the attributes of the request histograms and the
	// reason.
	RefusalsMetric = "retryhttp.client.refusals"
)

// Bucket boundaries: gRPC's recommendations for its retry metrics, and
// its latency buckets (in seconds) for the delay.
var (
	countBuckets       = []float64{1, 2, 3, 4, 5}
	transparentBuckets = []float64{1, 2, 3, 4, 5, 10}
	delayBuckets       = []float64{0, 0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008,
		0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008, 0.01, 0.013, 0.016, 0.02,
		0.025, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3, 0.4,
		0.5, 0.65, 0.8, 1, 2, 5, 10, 20, 50, 100}
)

// Config says where [Hooks] record. Its zero value records to the global
// providers.
type Config struct {
	// MeterProvider makes the meter of the request histograms. Nil
	// means the global provider, otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// TracerProvider makes the tracer of the attempt spans. Nil means
	// the global provider, otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MaxRequests bounds the requests whose attempt spans are tracked at
	// once; 0 means [DefaultMaxRequests]. Each request is forgotten at
	// its end; past the bound, the oldest is forgotten first and its
	// open attempt spans end at once with an error status.
	MaxRequests int
}

// Hooks returns hooks that record, for each request they see, the
// histograms named by [RetriesMetric], [TransparentRetriesMetric],
// [HedgesMetric] and [RetryDelayMetric], each wait for a hold on its host
// ([HoldDelayMetric]), for its pace ([PaceDelayMetric]) and for its
// concurrency limit ([AdmissionDelayMetric]), and each refusal
// ([RefusalsMetric]), and one span
// per attempt, a child of the span in the request's context. Set them as
// [retryhttp.Transport.Hooks], or pass them to [retrytrace.WithHooks].
//
// The hooks are safe for concurrent use, and hold no state between
// requests but the open spans of requests in flight, bounded by
// [Config.MaxRequests]. They never record a query string, a fragment,
// userinfo or a header value. The error is that of creating an
// instrument.
func Hooks(cfg Config) (*retrytrace.Hooks, error) {
	r, err := newRecorder(cfg)
	if err != nil {
		return nil, err
	}
	return &retrytrace.Hooks{
		AttemptStart: r.attemptStart,
		AttemptDone:  r.attemptDone,
		Wait:         r.wait,
		Refused:      r.refused,
		Done:         r.done,
	}, nil
}

// recorder turns hook calls into measurements and spans.
type recorder struct {
	tracer                       trace.Tracer
	retries, transparent, hedges metric.Int64Histogram
	delay, hold, pace, admission metric.Float64Histogram
	refusals                     metric.Int64Counter
	table                        *table
}

func newRecorder(cfg Config) (*recorder, error) {
	mp, tp := cfg.MeterProvider, cfg.TracerProvider
	if mp == nil {
		mp = otelglobal.GetMeterProvider()
	}
	if tp == nil {
		tp = otelglobal.GetTracerProvider()
	}
	limit := cfg.MaxRequests
	if limit <= 0 {
		limit = DefaultMaxRequests
	}
	meter := mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	r := &recorder{
		tracer: tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		table:  newTable(limit),
	}
	var errs [8]error
	r.retries, errs[0] = meter.Int64Histogram(RetriesMetric, metric.WithUnit("{retry}"),
		metric.WithDescription("Number of retries during the request."),
		metric.WithExplicitBucketBoundaries(countBuckets...))
	r.transparent, errs[1] = meter.Int64Histogram(TransparentRetriesMetric, metric.WithUnit("{transparent_retry}"),
		metric.WithDescription("Number of transparent retries during the request."),
		metric.WithExplicitBucketBoundaries(transparentBuckets...))
	r.hedges, errs[2] = meter.Int64Histogram(HedgesMetric, metric.WithUnit("{hedge}"),
		metric.WithDescription("Number of hedges during the request."),
		metric.WithExplicitBucketBoundaries(countBuckets...))
	r.delay, errs[3] = meter.Float64Histogram(RetryDelayMetric, metric.WithUnit("s"),
		metric.WithDescription("Total time of delay while there is no active attempt during the request."),
		metric.WithExplicitBucketBoundaries(delayBuckets...))
	r.hold, errs[4] = meter.Float64Histogram(HoldDelayMetric, metric.WithUnit("s"),
		metric.WithDescription("Time a request waited for a hold on its host to end."),
		metric.WithExplicitBucketBoundaries(delayBuckets...))
	r.refusals, errs[5] = meter.Int64Counter(RefusalsMetric, metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts the policy would make that were not made, by reason."))
	r.pace, errs[6] = meter.Float64Histogram(PaceDelayMetric, metric.WithUnit("s"),
		metric.WithDescription("Time an attempt waited for a send slot of its host's pace."),
		metric.WithExplicitBucketBoundaries(delayBuckets...))
	r.admission, errs[7] = meter.Float64Histogram(AdmissionDelayMetric, metric.WithUnit("s"),
		metric.WithDescription("Time an attempt waited in line for a slot under its host's concurrency limit."),
		metric.WithExplicitBucketBoundaries(delayBuckets...))
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("retryhttp/otel: %w", err)
		}
	}
	return r, nil
}

// attemptStart starts the attempt's span, with the attributes that
// samplers may want at its start.
func (r *recorder) attemptStart(a retrytrace.AttemptStartInfo) {
	req := a.Request
	m, known := method(req)
	attrs := make([]attribute.KeyValue, 0, 12)
	attrs = append(attrs, semconv.HTTPRequestMethodKey.String(m))
	if !known {
		attrs = append(attrs, semconv.HTTPRequestMethodOriginal(req.Method))
	}
	attrs = append(attrs, server(req.URL)...)
	attrs = append(attrs, semconv.URLFull(fullURL(req.URL)), RuleKey.String(a.Rule),
		AttemptKey.Int(a.Attempt), HedgeKey.Bool(a.Hedge), ResendKey.Bool(a.Resend))
	if a.Attempt > 1 {
		attrs = append(attrs, semconv.HTTPRequestResendCount(a.Attempt-1))
	}
	r.endWait(req)
	if w, ok := r.table.takeWait(req, a.Attempt); ok {
		attrs = append(attrs, WaitDelayKey.Float64(w.length.Seconds()), WaitReasonKey.String(string(w.reason)))
	}
	name := m
	if !known {
		name = "HTTP" // the semantic conventions' name for a method they do not know
	}
	_, span := r.tracer.Start(req.Context(), name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	r.table.open(req, a.Attempt, span)
}

// attemptDone ends the attempt's span with its outcome. Statuses of 400
// and more, and errors, set an error status, as the semantic conventions
// ask of client spans; a hedge cancelled because another won is such an
// error too.
func (r *recorder) attemptDone(a retrytrace.AttemptDoneInfo) {
	span := r.table.take(a.Request, a.Attempt)
	if span == nil {
		return // forgotten past Config.MaxRequests, and ended then
	}
	attrs := []attribute.KeyValue{OutcomeKey.String(string(a.Outcome))}
	if a.StatusCode != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(a.StatusCode))
	}
	if a.ErrorCode != "" {
		attrs = append(attrs, ErrorCodeKey.String(a.ErrorCode))
	}
	if et := errorType(a); et != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(et))
		desc := "" // a status code says it all
		if a.Err != nil {
			desc = scrub(a.Err)
		}
		span.SetStatus(codes.Error, desc)
	}
	span.SetAttributes(attrs...)
	span.End()
}

// wait keeps the wait for the span of the attempt that follows it. A
// wait for a hold, a pace's slot or an admission slot is recorded when
// it ends, as long as it lasted: at the request's next event.
func (r *recorder) wait(w retrytrace.WaitInfo) {
	now := time.Now()
	if ended, ok := r.table.announce(w.Request, announced{n: w.Attempt, length: w.Delay, reason: w.Reason, rule: w.Rule, since: now}); ok {
		r.waited(w.Request, ended, now)
	}
}

// waited records the timed wait w of req, which ended at now.
func (r *recorder) waited(req *http.Request, w announced, now time.Time) {
	var h metric.Float64Histogram
	switch w.reason {
	case retrytrace.WaitHold:
		h = r.hold
	case retrytrace.WaitPace:
		h = r.pace
	case retrytrace.WaitAdmission:
		h = r.admission
	default:
		return
	}
	h.Record(req.Context(), now.Sub(w.since).Seconds(), metric.WithAttributeSet(requestAttrs(req, w.rule)))
}

// endWait records the timed wait of req under way, if any: the request
// went on.
func (r *recorder) endWait(req *http.Request) {
	if w, ok := r.table.endWait(req); ok {
		r.waited(req, w, time.Now())
	}
}

// refused counts the refusal, and notes on the caller's span why the
// request was not retried.
func (r *recorder) refused(f retrytrace.RefusedInfo) {
	r.endWait(f.Request)
	ctx := f.Request.Context()
	set := requestAttrs(f.Request, f.Rule)
	kv := append(set.ToSlice(), RefusalReasonKey.String(string(f.Reason)))
	r.refusals.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(kv...)))
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.AddEvent(RefusedEvent, trace.WithAttributes(AttemptKey.Int(f.Attempt), RefusalReasonKey.String(string(f.Reason))))
}

// done records the request's histograms and forgets it.
func (r *recorder) done(d retrytrace.DoneInfo) {
	r.endWait(d.Request)
	endDropped(r.table.remove(d.Request))
	retries := d.Attempts - 1 - d.Hedges
	if retries <= 0 && d.TransparentRetries == 0 && d.Hedges == 0 && d.RetryDelay == 0 {
		return // a request answered at once records nothing
	}
	ctx := d.Request.Context()
	set := metric.WithAttributeSet(requestAttrs(d.Request, d.Rule))
	if retries > 0 {
		r.retries.Record(ctx, int64(retries), set)
	}
	if d.TransparentRetries > 0 {
		r.transparent.Record(ctx, int64(d.TransparentRetries), set)
	}
	if d.Hedges > 0 {
		r.hedges.Record(ctx, int64(d.Hedges), set)
	}
	if retries > 0 || d.RetryDelay > 0 {
		r.delay.Record(ctx, d.RetryDelay.Seconds(), set)
	}
}

// requestAttrs are the attributes of the request histograms: bounded by
// the hosts a client talks to, the methods known, and the rules.
func requestAttrs(req *http.Request, rule string) attribute.Set {
	m, _ := method(req)
	kv := append(server(req.URL), semconv.HTTPRequestMethodKey.String(m), RuleKey.String(rule))
	return attribute.NewSet(kv...)
}
