package retryhttp_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// awsRule is the AWS SDKs' standard retry mode as one rule: three
// attempts on a full-jitter backoff; 5xx, and the SDKs' throttle and
// transient error codes, read from X-Amzn-ErrorType, a JSON __type
// ("prefix#Code") or an XML Error/Code; every operation retried, as the
// SDKs retry them; and answers read ahead, so that a body cut mid-read is
// retried too. x-amz-retry-after is read by default.
func awsRule() policy.Rule {
	return policy.Rule{
		Name: []policy.Name{{}}, // every request of the SDK's own Transport
		Retry: &policy.Retry{MaxAttempts: 3, RetryNonIdempotent: true, ReadAhead: 1 << 20,
			Backoff:              policy.FullJitter{Initial: time.Second, Max: 20 * time.Second, Multiplier: 2},
			RetryableStatusCodes: []int{500, 502, 503, 504}},
		ErrorCodes: &policy.ErrorCodes{Header: "X-Amzn-ErrorType", JSON: "__type", XML: "Error/Code",
			Retryable: []string{"RequestTimeout", "RequestTimeoutException"},
			Throttled: []string{"Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
				"TooManyRequestsException", "ProvisionedThroughputExceededException", "TransactionInProgressException",
				"RequestLimitExceeded", "BandwidthLimitExceeded", "LimitExceededException", "RequestThrottled",
				"SlowDown", "PriorRequestNotComplete", "EC2ThrottledException"}},
	}
}

// awsPrepare does to each attempt what the AWS SDKs do: numbers it, and
// signs it as it is sent (the date here stands in for SigV4's signature,
// which covers it).
func awsPrepare(attempt int, req *http.Request) error {
	req.Header.Set("Amz-Sdk-Request", fmt.Sprintf("attempt=%d; max=3", attempt))
	req.Header.Set("X-Amz-Date", time.Now().UTC().Format("20060102T150405Z"))
	return nil
}

// awsTransport is an AWS SDK's Transport: the rule, each attempt
// prepared, and room to replay an upload of up to 8 MiB that has no
// GetBody (the default buffer keeps 1 MiB).
func awsTransport(base http.RoundTripper) *retryhttp.Transport {
	return &retryhttp.Transport{Base: base, Policy: &policy.Config{Rules: []policy.Rule{awsRule()}},
		Prepare: awsPrepare, Buffer: retryhttp.BufferLimits{PerRequest: 8 << 20}}
}

// An AWS SDK's retries as one rule: DynamoDB's throttles in 400s, S3's
// SlowDown in a 503, x-amz-retry-after, a body cut mid-read, a 2 MiB
// upload replayed. Each case is answered as AWS answers, then 200, by a
// server in memory; the waits are real, so the cases run side by side.
func Example_aws() {
	const dynamo, s3 = "https://dynamodb.us-east-1.amazonaws.com/", "https://bucket.s3.amazonaws.com/key"
	object := strings.Repeat("x", 64<<10)
	cases := []struct {
		name, method, url string
		upload            int // bytes of request body, sent without GetBody
		first             retryhttptest.Step
	}{
		{"DynamoDB ProvisionedThroughputExceededException", "POST", dynamo, 0, retryhttptest.Step{Status: 400,
			Body: `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"Rate exceeded"}`}},
		{"DynamoDB ThrottlingException header", "POST", dynamo, 0, retryhttptest.Step{Status: 400,
			Header: http.Header{"X-Amzn-Errortype": {"ThrottlingException:http://internal.amazon.com/coral/"}}}},
		{"DynamoDB ValidationException", "POST", dynamo, 0, retryhttptest.Step{Status: 400,
			Body: `{"__type":"com.amazon.coral.validate#ValidationException","message":"bad key"}`}},
		{"S3 SlowDown", "GET", s3, 0, retryhttptest.Step{Status: 503,
			Body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`}},
		{"S3 x-amz-retry-after: 300", "GET", s3, 0, retryhttptest.Step{Status: 503, Header: http.Header{"X-Amz-Retry-After": {"300"}}}},
		{"S3 body cut mid-read", "GET", s3, 0, retryhttptest.Step{Body: object, Fault: retryhttptest.ResetMidBody, After: 1000}},
		{"S3 2 MiB upload, 500 InternalError", "PUT", s3, 2 << 20, retryhttptest.Step{Status: 500,
			Body: `<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>`}},
	}
	lines := make([]string, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Go(func() {
			srv := &retryhttptest.Server{Script: []retryhttptest.Step{c.first, {Body: object}}}
			var body io.Reader
			if c.upload > 0 {
				body = io.LimitReader(zeros{}, int64(c.upload)) // no GetBody: replayed from the buffer
			}
			req, _ := http.NewRequest(c.method, c.url, body)
			resp, err := awsTransport(srv).RoundTrip(req)
			if err != nil {
				lines[i] = err.Error()
				return
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			at := srv.Attempts()
			last := at[len(at)-1]
			lines[i] = fmt.Sprintf("%s: %d after %d attempt(s), %s", c.name, resp.StatusCode, len(at), last.Header.Get("Amz-Sdk-Request"))
			switch {
			case err != nil:
				lines[i] += ", " + err.Error()
			case c.first.Fault != 0:
				lines[i] += fmt.Sprintf(", body whole: %v", string(got) == object)
			case c.upload > 0:
				lines[i] += fmt.Sprintf(", %d bytes each", last.BodySize)
			case c.first.Header.Get("X-Amz-Retry-After") != "":
				lines[i] += fmt.Sprintf(", waited at least 300ms: %v", last.At >= 300*time.Millisecond)
			}
		})
	}
	wg.Wait()
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// DynamoDB ProvisionedThroughputExceededException: 200 after 2 attempt(s), attempt=2; max=3
	// DynamoDB ThrottlingException header: 200 after 2 attempt(s), attempt=2; max=3
	// DynamoDB ValidationException: 400 after 1 attempt(s), attempt=1; max=3
	// S3 SlowDown: 200 after 2 attempt(s), attempt=2; max=3
	// S3 x-amz-retry-after: 300: 200 after 2 attempt(s), attempt=2; max=3, waited at least 300ms: true
	// S3 body cut mid-read: 200 after 2 attempt(s), attempt=2; max=3, body whole: true
	// S3 2 MiB upload, 500 InternalError: 200 after 2 attempt(s), attempt=2; max=3, 2097152 bytes each
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// stripeRule is Stripe's documented rules as one rule: 409, 429 and 5xx
// retried on a backoff, a POST only when it carries an Idempotency-Key;
// a lock_timeout (a 429, or a 409) was not processed, and is retried
// whatever the method. Stripe-Should-Retry and Retry-After are read by
// default, and speak before the status lists.
func stripeRule() policy.Rule {
	return policy.Rule{
		Name: []policy.Name{{Host: "api.stripe.com"}},
		Retry: &policy.Retry{MaxAttempts: 3, // Stripe's libraries retry twice
			Backoff:              policy.Exponential{Initial: 500 * time.Millisecond, Max: 5 * time.Second, Multiplier: 2, Jitter: 0.25},
			RetryableStatusCodes: []int{409, 429, 500, 502, 503, 504}},
		ErrorCodes: &policy.ErrorCodes{JSON: "error.code", Unprocessed: []string{"lock_timeout"}},
	}
}

// stripeError is Stripe's error body with the given type and code.
func stripeError(typ, code string) string {
	return fmt.Sprintf(`{"error": {"type": %q, "code": %q, "message": "as Stripe says"}}`, typ, code)
}

// A Stripe SDK's retries as one rule: each case is answered as Stripe
// answers, then 200, by a server in memory; the waits are real, so the
// cases run side by side.
func Example_stripe() {
	cases := []struct {
		name  string
		key   string // the Idempotency-Key the caller sets, if any
		first retryhttptest.Step
	}{
		{"500, with an Idempotency-Key", "k1", retryhttptest.Step{Status: 500, Body: stripeError("api_error", "")}},
		{"500, without one", "", retryhttptest.Step{Status: 500, Body: stripeError("api_error", "")}},
		{"500, Stripe-Should-Retry: true", "", retryhttptest.Step{Status: 500, Header: http.Header{"Stripe-Should-Retry": {"true"}}}},
		{"503, Stripe-Should-Retry: false", "k2", retryhttptest.Step{Status: 503, Header: http.Header{"Stripe-Should-Retry": {"false"}}}},
		{"429 lock_timeout, without a key", "", retryhttptest.Step{Status: 429, Body: stripeError("invalid_request_error", "lock_timeout")}},
		{"409 lock_timeout, without a key", "", retryhttptest.Step{Status: 409, Body: stripeError("invalid_request_error", "lock_timeout")}},
		{"409 idempotency conflict, with a key", "k3", retryhttptest.Step{Status: 409, Body: stripeError("idempotency_error", "")}},
		{"402 card_declined", "k4", retryhttptest.Step{Status: 402, Body: stripeError("card_error", "card_declined")}},
	}
	lines := make([]string, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Go(func() {
			srv := &retryhttptest.Server{Script: []retryhttptest.Step{c.first, {Body: `{"id": "ch_1"}`}}}
			tr := &retryhttp.Transport{Base: srv, Policy: &policy.Config{Rules: []policy.Rule{stripeRule()}}}
			req, _ := http.NewRequest("POST", "https://api.stripe.com/v1/charges", strings.NewReader("amount=2000&currency=usd"))
			if c.key != "" {
				req.Header.Set("Idempotency-Key", c.key)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				lines[i] = err.Error()
				return
			}
			resp.Body.Close()
			lines[i] = fmt.Sprintf("%s: %d after %d attempt(s)", c.name, resp.StatusCode, len(srv.Attempts()))
		})
	}
	wg.Wait()
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// 500, with an Idempotency-Key: 200 after 2 attempt(s)
	// 500, without one: 500 after 1 attempt(s)
	// 500, Stripe-Should-Retry: true: 200 after 2 attempt(s)
	// 503, Stripe-Should-Retry: false: 503 after 1 attempt(s)
	// 429 lock_timeout, without a key: 200 after 2 attempt(s)
	// 409 lock_timeout, without a key: 200 after 2 attempt(s)
	// 409 idempotency conflict, with a key: 200 after 2 attempt(s)
	// 402 card_declined: 402 after 1 attempt(s)
}
