package retryhttp_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// apiCase is one documented case of an API's retry rules, sent through
// the rule of the API's example: the answers the server gives in turn
// (the last repeating), and what the caller must get.
type apiCase struct {
	name     string
	method   string
	url      string
	header   http.Header // of the request
	upload   int         // bytes of request body, sent without GetBody; 0: "payload"
	getBody  bool        // the upload has GetBody
	buffer   bool        // the Transport has the default buffer, not the SDK's
	answers  []rt.Step
	attempts int
	status   int           // 0: RoundTrip fails
	wait     time.Duration // before the second attempt, at least; a server's delay, jittered up by a tenth at most
	pace     pacing        // whether the host is paced after it
}

// pacing is what a case says of its host's pace once it is over.
type pacing uint8

const (
	unpaced  pacing = iota // nothing throttled it
	paced                  // a throttle paces it
	paceLift               // a throttle paced it, and the pace may have lifted during a long wait
)

// run sends c through tr, a Transport of the API's rule with srv as its
// base, in a synctest bubble, and checks what the caller gets.
func (c apiCase) run(t *testing.T, tr *retryhttp.Transport, srv *rt.Server) *http.Response {
	t.Helper()
	var body io.Reader = strings.NewReader("payload")
	switch {
	case c.upload > 0 && c.getBody:
		body = bytes.NewReader(make([]byte, c.upload))
	case c.upload > 0:
		body = io.LimitReader(zeros{}, int64(c.upload))
	}
	if c.method == "GET" {
		body = nil
	}
	req, err := http.NewRequestWithContext(t.Context(), c.method, c.url, body)
	require.NoError(t, err)
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	resp, err := tr.RoundTrip(req)
	at := srv.Attempts()
	assert.Len(t, at, c.attempts, "attempts")
	if c.status == 0 {
		require.Error(t, err)
		return nil
	}
	require.NoError(t, err)
	assert.Equal(t, c.status, resp.StatusCode)
	if c.wait > 0 && len(at) > 1 {
		within(t, at[1].At-at[0].At, c.wait, c.wait/10, "the server's delay")
	}
	if c.pace != paceLift {
		assert.Equal(t, c.pace == paced, tr.Stats().Hosts[req.URL.Host].PaceRate > 0, "paced")
	}
	return resp
}

// The AWS SDKs' throttle error codes (aws-sdk-go-v2's
// retry.DefaultThrottleErrorCodes), written out here so that the rule is
// checked against them, not against itself.
var awsThrottleCodes = []string{"Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
	"TooManyRequestsException", "ProvisionedThroughputExceededException", "TransactionInProgressException",
	"RequestLimitExceeded", "BandwidthLimitExceeded", "LimitExceededException", "RequestThrottled", "SlowDown",
	"PriorRequestNotComplete", "EC2ThrottledException"}

// Every documented AWS retry case, sent through the example's rule,
// Prepare and buffer (awsTransport): throttle codes in a JSON __type (as
// "prefix#Code"), in X-Amzn-ErrorType and in S3's and EC2's XML; the
// transient codes; 500, 502, 503 and 504, for POSTs too; codes that are
// final; a connection reset; x-amz-retry-after; a body cut mid-read; a
// 2 MiB upload, replayed from GetBody or the SDK's buffer, and not from
// the default one.
func TestAWSRule(t *testing.T) {
	const dynamo, s3, ec2 = "https://dynamodb.us-east-1.amazonaws.com/", "https://bucket.s3.amazonaws.com/key",
		"https://ec2.us-east-1.amazonaws.com/"
	ok := rt.Step{Body: strings.Repeat("o", 64<<10)}
	jsonErr := func(status int, typ string) rt.Step {
		return rt.Step{Status: status, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
			Body: `{"__type":"` + typ + `","message":"as AWS says"}`}
	}
	xmlErr := func(status int, code string) rt.Step {
		return rt.Step{Status: status, Header: http.Header{"Content-Type": {"application/xml"}},
			Body: `<?xml version="1.0" encoding="UTF-8"?>` + "\n<Error><Code>" + code + "</Code><Message>m</Message><RequestId>r</RequestId></Error>"}
	}
	var cases []apiCase
	for _, code := range awsThrottleCodes {
		cases = append(cases, apiCase{name: "throttle " + code, method: "POST", url: dynamo,
			answers: []rt.Step{jsonErr(400, "com.amazonaws.dynamodb.v20120810#"+code), ok}, attempts: 2, status: 200, pace: paced})
	}
	cases = append(cases, []apiCase{
		{name: "throttle in X-Amzn-ErrorType", method: "POST", url: dynamo, answers: []rt.Step{{Status: 400,
			Header: http.Header{"X-Amzn-Errortype": {"ThrottlingException:http://internal.amazon.com/coral/com.amazon.coral.availability/"}}}, ok},
			attempts: 2, status: 200, pace: paced},
		{name: "throttle in a bare __type", method: "POST", url: dynamo, answers: []rt.Step{jsonErr(400, "ThrottlingException"), ok},
			attempts: 2, status: 200, pace: paced},
		{name: "S3 SlowDown in a 503", method: "PUT", url: s3, answers: []rt.Step{xmlErr(503, "SlowDown"), ok}, attempts: 2, status: 200, pace: paced},
		{name: "EC2 RequestLimitExceeded", method: "POST", url: ec2, answers: []rt.Step{{Status: 503,
			Body: `<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>m</Message></Error></Errors><RequestID>r</RequestID></Response>`}, ok},
			attempts: 2, status: 200, pace: paced},
		{name: "S3 RequestTimeout in a 400", method: "PUT", url: s3, answers: []rt.Step{xmlErr(400, "RequestTimeout"), ok}, attempts: 2, status: 200},
		{name: "RequestTimeoutException", method: "POST", url: dynamo, answers: []rt.Step{jsonErr(400, "RequestTimeoutException"), ok},
			attempts: 2, status: 200},
		{name: "500, POST", method: "POST", url: dynamo, answers: []rt.Step{jsonErr(500, "InternalServerError"), ok}, attempts: 2, status: 200},
		{name: "502", method: "GET", url: s3, answers: []rt.Step{{Status: 502}, ok}, attempts: 2, status: 200},
		{name: "503", method: "GET", url: s3, answers: []rt.Step{{Status: 503}, ok}, attempts: 2, status: 200},
		{name: "504", method: "GET", url: s3, answers: []rt.Step{{Status: 504}, ok}, attempts: 2, status: 200},
		{name: "three attempts at most", method: "GET", url: s3, answers: []rt.Step{xmlErr(500, "InternalError")}, attempts: 3, status: 500},
		{name: "ValidationException", method: "POST", url: dynamo, answers: []rt.Step{jsonErr(400, "com.amazon.coral.validate#ValidationException")},
			attempts: 1, status: 400},
		{name: "ConditionalCheckFailedException", method: "POST", url: dynamo,
			answers: []rt.Step{jsonErr(400, "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException")}, attempts: 1, status: 400},
		{name: "S3 AccessDenied", method: "GET", url: s3, answers: []rt.Step{xmlErr(403, "AccessDenied")}, attempts: 1, status: 403},
		{name: "S3 NoSuchKey", method: "GET", url: s3, answers: []rt.Step{xmlErr(404, "NoSuchKey")}, attempts: 1, status: 404},
		{name: "connection reset, POST", method: "POST", url: dynamo, answers: []rt.Step{{Fault: rt.Reset}, ok}, attempts: 2, status: 200},
		{name: "x-amz-retry-after", method: "GET", url: s3, answers: []rt.Step{{Status: 503, Header: http.Header{"X-Amz-Retry-After": {"1500"}}}, ok},
			attempts: 2, status: 200, wait: 1500 * time.Millisecond, pace: paced},
		{name: "x-amz-retry-after before Retry-After", method: "GET", url: s3, answers: []rt.Step{{Status: 503,
			Header: http.Header{"X-Amz-Retry-After": {"2500"}, "Retry-After": {"30"}}}, ok}, attempts: 2, status: 200, wait: 2500 * time.Millisecond, pace: paceLift},
		{name: "body reset mid-read", method: "GET", url: s3, answers: []rt.Step{{Body: ok.Body, Fault: rt.ResetMidBody, After: 1000}, ok},
			attempts: 2, status: 200},
		{name: "body closed mid-read", method: "GET", url: s3, answers: []rt.Step{{Body: ok.Body, Fault: rt.CloseMidBody, After: 60000}, ok},
			attempts: 2, status: 200},
		{name: "2 MiB upload, the SDK's buffer", method: "PUT", url: s3, upload: 2 << 20, answers: []rt.Step{xmlErr(500, "InternalError"), ok},
			attempts: 2, status: 200},
		{name: "2 MiB upload, GetBody", method: "PUT", url: s3, upload: 2 << 20, getBody: true, buffer: true,
			answers: []rt.Step{xmlErr(500, "InternalError"), ok}, attempts: 2, status: 200},
		{name: "2 MiB upload, the default buffer: sent once", method: "PUT", url: s3, upload: 2 << 20, buffer: true,
			answers: []rt.Step{xmlErr(500, "InternalError"), ok}, attempts: 1, status: 500},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Script: c.answers, KeepBody: -1}
				tr := awsTransport(srv)
				if c.buffer {
					tr.Buffer = retryhttp.BufferLimits{}
				}
				resp := c.run(t, tr, srv)
				if resp == nil {
					return
				}
				body := readAll(t, resp)
				at := srv.Attempts()
				for i, a := range at {
					assert.Equal(t, fmt.Sprintf("attempt=%d; max=3", i+1), a.Header.Get("Amz-Sdk-Request"))
					if c.upload > 0 {
						assert.Equal(t, int64(c.upload), a.BodySize, "attempt %d sent the whole upload", i+1)
						assert.Equal(t, at[0].BodySHA256, a.BodySHA256)
					}
				}
				if resp.StatusCode == 200 {
					assert.Equal(t, ok.Body, body, "the answer whole")
				}
			})
		})
	}
}

// The AWS rule's waits: a full-jitter backoff, up to 1 s before the first
// retry and 2 s before the second; each attempt signed as it is sent.
func TestAWSRuleWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for range 20 {
			srv := &rt.Server{Script: []rt.Step{{Status: 500}, {Status: 500}, {}}}
			resp, err := awsTransport(srv).RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			readAll(t, resp)
			at := srv.Attempts()
			require.Len(t, at, 3)
			assert.Less(t, at[1].At-at[0].At, time.Second)
			assert.Less(t, at[2].At-at[1].At, 2*time.Second)
			start := time.Now().Add(-at[2].At)
			for _, a := range at {
				assert.Equal(t, start.Add(a.At).UTC().Format("20060102T150405Z"), a.Header.Get("X-Amz-Date"))
			}
		}
	})
}

// Every documented Stripe retry case, sent through the example's rule:
// 409, 429 and 5xx retried, a POST only with an Idempotency-Key (the same
// on each attempt); Stripe-Should-Retry before the status lists; a
// lock_timeout retried whatever the method; Retry-After obeyed; errors of
// the request itself final.
func TestStripeRule(t *testing.T) {
	const charges = "https://api.stripe.com/v1/charges"
	ok := rt.Step{Body: `{"id": "ch_1"}`}
	stripe := func(status int, typ, code string, kv ...string) rt.Step {
		s := rt.Step{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: stripeError(typ, code)}
		for i := 0; i < len(kv); i += 2 {
			s.Header.Set(kv[i], kv[i+1])
		}
		return s
	}
	key := http.Header{"Idempotency-Key": {"7a1c0d3e"}}
	cases := []apiCase{
		{name: "500 with a key", method: "POST", header: key, answers: []rt.Step{stripe(500, "api_error", ""), ok}, attempts: 2, status: 200},
		{name: "502 with a key", method: "POST", header: key, answers: []rt.Step{{Status: 502}, ok}, attempts: 2, status: 200},
		{name: "503 with a key", method: "POST", header: key, answers: []rt.Step{{Status: 503}, ok}, attempts: 2, status: 200},
		{name: "500 without a key", method: "POST", answers: []rt.Step{stripe(500, "api_error", ""), ok}, attempts: 1, status: 500},
		{name: "500 on a GET", method: "GET", answers: []rt.Step{stripe(500, "api_error", ""), ok}, attempts: 2, status: 200},
		{name: "500 three times", method: "POST", header: key, answers: []rt.Step{stripe(500, "api_error", "")}, attempts: 3, status: 500},
		{name: "Stripe-Should-Retry: true, without a key", method: "POST",
			answers: []rt.Step{stripe(500, "api_error", "", "Stripe-Should-Retry", "true"), ok}, attempts: 2, status: 200},
		{name: "Stripe-Should-Retry: true on a 400", method: "POST",
			answers: []rt.Step{stripe(400, "invalid_request_error", "", "Stripe-Should-Retry", "true"), ok}, attempts: 2, status: 200},
		{name: "Stripe-Should-Retry: false on a 503 with a key", method: "POST", header: key,
			answers: []rt.Step{stripe(503, "api_error", "", "Stripe-Should-Retry", "false"), ok}, attempts: 1, status: 503},
		{name: "Stripe-Should-Retry: false on a 409", method: "POST", header: key,
			answers: []rt.Step{stripe(409, "idempotency_error", "", "Stripe-Should-Retry", "false"), ok}, attempts: 1, status: 409},
		{name: "429 lock_timeout without a key", method: "POST",
			answers: []rt.Step{stripe(429, "invalid_request_error", "lock_timeout"), ok}, attempts: 2, status: 200, wait: time.Second, pace: paced},
		{name: "409 lock_timeout without a key", method: "POST",
			answers: []rt.Step{stripe(409, "invalid_request_error", "lock_timeout"), ok}, attempts: 2, status: 200},
		{name: "409 conflict with a key", method: "POST", header: key,
			answers: []rt.Step{stripe(409, "idempotency_error", ""), ok}, attempts: 2, status: 200},
		{name: "409 conflict without a key", method: "POST",
			answers: []rt.Step{stripe(409, "invalid_request_error", "resource_already_exists"), ok}, attempts: 1, status: 409},
		{name: "429 rate_limit", method: "GET", answers: []rt.Step{stripe(429, "rate_limit_error", "rate_limit"), ok},
			attempts: 2, status: 200, wait: time.Second, pace: paced},
		{name: "429 with Retry-After", method: "POST", header: key,
			answers: []rt.Step{stripe(429, "rate_limit_error", "rate_limit", "Retry-After", "3"), ok}, attempts: 2, status: 200,
			wait: 3 * time.Second, pace: paceLift},
		{name: "402 card_declined", method: "POST", header: key, answers: []rt.Step{stripe(402, "card_error", "card_declined")},
			attempts: 1, status: 402},
		{name: "400 parameter_missing", method: "POST", header: key,
			answers: []rt.Step{stripe(400, "invalid_request_error", "parameter_missing")}, attempts: 1, status: 400},
		{name: "401", method: "GET", answers: []rt.Step{stripe(401, "invalid_request_error", "api_key_expired")}, attempts: 1, status: 401},
		{name: "404", method: "GET", answers: []rt.Step{stripe(404, "invalid_request_error", "resource_missing")}, attempts: 1, status: 404},
		{name: "connection reset with a key", method: "POST", header: key, answers: []rt.Step{{Fault: rt.Reset}, ok}, attempts: 2, status: 200},
		{name: "connection reset without a key", method: "POST", answers: []rt.Step{{Fault: rt.Reset}, ok}, attempts: 1},
		{name: "another host: not Stripe's rule", method: "GET", url: "https://files.stripe.com/v1/files",
			answers: []rt.Step{stripe(500, "api_error", ""), ok}, attempts: 1, status: 500},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if c.url == "" {
					c.url = charges
				}
				srv := &rt.Server{Script: c.answers}
				tr := &retryhttp.Transport{Base: srv, Policy: &policy.Config{Rules: []policy.Rule{stripeRule()}}}
				if resp := c.run(t, tr, srv); resp != nil {
					readAll(t, resp)
				}
				for _, a := range srv.Attempts() {
					assert.Equal(t, c.header.Get("Idempotency-Key"), a.Header.Get("Idempotency-Key"), "the same key on each attempt")
				}
			})
		})
	}
}
