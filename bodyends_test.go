package retryhttp_test

import (
	"context"
	"errors"
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
)

// slowBody yields its bytes 1000 at a time, with a pause of a second
// before each Read past the first, and fails with err once it has given
// failAt bytes, when failAt > 0.
type slowBody struct {
	data   []byte
	off    int
	failAt int
	err    error
	closed int
}

func (s *slowBody) Read(p []byte) (int, error) {
	if s.failAt > 0 && s.off >= s.failAt {
		return 0, s.err
	}
	if s.off > 0 {
		time.Sleep(time.Second) // virtual time, under synctest
	}
	if s.off == len(s.data) {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1000)], s.data[s.off:])
	s.off += n
	return n, nil
}

func (s *slowBody) Close() error { s.closed++; return nil }

// readingBase reads each attempt's body whole, as a server that answers
// once it has it, then answers status; it closes the body as net/http
// does, and ends an attempt whose context ends first with its error.
func readingBase(status func(n int) int) roundTripFunc {
	n := 0
	return func(req *http.Request) (*http.Response, error) {
		n++
		k := n
		defer req.Body.Close()
		done := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, req.Body)
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				return nil, err
			}
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		return &http.Response{StatusCode: status(k), Body: http.NoBody, Header: http.Header{}}, nil
	}
}

// However a request with a streamed body ends, the room its buffer took
// comes back once no attempt reads the body any more, and the caller's
// body is closed once.
func TestBufferRoomComesBackHoweverTheRequestEnds(t *testing.T) {
	t.Parallel()
	errBroken := errors.New("broken pipe of the caller")
	retry := func(timeout time.Duration) *policy.Config {
		cfg := retryConfig(3, 503)
		cfg.Rules[0].Retry.PerAttemptTimeout = timeout
		return cfg
	}
	hedge := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
		Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 1500 * time.Millisecond}}}}
	tests := []struct {
		name     string
		cfg      *policy.Config
		status   func(n int) int
		cancelAt time.Duration // the caller cancels then; 0: never
		failAt   int
		prepare  func(n int, req *http.Request) error
		classify func(int, *http.Response, error) retryhttp.Verdict
		panics   bool
	}{
		{name: "success after a retry", cfg: retry(0), status: failFirst},
		{name: "caller cancels mid-upload", cfg: retry(0), status: ok, cancelAt: 3500 * time.Millisecond},
		{name: "per-attempt timeout mid-upload", cfg: retry(2500 * time.Millisecond), status: ok},
		{name: "caller body fails", cfg: retry(0), status: ok, failAt: 3000},
		{name: "hedges race", cfg: hedge, status: ok},
		{name: "hedges race, caller cancels", cfg: hedge, status: ok, cancelAt: 3500 * time.Millisecond},
		{name: "Prepare panics on the retry", cfg: retry(0), status: func(int) int { return 503 }, panics: true,
			prepare: func(n int, _ *http.Request) error {
				if n == 2 {
					panic("Prepare is broken")
				}
				return nil
			}},
		{name: "Classify panics", cfg: retry(0), status: ok, panics: true,
			classify: func(int, *http.Response, error) retryhttp.Verdict { panic("Classify is broken") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := &retryhttp.Transport{Base: readingBase(tc.status), Policy: tc.cfg,
					Prepare: tc.prepare, Classify: tc.classify}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tc.cancelAt > 0 {
					time.AfterFunc(tc.cancelAt, cancel)
				}
				body := &slowBody{data: []byte(strings.Repeat("x", 5000)), failAt: tc.failAt, err: errBroken}
				req, err := http.NewRequestWithContext(ctx, http.MethodPut, "https://api.test/up", body)
				require.NoError(t, err)
				func() {
					defer func() {
						assert.Equal(t, tc.panics, recover() != nil, "panicked")
					}()
					resp, err := tr.RoundTrip(req)
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}()
				synctest.Wait()
				time.Sleep(time.Minute) // any attempt still sending ends
				synctest.Wait()
				assert.Positive(t, tr.Stats().Buffer.HighWater, "room taken")
				assert.Zero(t, tr.Stats().Buffer.Buffered, "room held")
				assert.Equal(t, 1, body.closed, "caller's body closed")
			})
		})
	}
}

func ok(int) int { return 200 }

func failFirst(n int) int {
	if n == 1 {
		return 503
	}
	return 200
}
