package retryhttp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/stretchr/testify/require"
)

// script is a scripted server behind an httpmock transport: call i gets
// steps[min(i, len-1)]. It records every request it sees.
type script struct {
	mu     sync.Mutex
	seen   []*http.Request
	bodies []string
	steps  []step
	closed atomic.Int64 // response bodies closed
}

// step is one scripted answer: a status with headers, or an error.
type step struct {
	status int
	header http.Header
	body   string
	err    error
}

func (s *script) responder(req *http.Request) (*http.Response, error) {
	var body string
	if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		body = string(b)
	}
	s.mu.Lock()
	i := len(s.seen)
	s.seen = append(s.seen, req)
	s.bodies = append(s.bodies, body)
	st := s.steps[min(i, len(s.steps)-1)]
	s.mu.Unlock()
	if st.err != nil {
		return nil, st.err
	}
	resp := httpmock.NewStringResponse(st.status, st.body)
	for k, v := range st.header {
		resp.Header[k] = v
	}
	resp.Body = &closeCounter{ReadCloser: resp.Body, n: &s.closed}
	return resp, nil
}

func (s *script) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func (s *script) header(i int, key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[i].Header.Get(key)
}

type closeCounter struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *closeCounter) Close() error {
	c.n.Add(1)
	return c.ReadCloser.Close()
}

// newScripted returns a Transport whose base answers every request to
// https://api.test/ by the script.
func newScripted(t *testing.T, cfg *policy.Config, steps ...step) (*retryhttp.Transport, *script) {
	t.Helper()
	s := &script{steps: steps}
	mt := httpmock.NewMockTransport()
	mt.RegisterNoResponder(s.responder)
	return &retryhttp.Transport{Base: mt, Policy: cfg}, s
}

// retryConfig is a config with one retry rule for every request, whose
// waits double from 100 ms to 1 s with no jitter, so that tests can state
// them exactly.
func retryConfig(maxAttempts int, codes ...int) *policy.Config {
	cfg := &policy.Config{Rules: []policy.Rule{{
		Name:  []policy.Name{{}},
		Retry: &policy.Retry{MaxAttempts: maxAttempts, RetryableStatusCodes: codes},
	}}}
	return withWaits(cfg, 100*time.Millisecond, time.Second)
}

// withWaits makes the first rule of cfg wait from initial, doubling up to
// max, with no jitter.
func withWaits(cfg *policy.Config, initial, max time.Duration) *policy.Config {
	cfg.Rules[0].Retry.Backoff = policy.Exponential{Initial: initial, Max: max, Multiplier: 2}
	return cfg
}

func newRequest(t *testing.T, ctx context.Context, method, body string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "https://api.test/v1/items", rd)
	require.NoError(t, err)
	return req
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return string(b)
}
