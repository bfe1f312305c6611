package otel

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/retryhttp/retryhttp/retrytrace"
)

func newTestRecorder(t *testing.T, maxRequests int) (*recorder, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	r, err := newRecorder(Config{
		MeterProvider:  noop.NewMeterProvider(),
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)),
		MaxRequests:    maxRequests,
	})
	require.NoError(t, err)
	return r, exp
}

func newRequests(t *testing.T, n int) []*http.Request {
	t.Helper()
	reqs := make([]*http.Request, n)
	for i := range reqs {
		req, err := http.NewRequest("GET", "https://api.test/", nil)
		require.NoError(t, err)
		reqs[i] = req
	}
	return reqs
}

func TestDoneForgetsTheRequest(t *testing.T) {
	r, exp := newTestRecorder(t, 0)
	reqs := newRequests(t, 2)
	// One answered at once, one given up after a wait whose attempt
	// never came.
	r.attemptStart(retrytrace.AttemptStartInfo{Request: reqs[0], Attempt: 1})
	r.attemptDone(retrytrace.AttemptDoneInfo{Request: reqs[0], Attempt: 1, Outcome: retrytrace.OutcomeSuccess, StatusCode: 200})
	r.attemptStart(retrytrace.AttemptStartInfo{Request: reqs[1], Attempt: 1})
	r.attemptDone(retrytrace.AttemptDoneInfo{Request: reqs[1], Attempt: 1, Outcome: retrytrace.OutcomeRetryable, StatusCode: 503})
	r.wait(retrytrace.WaitInfo{Request: reqs[1], Attempt: 2, Reason: retrytrace.WaitBackoff})
	assert.Equal(t, 2, r.table.size())
	r.done(retrytrace.DoneInfo{Request: reqs[0], Attempts: 1, StatusCode: 200})
	r.done(retrytrace.DoneInfo{Request: reqs[1], Attempts: 1, StatusCode: 503})
	assert.Equal(t, 0, r.table.size())
	assert.Len(t, exp.GetSpans(), 2)
}

func TestTableIsBounded(t *testing.T) {
	r, exp := newTestRecorder(t, 2)
	reqs := newRequests(t, 3)
	for _, req := range reqs {
		// No Done comes for any of them.
		r.attemptStart(retrytrace.AttemptStartInfo{Request: req, Attempt: 1})
	}
	assert.Equal(t, 2, r.table.size(), "the oldest is forgotten")
	spans := exp.GetSpans()
	require.Len(t, spans, 1, "and its open span ended")
	assert.Equal(t, codes.Error, spans[0].Status.Code)
	assert.Equal(t, "retryhttp/otel: attempt not reported done", spans[0].Status.Description)

	// Should its end come after all, it is ignored: its span ended once.
	r.attemptDone(retrytrace.AttemptDoneInfo{Request: reqs[0], Attempt: 1, Outcome: retrytrace.OutcomeSuccess, StatusCode: 200})
	r.done(retrytrace.DoneInfo{Request: reqs[0], Attempts: 1, StatusCode: 200})
	assert.Len(t, exp.GetSpans(), 1)
	assert.Equal(t, 2, r.table.size())

	for _, req := range reqs[1:] {
		r.attemptDone(retrytrace.AttemptDoneInfo{Request: req, Attempt: 1, Outcome: retrytrace.OutcomeSuccess, StatusCode: 200})
		r.done(retrytrace.DoneInfo{Request: req, Attempts: 1, StatusCode: 200})
	}
	assert.Equal(t, 0, r.table.size())
	spans = exp.GetSpans()
	require.Len(t, spans, 3)
	for _, s := range spans[1:] {
		assert.Equal(t, codes.Unset, s.Status.Code)
	}
}

func TestScrub(t *testing.T) {
	cases := []struct{ text, want string }{
		{`Get "https://bob:pa%3Ass@api.test/x?k=v#f": boom`, `Get "https://REDACTED:REDACTED@api.test/x": boom`},
		{`Get "https://bob:***@api.test:8443/x?k=v": boom`, `Get "https://REDACTED:REDACTED@api.test:8443/x": boom`},
		{"redirect to http://b.test/y then to https://c.test/#t (refused)", "redirect to http://b.test/y then to https://c.test/"},
		{"redirect to http://b.test/y?sig=s then to https://c.test/ (refused)", "redirect to http://b.test/y"},
		{"bad URL ://x and h://%zz?k=v", "bad URL ://REDACTED and h://REDACTED"},
		{"dial tcp 127.0.0.1:1: connect: connection refused", "dial tcp 127.0.0.1:1: connect: connection refused"},
		{`Get "https://h/x?q=a\"b&api_key=SECRET": boom`, `Get "https://h/x": boom`},
		{"GET https://h/x?q=a b&api_key=SECRET: boom", "GET https://h/x"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, scrub(textError(c.text)))
	}
}

type textError string

func (e textError) Error() string { return string(e) }
