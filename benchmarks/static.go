package benchmarks

import (
	"context"
	"io"
	"net/http"
	"time"
)

// The static retrying client's schedule: what a retry loop written by
// hand usually is, with nothing learned from the host.
const (
	// StaticAttempts counts every attempt, the first included.
	StaticAttempts = 3
	// StaticBackoff is the wait between two attempts, always the same.
	StaticBackoff = 100 * time.Millisecond
	// StaticAttemptTimeout bounds each attempt, so that three of them
	// and their waits fit in a 1 s deadline: an attempt that a slow host
	// has not answered by then is given up and sent again.
	StaticAttemptTimeout = 300 * time.Millisecond
)

// static is a retrying client with a fixed schedule and no feedback: up
// to StaticAttempts attempts, StaticBackoff apart, each cut at
// StaticAttemptTimeout; a 429, 502, 503 or 504, or any error but the
// caller's context ending, is retried. It reads no Retry-After and keeps
// no budget. It sends no request body again, so it is for GETs only.
type static struct{ base http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (s static) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	for n := 1; ; n++ {
		actx, cancel := context.WithTimeout(ctx, StaticAttemptTimeout)
		resp, err := s.base.RoundTrip(req.WithContext(actx))
		last := n == StaticAttempts || ctx.Err() != nil
		if err == nil && (last || !retried(resp.StatusCode)) {
			// The attempt's context lives until the answer is read.
			resp.Body = cancelOnClose{resp.Body, cancel}
			return resp, nil
		}
		cancel()
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if last {
			return nil, err
		}
		t := time.NewTimer(StaticBackoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

// retried reports whether the static client sends an answer with this
// status again: the statuses policy.Default retries.
func retried(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// cancelOnClose ends an attempt's context when its answer is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
