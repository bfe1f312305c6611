package benchmarks

import (
	"context"
	"net/http"

	"github.com/hashicorp/go-retryablehttp"
)

// retryablehttpPeer is go-retryablehttp's RoundTripper. Its exponential
// backoff (DefaultBackoff) waits min*2^n capped at max, with no jitter and
// a multiplier fixed at 2; it reads Retry-After on 429 and 503 and sleeps
// it out whatever the deadline. It has no budget, and reads every request
// body whole before the first attempt.
func retryablehttpPeer() Peer {
	return Peer{
		Name:    "retryablehttp",
		Label:   "go-retryablehttp",
		Library: "go-retryablehttp",
		Caps:    Caps{Retries: true, Statuses: true, RetryAfter: true, Body: BodyWhole},
		Notes: []string{
			"CheckRetry: the spec's statuses, its own rules for errors; retries any method",
			"backoff: DefaultBackoff, min·2^n capped at max, no jitter",
			"final answer handed back (PassthroughErrorHandler) instead of its default error",
			"logger off; every give-up still closes its client's idle connections",
		},
		New: newRetryablehttp,
	}
}

func newRetryablehttp(s Spec, base http.RoundTripper) http.RoundTripper {
	c := retryablehttp.NewClient()
	if base != nil {
		c.HTTPClient = &http.Client{Transport: base}
	}
	c.Logger = nil
	c.RetryMax = s.MaxAttempts - 1
	c.RetryWaitMin, c.RetryWaitMax = s.InitialBackoff, s.MaxBackoff
	c.Backoff = retryablehttp.DefaultBackoff
	c.ErrorHandler = retryablehttp.PassthroughErrorHandler
	c.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if err != nil || ctx.Err() != nil {
			// Its own rules for errors: retry all but the caller's end,
			// bad schemes, redirects and certificate failures.
			return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
		}
		return s.Retries(resp.StatusCode), nil
	}
	return &retryablehttp.RoundTripper{Client: c}
}
