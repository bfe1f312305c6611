package retryhttp

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/policy"
)

// Codes are read as the AWS SDKs read them: cut at ":", after "#".
func TestCleanCode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"SlowDown": "SlowDown",
		"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException":         "ProvisionedThroughputExceededException",
		"ValidationException:http://internal.amazon.com/coral/com.amazon.coral.validate/": "ValidationException",
		"aws.protocols#ThrottlingException:http://internal.amazon.com/":                   "ThrottlingException",
		"  lock_timeout\t": "lock_timeout",
		"#":                "",
		":x":               "",
		"a#b#c":            "c",
	} {
		assert.Equal(t, want, cleanCode(in), "cleanCode(%q)", in)
	}
}

// A JSON path names nested keys from the top; the first key given twice
// counts; a key met on an array is looked for in its objects, the first
// that leads to a code giving it, and an index picks an element; a number
// reads as written; anything else gives no code, and a body cut short
// still gives a code that came before the cut.
func TestJSONCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, path, want string
	}{
		{"AWS __type", `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"x"}`,
			"__type", "ProvisionedThroughputExceededException"},
		{"Stripe error.code", `{"error": {"message": "busy", "type": "invalid_request_error", "code": "lock_timeout"}}`,
			"error.code", "lock_timeout"},
		{"after skipped values", `{"a": [1, {"code": "no"}, []], "b": {"c": {"d": null}}, "error": {"x": true, "code": "yes"}}`,
			"error.code", "yes"},
		{"number", `{"error": {"code": 88}}`, "error.code", "88"},
		{"first of two", `{"code": "first", "code": "second"}`, "code", "first"},
		{"cut after the code", `{"code": "Throttling", "message": "Rate exceeded and then the body goes on` /* no end */, "code", "Throttling"},
		{"missing", `{"error": {"message": "x"}}`, "error.code", ""},
		{"not an object on the way", `{"error": "lock_timeout"}`, "error.code", ""},
		{"an object at the end", `{"error": {"code": {"id": 1}}}`, "error.code", ""},
		{"null", `{"code": null}`, "code", ""},
		{"empty string", `{"code": ""}`, "code", ""},
		{"only a prefix", `{"code": "com.example#"}`, "code", ""},
		{"malformed", `{"code" "x"}`, "code", ""},
		{"array at the top", `[{"code": "x"}]`, "code", ""},
		{"cut before the code", `{"message": "a long mess`, "code", ""},
		{"Google's errors", `{"error": {"code": 403, "message": "User Rate Limit Exceeded", "errors": [{"domain": "usageLimits", "reason": "userRateLimitExceeded", "message": "x"}]}}`,
			"error.errors.reason", "userRateLimitExceeded"},
		{"Google's details, not first", `{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.Help", "links": [{"url": "x"}]}, {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED"}]}}`,
			"error.details.reason", "RATE_LIMIT_EXCEEDED"},
		{"an index", `{"errors": [{"reason": "first"}, {"reason": "second"}]}`, "errors.1.reason", "second"},
		{"an index past the end", `{"errors": [{"reason": "first"}]}`, "errors.1.reason", ""},
		{"an index of scalars", `{"codes": ["a", 7, "c"]}`, "codes.1", "7"},
		{"a number as a key", `{"errors": {"0": {"reason": "keyed"}}}`, "errors.0.reason", "keyed"},
		{"not an index", `{"errors": [{"01": "a", "reason": "b"}]}`, "errors.01", "a"},
		{"the first element that leads to a code", `{"e": [{"reason": {"x": [1]}}, 3, [{"reason": "nested"}], {"reason": "ok"}]}`,
			"e.reason", "ok"},
		{"arrays in arrays not searched", `{"e": [[{"reason": "nested"}]]}`, "e.reason", ""},
		{"a search that finds none", `{"e": [{"a": 1}, {"b": [2]}], "f": 1}`, "e.reason", ""},
		{"cut inside an array", `{"e": [{"reason": "ok"}, {"reason": "never`, "e.reason", "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := jsonCode([]byte(tt.body), tt.path)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.want != "", ok)
		})
	}
}

// An XML path is matched against the innermost elements, by local name,
// wherever they are; the first match counts, and only its own text.
func TestXMLCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, path, want string
	}{
		{"S3", `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
			`<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>1</RequestId></Error>`,
			"Error/Code", "SlowDown"},
		{"EC2", `<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>x</Message></Error></Errors><RequestID>1</RequestID></Response>`,
			"Error/Code", "RequestLimitExceeded"},
		{"SQS, in a namespace", `<ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><Error><Type>Sender</Type>` +
			`<Code>AWS.SimpleQueueService.NonExistentQueue</Code></Error></ErrorResponse>`, "Error/Code", "AWS.SimpleQueueService.NonExistentQueue"},
		{"prefixed names", `<s:Error xmlns:s="urn:x"><s:Code> Throttling </s:Code></s:Error>`, "Error/Code", "Throttling"},
		{"anchored at the parent", `<Error><Detail><Code>no</Code></Detail><Code>yes</Code></Error>`, "Error/Code", "yes"},
		{"own text only", `<Error><Code>Slow<b>not this</b>Down</Code></Error>`, "Error/Code", "SlowDown"},
		{"CDATA", `<Error><Code><![CDATA[SlowDown]]></Code></Error>`, "Error/Code", "SlowDown"},
		{"one element", `<Code>SlowDown</Code>`, "Code", "SlowDown"},
		{"first match counts", `<Error><Code></Code></Error><Error><Code>x</Code></Error>`, "Error/Code", ""},
		{"cut after the code", `<Error><Code>SlowDown</Code><Message>Please reduce`, "Error/Code", "SlowDown"},
		{"cut inside the code", `<Error><Code>Slow`, "Error/Code", ""},
		{"missing", `<Error><Message>x</Message></Error>`, "Error/Code", ""},
		{"malformed", `<Error><Code>SlowDown</Error></Code>`, "Error/Code", ""},
		{"unknown entity", `<Error><Code>&slow;</Code></Error>`, "Error/Code", ""},
		{"other charset", `<?xml version="1.0" encoding="ISO-8859-1"?><Error><Code>SlowDown</Code></Error>`, "Error/Code", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := xmlCode([]byte(tt.body), tt.path)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.want != "", ok)
		})
	}
}

// The code is read from the header first; the body, when it must be
// read, as the form its first byte says, and left whole; the code read is
// given with its verdict, listed or not.
func TestErrorCodeSources(t *testing.T) {
	t.Parallel()
	all := &policy.ErrorCodes{JSON: "__type", XML: "Error/Code", Header: "X-Amzn-ErrorType",
		Throttled: []string{"ThrottlingException", "SlowDown"}, Retryable: []string{"RequestTimeout"},
		Unprocessed: []string{"PriorRequestNotComplete"}, Final: []string{"ValidationException"}}
	tests := []struct {
		name   string
		codes  *policy.ErrorCodes
		header http.Header
		body   string
		want   Verdict
		code   string // the code read, listed or not
	}{
		{"header", all, http.Header{"X-Amzn-Errortype": {"ThrottlingException:http://internal.amazon.com/"}},
			`{"__type": "ValidationException"}`, Throttled, "ThrottlingException"},
		{"header first, listed or not", all, http.Header{"X-Amzn-Errortype": {"AccessDenied"}}, `{"__type": "ThrottlingException"}`, UsePolicy, "AccessDenied"},
		{"empty header: the body", all, http.Header{"X-Amzn-Errortype": {" "}}, `{"__type": "ValidationException"}`, Final, "ValidationException"},
		{"JSON", all, nil, "\uFEFF \n" + `{"__type": "a#RequestTimeout"}`, Retryable, "RequestTimeout"},
		{"XML", all, nil, `<Error><Code>PriorRequestNotComplete</Code></Error>`, RetryableUnprocessed, "PriorRequestNotComplete"},
		{"JSON not read as XML", &policy.ErrorCodes{XML: "Error/Code", Final: []string{"x"}}, nil, `{"Error": {"Code": "x"}}`, UsePolicy, ""},
		{"XML not read as JSON", &policy.ErrorCodes{JSON: "code", Final: []string{"x"}}, nil, `<code>x</code>`, UsePolicy, ""},
		{"header only: body unread", &policy.ErrorCodes{Header: "X-Error", Final: []string{"x"}}, nil, `{"code": "x"}`, UsePolicy, ""},
		{"text", all, nil, `Service Unavailable`, UsePolicy, ""},
		{"empty body", all, nil, ``, UsePolicy, ""},
		{"listed nowhere", all, nil, `{"__type": "AccessDenied"}`, UsePolicy, "AccessDenied"},
		{"case counts", all, nil, `{"__type": "slowdown"}`, UsePolicy, "slowdown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := tt.header
			if h == nil {
				h = http.Header{}
			}
			resp := &http.Response{StatusCode: 400, Header: h, Body: io.NopCloser(strings.NewReader(tt.body))}
			code, v := codeVerdict(context.Background(), resp, tt.codes)
			assert.Equal(t, tt.want, v)
			assert.Equal(t, tt.code, code)
			rest, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tt.body, string(rest), "the body is left whole")
		})
	}
}

// Only the first 64 KiB of a body are read for its code.
func TestErrorCodePeekIsBounded(t *testing.T) {
	t.Parallel()
	codes := &policy.ErrorCodes{JSON: "code", Final: []string{"x"}}
	pad := `{"pad": "` + strings.Repeat("a", codePeek) + `", "code": "x"}`
	r := &countingReader{r: strings.NewReader(pad)}
	resp := &http.Response{StatusCode: 400, Header: http.Header{}, Body: io.NopCloser(r)}
	code, v := codeVerdict(context.Background(), resp, codes)
	assert.Equal(t, UsePolicy, v, "a code past the bound is not read")
	assert.Empty(t, code)
	assert.LessOrEqual(t, r.n, codePeek)
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, pad, string(rest))
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// Any body, read as JSON or XML by any path, gives a code or none, never
// a panic or a hang, and a code it gives is one a list could hold.
func FuzzErrorCode(f *testing.F) {
	for _, seed := range []struct{ body, path string }{
		{`{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException"}`, "__type"},
		{`{"error": {"code": "lock_timeout"}}`, "error.code"},
		{`<Error><Code>SlowDown</Code></Error>`, "Error/Code"},
		{`<a><b><c>x</c></b></a>`, "b/c"},
		{`{"a": [[[[{}]]]], "b": 1e400}`, "b"},
		{`<!DOCTYPE x [<!ENTITY e "y">]><x>&e;</x>`, "x"},
	} {
		f.Add(seed.body, seed.path)
	}
	f.Fuzz(func(t *testing.T, body, path string) {
		for _, code := range []func([]byte, string) (string, bool){jsonCode, xmlCode} {
			got, ok := code([]byte(body), path)
			if ok != (got != "") || got != strings.TrimSpace(got) || strings.ContainsAny(got, ":#") {
				t.Fatalf("code %q, %v from %q at %q", got, ok, body, path)
			}
		}
	})
}

// No body, however broken or deep, makes the JSON path panic or hang,
// and a code is found exactly when one is returned.
func FuzzJSONCode(f *testing.F) {
	f.Add([]byte(`{"error": {"errors": [{"reason": "x"}]}}`), "error.errors.reason")
	f.Add([]byte(`{"e": [[{"r": 1}], {"r": [2]}, {"r": "3"}]}`), "e.0.r")
	f.Add([]byte(`{"a": [[[[[[[[[[[[[[[[[[[[`), "a.b")
	f.Add([]byte(`{"a": {"a": {"a": "deep"}}}`), "a.a.a")
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		code, ok := jsonCode(body, path)
		if ok != (code != "") {
			t.Fatalf("jsonCode(%q, %q) = %q, %v", body, path, code, ok)
		}
	})
}
