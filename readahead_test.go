package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// readAheadConfig retries 503 up to 3 attempts and reads answers ahead up
// to n bytes.
func readAheadConfig(n int64) *policy.Config {
	cfg := retryConfig(3, 503)
	cfg.Rules[0].Retry.ReadAhead = n
	return cfg
}

// body is a reply body of n bytes, easy to tell from another.
func body(n int) string { return strings.Repeat("abcdefgh", n/8+1)[:n] }

// An answer whose body breaks off while it is read ahead is an attempt
// that failed: retried under the idempotency rules, its error handed back
// when no attempt follows. A body longer than the bound, or read without
// a read-ahead, goes back as it is, and the caller meets the break.
func TestReadAhead(t *testing.T) {
	whole := body(4 << 10)
	reset := rt.Step{Body: whole, Fault: rt.ResetMidBody, After: 1000}
	cut := rt.Step{Body: whole, Fault: rt.CloseMidBody, After: 3000}
	tests := []struct {
		name      string
		readAhead int64
		method    string
		nonIdem   bool
		first     rt.Step
		attempts  int
		wantErr   error // of RoundTrip when set, else of reading the body
		readErr   error
	}{
		{"reset mid-body, GET", 64 << 10, "GET", false, reset, 2, nil, nil},
		{"closed mid-body, GET", 64 << 10, "GET", false, cut, 2, nil, nil},
		{"a final status's body", 64 << 10, "GET", false, rt.Step{Status: 404, Body: whole, Fault: rt.ResetMidBody, After: 10}, 2, nil, nil},
		{"reset mid-body, POST", 64 << 10, "POST", false, reset, 1, syscall.ECONNRESET, nil},
		{"closed mid-body, POST", 64 << 10, "POST", false, cut, 1, io.ErrUnexpectedEOF, nil},
		{"reset mid-body, POST retried by the rule", 64 << 10, "POST", true, reset, 2, nil, nil},
		{"longer than the bound", 512, "GET", false, reset, 1, nil, syscall.ECONNRESET},
		{"break past the bound", 2000, "GET", false, cut, 1, nil, io.ErrUnexpectedEOF},
		{"no read-ahead", 0, "GET", false, reset, 1, nil, syscall.ECONNRESET},
		{"whole", 64 << 10, "GET", false, rt.Step{Body: whole}, 1, nil, nil},
		{"exactly the bound", int64(len(whole)), "GET", false, rt.Step{Body: whole}, 1, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := script(tc.first, rt.Step{Body: whole})
				cfg := readAheadConfig(tc.readAhead)
				cfg.Rules[0].Retry.RetryNonIdempotent = tc.nonIdem
				var log hookLog
				tr := &retryhttp.Transport{Base: srv, Policy: cfg, Hooks: log.hooks("")}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), tc.method, "payload"))
				assert.Len(t, srv.Attempts(), tc.attempts, "attempts")
				if tc.wantErr != nil {
					require.Nil(t, resp)
					require.ErrorIs(t, err, tc.wantErr)
					assert.ErrorContains(t, err, "response body broke off after")
					var rerr *retryhttp.Error
					require.ErrorAs(t, err, &rerr)
					assert.Equal(t, 1, rerr.Attempts)
					assert.Contains(t, log.lines("done"), "done 1 network 0 err="+rerr.Err.Error())
					return
				}
				require.NoError(t, err)
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if tc.readErr != nil {
					require.ErrorIs(t, err, tc.readErr, "the caller meets the break")
					assert.Equal(t, whole[:len(got)], string(got), "the bytes before it, read ahead or not")
					return
				}
				require.NoError(t, err)
				assert.Equal(t, whole, string(got))
				if tc.attempts == 2 {
					assert.Equal(t, 200, resp.StatusCode)
					assert.Equal(t, "done 1 network 0", log.lines("done")[0][:len("done 1 network 0")])
				}
			})
		})
	}
}

// A body read ahead whole is read from memory: the base's body has been
// read to its end, and closed, before RoundTrip returns, freeing its
// connection; the caller's reads and Close touch it no more.
func TestReadAheadFromMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Body: body(100)})
		var base *trackedReads
		tr := &retryhttp.Transport{Policy: readAheadConfig(1 << 20), Base: roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := srv.RoundTrip(req)
			if err == nil {
				base = &trackedReads{ReadCloser: resp.Body}
				resp.Body = base
			}
			return resp, err
		})}
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		require.NotNil(t, base)
		assert.True(t, base.eof, "read to its end before RoundTrip returned")
		reads := base.reads
		assert.Equal(t, body(100), readAll(t, resp))
		assert.Equal(t, reads, base.reads, "the caller reads from memory")
	})
}

// A body declared longer than the bound is handed back unread; one of
// unknown length that turns out longer, with its first bytes read.
func TestReadAheadOfALongBody(t *testing.T) {
	for _, declared := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			srv := script(rt.Step{Body: body(100)})
			var base *trackedReads
			tr := &retryhttp.Transport{Policy: readAheadConfig(99), Base: roundTripFunc(func(req *http.Request) (*http.Response, error) {
				resp, err := srv.RoundTrip(req)
				if err == nil {
					base = &trackedReads{ReadCloser: resp.Body}
					resp.Body = base
					if !declared {
						resp.ContentLength = -1
					}
				}
				return resp, err
			})}
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			if declared {
				assert.Zero(t, base.reads, "not read ahead")
			} else {
				assert.NotZero(t, base.reads, "read ahead")
				assert.False(t, base.eof, "to the bound, not to its end")
			}
			assert.Equal(t, body(100), readAll(t, resp))
		})
	}
}

// trackedReads is a body that counts its reads and notes its end.
type trackedReads struct {
	io.ReadCloser
	reads int
	eof   bool
}

func (b *trackedReads) Read(p []byte) (int, error) {
	b.reads++
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// A read-ahead is bounded by the caller's context: a body that trickles
// past the deadline goes back at the deadline, and the caller meets the
// deadline reading it. It is not bounded by the per-attempt timeout, which
// ends with the headers.
func TestReadAheadWithinTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Body: body(100), Trickle: rt.Rate{Bytes: 10, Every: time.Second}})
		cfg := readAheadConfig(1 << 20)
		cfg.Rules[0].Retry.PerAttemptTimeout = 500 * time.Millisecond
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		ctx, cancel := context.WithTimeout(t.Context(), 5500*time.Millisecond)
		defer cancel()
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, 5500*time.Millisecond, time.Since(start), "the read-ahead goes on until the deadline")
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
		assert.Equal(t, body(50), string(got))
		assert.Len(t, srv.Attempts(), 1)

		srv = script(rt.Step{Body: body(100), Trickle: rt.Rate{Bytes: 10, Every: time.Second}})
		tr = &retryhttp.Transport{Base: srv, Policy: cfg}
		resp, err = tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		assert.Equal(t, body(100), readAll(t, resp), "past the per-attempt timeout")
	})
}

// Over loopback, the body a real connection loses mid-way is retried, and
// the caller gets the whole of the next.
func TestReadAheadOnLoopback(t *testing.T) {
	whole := body(32 << 10)
	srv := script(rt.Step{Body: whole, Fault: rt.ResetMidBody, After: 1 << 10}, rt.Step{Body: whole})
	hs := srv.Start(t)
	tr := &retryhttp.Transport{Policy: readAheadConfig(1 << 20)}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(t.Context(), "GET", hs.URL, nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, whole, readAll(t, resp))
	assert.Equal(t, "1", resp.Header.Get(retryhttp.AttemptsHeader))
}
