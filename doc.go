// Package retryhttp is an [http.RoundTripper] that makes any [http.Client]
// survive flaky, overloaded and slow servers without making their trouble
// worse: it retries or hedges requests by policy, replays request bodies
// from a bounded buffer, obeys the server's Retry-After, pushback and
// rate-limit headers, and gates every extra attempt through a per-host
// token budget, so that an outage never becomes a retry storm. It follows
// gRPC's retry design (retry and hedging policies, throttling, pushback,
// transparent retries), for HTTP.
//
// # Start here
//
// The zero [Transport] is ready to use:
//
//	client := &http.Client{
//		Transport: &retryhttp.Transport{},
//		Timeout:   30 * time.Second, // bounds the whole chain of attempts
//	}
//	resp, err := client.Get("https://api.example.com/v3/items")
//
// By default ([policy.Default]) a request gets up to 3 attempts when the
// answer is a 429, 502, 503 or 504, or the connection fails, waiting
// 100 ms then 200 ms (±20%), or what the server's Retry-After says, up to a
// minute. Only requests that are safe to send twice are retried after
// they may have reached the server: GET, HEAD, OPTIONS, TRACE, PUT,
// DELETE, and any request carrying an Idempotency-Key or X-Idempotency-Key
// header (as net/http reads them: present, even with no value). A plain POST
// or PATCH is sent once, unless the server says it did not act on it (a
// 429, X-Retry-Pushback-Ms, X-Should-Retry: true or Stripe-Should-Retry:
// true) or the attempt provably
// never reached it (a refused connection), or the rule says
// retryNonIdempotent. A per-host budget stops retries to a host that fails
// more than it answers; a host that is down is dialled with gRPC's
// connection backoff, and calls to it fail as fast as the policy allows.
//
// # Rate limits are the host's
//
// A response that says its host will refuse for a while (a 429 or 503
// with Retry-After, a spent quota in its rate-limit fields, a verdict
// RetryableUnprocessed.After(d)) holds the host for every request of the
// same rule, not only its own: while the hold lasts nothing under it is
// sent; a request waits for its end within its deadline and
// maxServerDelay, or fails at once with an error matching [ErrHeld], its
// [*HoldError] giving the host, the time left and the status. A hold lasts
// at most maxServerDelay past the answer that set it. Holds are on in
// policy.Default and in any Config that does not turn them off
// ([policy.Config.Hold]). [Transport.Fleet] shares them, and the retry
// budget, with the other processes of a fleet.
//
// # Send no more than the host takes
//
// From a host's first throttle on (a 429, a 503 with a delay, a
// [Throttled] verdict), its requests of the rule are paced: each attempt
// takes a send slot at a rate the throttles cut and that grows back while
// none comes, or that the host's RateLimit fields set; an attempt whose
// slot is past its deadline fails at once with [ErrPaced] ([policy.Pace],
// on by default). With [policy.Config.Admission], each host also gets a
// concurrency limit that follows its latency and losses, so that a host
// that slows down can recover; an attempt that gets no slot in time fails
// with [ErrShed]. [Transport.ResetBackoff] tells the Transport a host is
// back: its holds, pace and limit end.
//
// # Configuration
//
// A [policy.Config], built in Go or read from gRPC's service-config JSON
// with [policy.ParseConfig], says which requests are retried or hedged and
// how; set it as [Transport.Policy], or swap it at run time with
// [Transport.SetPolicy]. A Config that says nothing of the retry throttle,
// holds or the pace has policy.Default's; each is turned off explicitly.
// Errors
// name the field and the value, in Go's words for a Config built in Go and
// in JSON's for one read from JSON. The Transport takes its own copy of
// the Config, so that later edits to it change nothing.
//
// # The caller steers
//
// An SDK that wraps a REST API knows what no status list says. Its rule
// can declare the API's error table as data ([policy.ErrorCodes]: where
// the API puts its error code, in a JSON or XML body or a header, and
// which codes are retried, throttles, unprocessed or final), and ask that
// an answer's body be read before it is handed back, so that a body cut
// mid-read is retried ([policy.Retry.ReadAhead]). Beyond data,
// [Transport.Classify] gives a [Verdict] on each attempt's outcome
// (Retryable, RetryableUnprocessed, Throttled, Final, or UsePolicy), and
// may ask for its own wait with [Verdict.After]; [PeekBody] reads a
// response's body without consuming it. An answer is judged by the
// classifier first, then the rule's error codes, then the server's own
// X-Should-Retry or Stripe-Should-Retry, then the rule's status lists.
// [Transport.Prepare] prepares each attempt's request just before it is
// sent (a fresh signature or token, the attempt number an API asks for).
// [WithPolicy], [WithoutRetries], [WithWaitForReady] and [WithPrepare]
// steer one request through its context.
//
// # Errors
//
// RoundTrip honours the [http.RoundTripper] contract: a final response,
// whatever its status, comes back with a nil error. When no response was
// obtained the error is an [*Error] that carries the number of attempts
// and wraps the last cause (errors.Is and errors.As see through it), and
// matches [ErrNoResponse]; one refused before anything was sent matches
// [ErrHeld], [ErrPaced] or [ErrShed] too, and dial.ErrBackoff marks a
// dial refused inside its address's backoff window.
//
// # Testing
//
// The package retryhttptest scripts a faulty server, in memory as a
// Transport's Base or on loopback, and records every attempt. Run tests
// in testing/synctest, where a Retry-After of 30 s passes in virtual time.
// A rule that names a host matches a request by its URL's host: against
// an httptest server, whose URL is 127.0.0.1:port, name that host and
// port, or use a rule without a host; the in-memory Server answers any
// host, so a test can send to the real API's host name through it.
//
// # Observability
//
// [Transport.Stats] gives counters per rule and per host, and what each
// host holds now (budget, holds, pace, limit, latencies), publishable with
// expvar in one line (see [Stats]). Package retrytrace has the hooks that
// report each attempt, wait and refusal, in the style of
// net/http/httptrace (retrytrace.LogHooks logs them with log/slog);
// package status serves an operator's page of the Transport's live state,
// as HTML and JSON, mounted as net/http/pprof is; package dial has the
// Dialer with gRPC's connection backoff that a zero Transport dials
// through. The nested module github.com/retryhttp/retryhttp/otel turns the
// hooks into OpenTelemetry metrics and spans.
package retryhttp
