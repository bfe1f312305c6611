package retryhttp_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// eachClosed is a base that gives every response body a count of its
// own Close calls.
type eachClosed struct {
	srv    http.RoundTripper
	mu     sync.Mutex
	counts []*atomic.Int64
}

func (b *eachClosed) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.srv.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		n := new(atomic.Int64)
		b.mu.Lock()
		b.counts = append(b.counts, n)
		b.mu.Unlock()
		resp.Body = &closeCounter{ReadCloser: resp.Body, n: n}
	}
	return resp, err
}

// closes returns how often each response body was closed, in the order
// the answers came.
func (b *eachClosed) closes() []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []int64
	for _, n := range b.counts {
		out = append(out, n.Load())
	}
	return out
}

// TestEveryAnswerIsClosedOnce has the Transport discard answers every
// way it does: kept and dropped when the retry goes (at once, after a
// pushback of 0, or after a wait), a hedge's non-fatal answer while
// others fly, a hedge cut off mid-body by the winner, and the answers
// that come at the winner's instant, drained or, past the drain bound,
// closed unread. Each body is closed exactly once, the answer handed
// back by its caller.
func TestEveryAnswerIsClosedOnce(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // past the drain bound
	pushNow := hdr("X-Retry-Pushback-Ms", "0")
	stall := rt.Rate{Every: time.Hour} // a body that yields nothing more for an hour
	hedge := func(delay time.Duration) *policy.Config {
		return &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: delay, NonFatalStatusCodes: []int{503}}}}}
	}
	tests := []struct {
		name  string
		cfg   *policy.Config
		steps []rt.Step
		// some says the answers that come with the winner's may be cut
		// off before they are answers: as many bodies as came.
		some bool
	}{
		{"retried at once, short and long", retryConfig(3, 503), []rt.Step{
			{Status: 503, Header: pushNow, Body: "busy"}, {Status: 503, Header: pushNow, Body: long}, {Body: "ok"}}, false},
		{"kept through a wait, then dropped", retryConfig(3, 503), []rt.Step{
			{Status: 503, Body: "busy"}, {Status: 503, Body: long}, {Body: "ok"}}, false},
		{"hedges answered non-fatal", hedge(10 * time.Millisecond), []rt.Step{
			{Status: 503, Body: "busy"}, {Status: 503, Body: long}, {Body: "ok"}}, false},
		{"hedges answered with the winner", hedge(0), []rt.Step{
			{Delay: 10 * time.Millisecond, Body: "ok"}, {Delay: 10 * time.Millisecond, Status: 503, Body: "busy"},
			{Delay: 10 * time.Millisecond, Status: 503, Body: long}}, true},
		{"hedges cut off by the winner mid-body", hedge(10 * time.Millisecond), []rt.Step{
			{Status: 503, Body: "unavailable", Trickle: stall}, {Status: 503, Body: long, Trickle: stall},
			{Delay: 10 * time.Millisecond, Body: "ok"}}, false},
	}
	// Attempts 2 and 3 answer only once the winner, attempt 1, has cut
	// them off, as a base that does not heed its context may: their
	// answers are discarded as they come.
	late := func(body string) http.RoundTripper {
		var calls atomic.Int64
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if calls.Add(1) == 1 {
				return script(rt.Step{Delay: 10 * time.Millisecond, Body: "ok"}).RoundTrip(req)
			}
			<-req.Context().Done()
			return &http.Response{StatusCode: 503, Header: http.Header{}, Request: req, ContentLength: int64(len(body)),
				Body: io.NopCloser(strings.NewReader(body))}, nil
		})
	}
	for name, body := range map[string]string{"drained": "busy", "closed unread": long} {
		t.Run("an answer after the winner, "+name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &eachClosed{srv: late(body)}
				tr := &retryhttp.Transport{Base: base, Policy: hedge(0)}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				assert.Equal(t, "ok", readAll(t, resp))
				time.Sleep(time.Minute)
				synctest.Wait()
				assert.Equal(t, []int64{1, 1, 1}, base.closes(), "each answer closed once")
			})
		})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &eachClosed{srv: script(tt.steps...)}
				cfg := tt.cfg
				cfg.Throttle = &policy.Throttle{MaxTokens: 100, TokenRatio: 0.1}
				tr, _ := newScripted(cfg)
				tr.Base = base
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				assert.Equal(t, "ok", string(body))
				require.NoError(t, resp.Body.Close())
				time.Sleep(time.Minute) // every drain and cut-off attempt ends
				synctest.Wait()
				got := base.closes()
				if !tt.some {
					require.Len(t, got, 3)
				}
				for i, n := range got {
					assert.Equal(t, int64(1), n, "answer %d closed %d times", i+1, n)
				}
			})
		})
	}
}
