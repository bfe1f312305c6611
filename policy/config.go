package policy

import (
	"time"
)

// Config is a retry configuration in the shape of gRPC's service config,
// adapted to HTTP: a list of rules, the first matching one of which governs
// a request, and the protections that hold for every request: the retry
// throttle, holds, pacing and admission.
//
// Read one from JSON with [ParseConfig], or build it in Go and check it with
// [Config.Validate]. Throttle, Hold and Pace are switches: left nil, as in a
// JSON config that says nothing of them, each is [Default]'s, so that a
// first config written for a retry policy keeps the protection that the
// zero Transport had; each is turned off explicitly, by a value with Off
// set (in JSON, {"off": true}). The zero Config has no rules, so it
// retries and hedges nothing, but has Default's throttle, holds and pace;
// [None] turns them off too. Admission is off unless set.
//
// A Transport takes a deep copy of the Config it is given (see
// [Config.Clone]), at its first use and at SetPolicy: later edits to the
// Config change nothing. A Config only read is safe for concurrent use.
type Config struct {
	// Rules are tried in order; the first whose Name list matches a request
	// governs it. JSON: "methodConfig".
	Rules []Rule
	// Throttle limits retries and hedges per host (see [Throttle]). Nil
	// means Default's: 100 tokens, a token ratio of 0.25.
	// &Throttle{Off: true} turns the throttle off. JSON:
	// "retryThrottling", {"off": true} to turn it off.
	Throttle *Throttle
	// MaxServerDelay is the longest server-directed delay
	// (X-Retry-Pushback-Ms, Retry-After-Ms, x-amz-retry-after,
	// Retry-After, RateLimit, DelayHeaders) that is waited for; a longer one sends the response
	// back to the caller at once. Zero means [DefaultMaxServerDelay].
	// JSON: "maxServerDelay".
	MaxServerDelay time.Duration
	// DelayHeaders are further response headers in which a server gives
	// its delay before a retry, each with the format of its value. They
	// are read after the signals that are always read, in this order:
	// X-Retry-Pushback-Ms, Retry-After-Ms (milliseconds, as the LLM APIs
	// send it), x-amz-retry-after (milliseconds, as AWS sends it),
	// Retry-After, and the IETF RateLimit field when it says a
	// quota is spent (an item with r=0 and a t: the longest such t, in
	// seconds; a malformed field is ignored); then DelayHeaders in the
	// order listed. The first that is present and valid sets the wait,
	// which is then treated as Retry-After's is: not waited for when
	// longer than MaxServerDelay or past the request's deadline.
	// At most 16, names unique regardless of case; nil means none. JSON:
	// "serverDelayHeaders".
	DelayHeaders []DelayHeader
	// Hold turns holds on or off: while a response says that its host
	// will refuse requests for a while, the host's other requests of the
	// same rule wait, or fail at once, instead of each meeting the
	// refusal (see [Hold]). Nil means Default's: holds on. &Hold{Off:
	// true} turns them off. JSON: "hold", {} for on, {"off": true} for
	// off.
	Hold *Hold
	// Pace turns pacing on or off: a host that throttles the requests
	// of a rule is sent them no faster than the rate it takes (see
	// [Pace]). Nil means Default's: pacing on. &Pace{Off: true} turns it
	// off. JSON: "pace", {} for on, {"off": true} for off.
	Pace *Pace
	// Admission, when set, gives each host a concurrency limit that
	// adapts to its latency and losses (see [Admission]). Nil means none:
	// it is off unless asked for. JSON: "admission", as
	// {"maxConcurrency": 1000, "maxWait": "0.5s"}, both optional.
	Admission *Admission
}

// Hold is the switch, set in [Config.Hold], that turns holds on or off. A rate
// limit or an outage belongs to the host, not to the request that met it:
// a request that has just been refused tells the host's other requests
// that they would be refused too.
//
// A hold is set on a host (its URL host lowercased, port included) for
// the requests of the Config rule that the response's request matched, by
// a 429 or 503 with a server delay, by a RetryableUnprocessed or
// Throttled verdict (the caller's, an error code's, X-Should-Retry) with
// a wait, its own or else the server's delay (GitHub's secondary limit is
// a 403 with a Retry-After), or by rate-limit fields that say a quota is
// spent, on any status, a 200 included: the IETF RateLimit field with an
// item at r=0, or a [DelayHeader] whose Remaining reads 0. It lasts until the
// instant its response named, but at most [Config.MaxServerDelay] past
// that response, so that no server holds a host for longer than the
// policy would wait for it; a later hold extends it, an earlier one never
// shortens it. While it lasts no attempt under it is sent: a request's
// first attempt, and any retry, waits until it ends if that is within the
// request's deadline and MaxServerDelay, and otherwise fails at once,
// nothing sent, with the Transport's held error (a retry hands back its
// last response instead, as soon as it meets the hold, without waiting
// out its backoff first). Requests that waited go
// out spread over up to a tenth of the hold, at most 1s, not in one
// instant. When a hold cut to MaxServerDelay ends, one request goes
// first and the others wait for its answer, which may set the hold again;
// a request that cannot wait as long as that request may take (its
// deadline, at most MaxServerDelay) fails at once with the held error. The
// Transport's ResetBackoff ends a host's holds, a fleet's included, and
// wakes the requests waiting on them.
//
// The zero Hold, {} in JSON, turns holds on, as a nil Config.Hold does;
// Off turns them off. A struct leaves room for settings of holds to come
// without another switch.
type Hold struct {
	// Off, when true, turns holds off: no response holds the requests
	// that follow it. JSON: "off".
	Off bool
}

// DefaultMaxServerDelay is the longest server-directed delay waited for when
// [Config.MaxServerDelay] is zero.
const DefaultMaxServerDelay = 60 * time.Second

// DefaultJitter is the jitter of a [Retry] whose Jitter is zero, and of a
// JSON retryPolicy that leaves "jitter" out, as gRPC's current retry
// design uses: each wait is scaled by a factor drawn from [0.8, 1.2], so
// that clients that failed together do not retry together.
const DefaultJitter = 0.2

// Rule is one methodConfig entry: which requests it covers and what is done
// with them. At most one of Retry and Hedge is set; with neither, matching
// requests get only transparent retries.
type Rule struct {
	// Name lists the request patterns the rule covers. JSON: "name".
	Name []Name
	// Retry is the retry policy. JSON: "retryPolicy".
	Retry *Retry
	// Hedge is the hedging policy. JSON: "hedgingPolicy".
	Hedge *Hedge
	// ErrorCodes, when set, reads the API's own error code from each
	// answer of status 400 or above, and judges the answer by it before
	// the status lists do (see [ErrorCodes]). Nil means none. JSON:
	// "errorCodes".
	ErrorCodes *ErrorCodes
}

// Name is a request pattern. Each field that is set must match: Host
// case-insensitively against the URL host (the port is compared only when
// Host has one), Method exactly, and Path as a prefix ending on a segment
// boundary ("/v3" matches "/v3" and "/v3/x", not "/v30"). The zero Name
// matches every request. Validate refuses what could never match: a Host
// written as a URL (with a scheme, path, query or userinfo) or with a
// wildcard ("*.example.com": Host is a name, not a pattern), a Method that
// is not an HTTP token or is not in upper case ("get" for "GET"), a Path
// not starting with "/".
type Name struct {
	Host   string
	Method string
	Path   string
}

// Retry is gRPC's retry policy for HTTP.
//
// The waits between attempts come from Backoff when it is set, and
// otherwise from the four numeric fields InitialBackoff, MaxBackoff,
// BackoffMultiplier and Jitter; [Retry.Schedule] returns the one in force.
// The zero Retry is not valid: MaxAttempts must be at least 2, and
// without a Backoff, InitialBackoff above 0. A Transport copies the
// Retry of a Config it takes (see [Config.Clone]); a Retry in a rule given
// for one request is read as it is, and must not be modified while that
// request runs. A Retry only read is safe for concurrent use, as long as
// its Backoff is.
type Retry struct {
	// MaxAttempts counts the original request; at least 2. A figure
	// above [MaxRetryAttempts], 10, is taken as 10, as gRPC takes
	// anything above 5 as 5 (see [Retry.Attempts]): each attempt is load
	// on a host that is failing already, and a request that ten attempts
	// did not get through rarely gets through at the eleventh. It is a
	// bound, not an error, so that a service config written with a
	// larger figure, for gRPC or for another client, still loads, and
	// means what gRPC would make of it, only with room to spare: ten is
	// twice gRPC's bound, enough for Google's schedule of six attempts
	// ([GoogleAPI]) and for a table of waits a little longer.
	MaxAttempts int
	// Backoff, when set, gives the wait before each retry: any stateless
	// [Backoff], such as [Exponential], [FullJitter], [GoogleAPI] or
	// [Table], or the caller's own. It replaces the four numeric fields
	// below, which must then be zero. Nil means the [Exponential] those
	// fields describe. The package's own backoffs have their fields
	// checked by [Config.Validate]; a caller's own is used as it is, and
	// a negative wait it returns is taken as 0 by the transport. JSON:
	// "backoff".
	Backoff Backoff
	// InitialBackoff, MaxBackoff, BackoffMultiplier and Jitter define the
	// wait before retry n (n = 0 first) when Backoff is nil:
	// min(InitialBackoff*BackoffMultiplier^n, MaxBackoff) * (1 ± Jitter).
	// InitialBackoff > 0, MaxBackoff >= InitialBackoff,
	// BackoffMultiplier >= 1, Jitter in [0, 1].
	//
	// Jitter zero means [DefaultJitter], however the Retry was built: in
	// Go, and in JSON where "jitter" is left out (ParseConfig stores
	// DefaultJitter then). For waits with no jitter at all, set Backoff to
	// an [Exponential] with Jitter 0, which is taken literally. In JSON an
	// explicit "jitter": 0 says so, and ParseConfig reads it that way: as
	// that Exponential, in Backoff.
	InitialBackoff    time.Duration
	MaxBackoff        time.Duration
	BackoffMultiplier float64
	Jitter            float64
	// RetryableStatusCodes are the response statuses that are retried,
	// each in 100..599. A status below 400 may be listed but is never
	// retried: a redirect or an informational answer is the server's
	// answer, not its failure (see [Retry.Retryable]).
	RetryableStatusCodes []int
	// PerAttemptTimeout bounds each attempt until its response headers
	// arrive. Zero means no bound beyond the caller's own deadline.
	PerAttemptTimeout time.Duration
	// RetryNonIdempotent allows retrying methods that are not idempotent
	// (POST, PATCH, ...) even without an Idempotency-Key header.
	RetryNonIdempotent bool
	// ReadAhead, when above 0, has the body of an answer about to be
	// handed back (a success, or a status that is not retried) read
	// into memory, up to ReadAhead bytes, before RoundTrip returns, so
	// that a body that breaks off (a reset, a connection closed early) is
	// an attempt that failed, retried under the idempotency rules as a
	// reset before the headers would be, rather than an error the
	// caller meets while reading. The response handed back then reads
	// from memory. A body declared longer than ReadAhead is handed back
	// unread, and one that turns out longer as it is, its first
	// ReadAhead bytes read already. The read is bounded by the
	// attempt's context, not by PerAttemptTimeout, which ends with the
	// headers. When no further attempt follows a body that broke off,
	// the request fails with an error that wraps the read's. In bytes,
	// at most [MaxReadAhead]; 0 means none: the body is handed back
	// unread. JSON: "readAhead".
	ReadAhead int64
}

// MaxReadAhead bounds [Retry.ReadAhead], so that the bodies a Transport
// holds in memory for its requests stay bounded: 8 MiB each.
const MaxReadAhead = 8 << 20

// Hedge is gRPC's hedging policy for HTTP: several copies of a request are
// sent, staggered by HedgingDelay, and the first good answer wins. Only a
// request that may be sent twice is hedged; any other (a POST without an
// idempotency key) goes one attempt at a time, up to MaxAttempts, sent
// again only when the server says it did not act on it (a 429 or a
// pushback among NonFatalStatusCodes, X-Should-Retry: true).
type Hedge struct {
	// MaxAttempts counts the original request; at least 2. As in gRPC,
	// a value above 5 is taken as 5, since every attempt may be in
	// flight at once.
	MaxAttempts int
	// HedgingDelay is the wait before each next hedge. Zero sends all
	// attempts at once, unless MaxExtraLoad is set (see there).
	HedgingDelay time.Duration
	// HedgingDelayQuantile, when in (0, 1), replaces HedgingDelay by that
	// quantile of the recent latencies to the host, once enough are known.
	// Zero means a fixed delay.
	HedgingDelayQuantile float64
	// NonFatalStatusCodes are statuses that send the next hedge at once
	// instead of ending the request, each in 100..599. A status below 400
	// may be listed but is always fatal (see [Hedge.NonFatal]).
	NonFatalStatusCodes []int
	// MaxExtraLoad caps the hedges a host is sent at this fraction of the
	// requests sent to it, such as 0.02 for 2% more load, so that a delay
	// set too short (under the host's median, or a quantile the load has
	// shifted) cannot double its load. Each first attempt sent earns
	// MaxExtraLoad of a hedge and a hedge earns nothing: over any n
	// consecutive requests the host is sent at most MaxExtraLoad*n + 10
	// hedges, whatever sets the delay and with or without a [Throttle]. A
	// hedge the cap withholds is not sent, and is reported as refused; an
	// attempt that is not sent after all (its Prepare fails, or it cannot
	// get its body) gives back the hedge it took, or the share it earned.
	//
	// With a cap, a zero HedgingDelay and a zero HedgingDelayQuantile,
	// the delay follows the host's latency at the quantile that spends
	// the budget: at the start of the host's tail, so that when more
	// requests are slow than the budget pays for, the budget decides
	// which get a hedge.
	//
	// In [0, 1]; zero means no cap. JSON: "maxExtraLoad".
	MaxExtraLoad float64
}

// Throttle is gRPC's retry throttling, kept per host: a bucket starts with
// MaxTokens; each failed attempt takes 1 token, each success adds
// TokenRatio; while the bucket holds MaxTokens/2 or less, no retry or hedge
// starts. MaxTokens is in (0, 1000], TokenRatio in (0, 1].
//
// It is the switch set in [Config.Throttle]: &Throttle{Off: true}, or
// {"off": true} in JSON, turns the throttle off, with MaxTokens and
// TokenRatio left zero (setting either with Off is an error naming both).
// The zero Throttle is not valid.
type Throttle struct {
	// MaxTokens is the bucket's size, and what it holds at first. JSON:
	// "maxTokens".
	MaxTokens float64
	// TokenRatio is what each success adds to the bucket. JSON:
	// "tokenRatio".
	TokenRatio float64
	// Off, when true, turns the throttle off: retries and hedges are
	// not gated by a budget. JSON: "off".
	Off bool
}
