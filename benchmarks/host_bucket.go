package benchmarks

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// HostLatency is how long the rate-limited and the failing hosts take
// over every answer, a refusal included: an API answering in 10 ms.
const HostLatency = 10 * time.Millisecond

// Signal is what a [BucketHost] says when it refuses an attempt.
type Signal int

const (
	// SignalRetryAfter answers 429 with "Retry-After: 1".
	SignalRetryAfter Signal = iota
	// SignalRateLimit answers 429, and puts the IETF fields
	// (draft-ietf-httpapi-ratelimit-headers-10) on every answer, 2xx and
	// 429 alike: `RateLimit-Policy: "default";q=<rate>;w=1` and
	// `RateLimit: "default";r=<remaining>;t=<reset>`, r being the whole
	// tokens left after this attempt and t the seconds, rounded up, until
	// the bucket is full again (0 when it is): the time after which the
	// whole quota is back.
	SignalRateLimit
	// SignalBare answers 429 and nothing else.
	SignalBare
)

// String names s in benchmark names.
func (s Signal) String() string {
	switch s {
	case SignalRetryAfter:
		return "retry-after"
	case SignalRateLimit:
		return "ratelimit"
	case SignalBare:
		return "bare"
	}
	return fmt.Sprintf("Signal(%d)", int(s))
}

// BucketHost is a host behind a rate limit that every client shares: a
// token bucket refilled at Rate per second up to Burst tokens, full at
// the start. An attempt that finds a whole token takes it and is answered
// 200; any other is answered 429, saying so as its Signal says. Every
// answer comes [HostLatency] after the attempt arrives. The bucket is
// read when the attempt arrives, so that an attempt whose caller gives up
// has spent its token all the same.
type BucketHost struct {
	ledger
	per    time.Duration // the time one token takes to come
	full   time.Duration // the time a whole burst takes
	signal Signal
	policy string // the RateLimit-Policy field, for SignalRateLimit

	// The bucket counts in time, in whole nanoseconds, so that tokens
	// arriving at exact intervals are whole when they should be: tokens
	// summed in floating point come a step late now and then. Guarded by
	// ledger.mu.
	credit time.Duration // the tokens held, as the time they took to come, at most full
	last   time.Time
}

// NewBucketHost returns a BucketHost refilled at rate tokens per second
// up to burst, full, that refuses with signal. Both must be positive.
func NewBucketHost(rate, burst float64, signal Signal) *BucketHost {
	per := time.Duration(float64(time.Second) / rate)
	h := &BucketHost{ledger: newLedger(), per: per, full: time.Duration(float64(per) * burst),
		signal: signal, policy: fmt.Sprintf(`"default";q=%d;w=1`, int(math.Round(rate)))}
	h.credit, h.last = h.full, h.start
	return h
}

// RoundTrip implements http.RoundTripper.
func (h *BucketHost) RoundTrip(req *http.Request) (*http.Response, error) {
	now := time.Now()
	h.mu.Lock()
	h.credit = min(h.full, h.credit+now.Sub(h.last))
	h.last = now
	status := http.StatusTooManyRequests
	if h.credit >= h.per {
		h.credit -= h.per
		status = http.StatusOK
	}
	credit := h.credit
	h.record(req, now, now.Add(HostLatency), status)
	h.mu.Unlock()
	return reply(req, now, now.Add(HostLatency), status, h.header(status, credit))
}

// header is the answer's header under h's signal, credit being what the
// bucket holds after the attempt.
func (h *BucketHost) header(status int, credit time.Duration) http.Header {
	switch {
	case h.signal == SignalRateLimit:
		reset := (h.full - credit + time.Second - 1) / time.Second // rounded up
		return http.Header{
			"Ratelimit-Policy": {h.policy},
			"Ratelimit": {`"default";r=` + strconv.FormatInt(int64(credit/h.per), 10) +
				";t=" + strconv.FormatInt(int64(reset), 10)},
		}
	case h.signal == SignalRetryAfter && status == http.StatusTooManyRequests:
		return http.Header{"Retry-After": {"1"}}
	}
	return nil
}
