package retryhttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// The tests' server is the users' test kit, retryhttptest: its Server
// plays a script of replies and faults, in memory as a Transport's Base or
// on loopback, and records every attempt it receives.

// script returns a kit Server that plays steps, the last one repeating.
func script(steps ...rt.Step) *rt.Server { return &rt.Server{Script: steps} }

// newScripted returns a Transport whose base is a kit Server playing
// steps in memory, and the Server.
func newScripted(cfg *policy.Config, steps ...rt.Step) (*retryhttp.Transport, *rt.Server) {
	srv := script(steps...)
	return &retryhttp.Transport{Base: srv, Policy: cfg}, srv
}

// calls is a base that hands call n, counted from 1, to
// do[min(n, len(do))-1]: mostly a kit Server's RoundTrip, and otherwise
// what no server can be, such as a dial that fails (see fail) or an
// attempt that reads its body late. It counts the calls, and the response
// bodies closed.
type calls struct {
	do     []roundTripFunc
	n      atomic.Int64
	closed atomic.Int64
}

// newCalls returns a Transport whose base hands its calls to do in turn,
// and the base.
func newCalls(cfg *policy.Config, do ...roundTripFunc) (*retryhttp.Transport, *calls) {
	c := &calls{do: do}
	return &retryhttp.Transport{Base: c, Policy: cfg}, c
}

func (c *calls) RoundTrip(req *http.Request) (*http.Response, error) {
	n := int(c.n.Add(1))
	resp, err := c.do[min(n, len(c.do))-1](req)
	if resp != nil && resp.Body != nil {
		resp.Body = &closeCounter{ReadCloser: resp.Body, n: &c.closed}
	}
	return resp, err
}

// count returns the number of calls so far, failed or not.
func (c *calls) count() int { return int(c.n.Load()) }

// fail is a call that ends in err before any server sees it, as a dial
// that is refused: the request's body is closed unread.
func fail(err error) roundTripFunc {
	return func(req *http.Request) (*http.Response, error) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
}

// closeCounter is a response body that counts its Close calls in n.
type closeCounter struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *closeCounter) Close() error {
	c.n.Add(1)
	return c.ReadCloser.Close()
}

// arrivals returns when each attempt reached srv, counted from the first.
func arrivals(srv *rt.Server) []time.Duration {
	var at []time.Duration
	for _, a := range srv.Attempts() {
		at = append(at, a.At)
	}
	return at
}

// cancelled returns, for each attempt srv received, whether its request
// ended before srv had answered it.
func cancelled(srv *rt.Server) []bool {
	var c []bool
	for _, a := range srv.Attempts() {
		c = append(c, a.Cancelled)
	}
	return c
}

// hookLog records what a Transport's hooks report: a line for each call,
// in the order of the calls, and the waits and refusals themselves. It is
// safe for concurrent use, as hedges report from goroutines of their own.
type hookLog struct {
	mu       sync.Mutex
	events   []hookEvent
	waited   []retrytrace.WaitInfo
	refusals []retrytrace.RefusedInfo
}

// hookEvent is one call of a hook: its kind ("start", "done", "wait",
// "refused", "end") and its line.
type hookEvent struct{ kind, line string }

// hooks returns hooks that record into l, each line headed by tag unless
// it is empty.
func (l *hookLog) hooks(tag string) *retrytrace.Hooks {
	return &retrytrace.Hooks{
		AttemptStart: func(i retrytrace.AttemptStartInfo) { l.add(tag, "start", "%d hedge=%v", i.Attempt, i.Hedge) },
		AttemptDone: func(i retrytrace.AttemptDoneInfo) {
			l.add(tag, "done", "%d %s %d err=%v", i.Attempt, i.Outcome, i.StatusCode, i.Err)
		},
		Wait: func(i retrytrace.WaitInfo) {
			l.mu.Lock()
			l.waited = append(l.waited, i)
			l.mu.Unlock()
			l.add(tag, "wait", "%d %s %v", i.Attempt, i.Reason, i.Delay)
		},
		Refused: func(i retrytrace.RefusedInfo) {
			l.mu.Lock()
			l.refusals = append(l.refusals, i)
			l.mu.Unlock()
			l.add(tag, "refused", "%d %s", i.Attempt, i.Reason)
		},
		Done: func(i retrytrace.DoneInfo) { l.add(tag, "end", "%d %d err=%v", i.Attempts, i.StatusCode, i.Err) },
	}
}

func (l *hookLog) add(tag, kind, format string, a ...any) {
	line := kind + " " + fmt.Sprintf(format, a...)
	if tag != "" {
		line = tag + " " + line
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, hookEvent{kind, line})
}

// lines returns the lines recorded; only those of the kinds given, when
// there are any.
func (l *hookLog) lines(kinds ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		if len(kinds) == 0 || slices.Contains(kinds, e.kind) {
			out = append(out, e.line)
		}
	}
	return out
}

// waits returns the waits recorded.
func (l *hookLog) waits() []retrytrace.WaitInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]retrytrace.WaitInfo(nil), l.waited...)
}

// refused returns the refusals recorded.
func (l *hookLog) refused() []retrytrace.RefusedInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]retrytrace.RefusedInfo(nil), l.refusals...)
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

// wantRoomBack checks that the Transport's buffer gives its room back, as
// its contract says: once RoundTrip has returned and no attempt reads the
// body any more. An attempt's writer, on a socket, may still be sending
// when RoundTrip returns (the server answered early), so the room comes
// back soon after, not at once; it must come back within a few seconds.
func wantRoomBack(t *testing.T, tr *retryhttp.Transport, msgAndArgs ...any) {
	t.Helper()
	assert.Eventually(t, func() bool { return tr.Stats().Buffer.Buffered == 0 }, 10*time.Second, time.Millisecond, msgAndArgs...)
}
