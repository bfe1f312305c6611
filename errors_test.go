package retryhttp_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
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

var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

// refuse fails as a dial to a closed port does: the request never left.
func refuse(req *http.Request) (*http.Response, error) { return fail(errRefused)(req) }

func TestTransparentRetryForAnyMethod(t *testing.T) {
	for _, cfg := range []*policy.Config{
		retryConfig(3, 503),
		{Rules: []policy.Rule{{Name: []policy.Name{{Path: "/elsewhere"}}, Retry: retryConfig(3).Rules[0].Retry}}},
		{},
	} {
		srv := script(rt.Step{Status: 201, Body: "made"})
		tr, base := newCalls(cfg, refuse, srv.RoundTrip)
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "POST", "payload"))
		require.NoError(t, err)
		assert.Equal(t, "made", readAll(t, resp))
		assert.Equal(t, 2, base.count())
		srv.WantBody(t, "payload") // the resend, the one call that was sent
		assert.Empty(t, resp.Header.Get(retryhttp.AttemptsHeader), "a transparent retry spends no attempt")
	}
}

func TestTransparentRetryOnlyOnce(t *testing.T) {
	tr, base := newCalls(&policy.Config{}, refuse)
	_, err := tr.RoundTrip(newRequest(t, t.Context(), "POST", "payload"))
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Equal(t, 2, base.count())
}

func TestNetworkErrorRetriedOnlyWhenIdempotent(t *testing.T) {
	for method, want := range map[string]int{"GET": 3, "PUT": 3, "POST": 1} {
		t.Run(method, func(t *testing.T) {
			cfg := retryConfig(3, 503)
			withWaits(cfg, time.Microsecond, time.Microsecond)
			tr, base := newCalls(cfg, fail(io.ErrUnexpectedEOF))
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), method, "x"))
			assert.Nil(t, resp)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			var rerr *retryhttp.Error
			require.ErrorAs(t, err, &rerr)
			assert.Equal(t, want, rerr.Attempts)
			assert.Equal(t, want, base.count())
		})
	}
}

func TestConnectionResetOverASocket(t *testing.T) {
	cfg := retryConfig(3, 503)
	withWaits(cfg, time.Microsecond, time.Microsecond)
	// The server reads the first request whole, then drops the
	// connection with a reset.
	resetFirst := func() *rt.Server { return script(rt.Step{Fault: rt.Reset}, rt.Step{Body: "second"}) }
	t.Run("GET is retried", func(t *testing.T) {
		srv := resetFirst()
		c := &http.Client{Transport: &retryhttp.Transport{Base: freshBase(t), Policy: cfg}}
		resp, err := c.Get(srv.Start(t).URL)
		require.NoError(t, err)
		assert.Equal(t, "second", readAll(t, resp))
		srv.WantAttempts(t, 2)
	})
	t.Run("POST is not", func(t *testing.T) {
		srv := resetFirst()
		c := &http.Client{Transport: &retryhttp.Transport{Base: freshBase(t), Policy: cfg}}
		_, err := c.Post(srv.Start(t).URL, "text/plain", strings.NewReader("once"))
		var rerr *retryhttp.Error
		require.ErrorAs(t, err, &rerr)
		assert.Equal(t, 1, rerr.Attempts)
		srv.WantAttempts(t, 1)
		srv.WantBody(t, "once")
	})
}

func TestRefusedConnectionOverASocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cfg := retryConfig(2, 503)
	withWaits(cfg, time.Microsecond, time.Microsecond)
	tr := &retryhttp.Transport{Base: freshBase(t), Policy: cfg}
	req, err := http.NewRequest("POST", "http://"+addr+"/", strings.NewReader("x"))
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	var rerr *retryhttp.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, 2, rerr.Attempts, "never sent, so retried by policy for a POST too")
}

func TestCertificateErrorIsNotRetried(t *testing.T) {
	srv, conns := countingServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), true)
	tr := &retryhttp.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	_, err := (&http.Client{Transport: tr}).Get(srv.URL)
	var uae x509.UnknownAuthorityError
	var cve interface{ Unwrap() error }
	require.Error(t, err)
	assert.True(t, errors.As(err, &uae) || errors.As(err, &cve), "got %v", err)
	assert.Equal(t, int64(1), conns.Load())
}

func TestMalformedURLIsNotRetried(t *testing.T) {
	tr := &retryhttp.Transport{Base: freshBase(t), Policy: retryConfig(3, 503)}
	req, err := http.NewRequest("GET", "ftp://example.invalid/x", nil)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	var rerr *retryhttp.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, 1, rerr.Attempts)
}

// freshBase is a plain net/http transport, closed when the test ends.
func freshBase(t *testing.T) *http.Transport {
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	return base
}

// net/http reports a request body that fails while it copies it into the
// connection as a *net.OpError "readfrom" that wraps the failure of either
// end: the body's own error is the caller's and ends the request, the
// connection's is a network error and is retried.
func TestBodyCopyErrorIsTheCallers(t *testing.T) {
	errDisk := errors.New("disk read failed")
	readfrom := func(err error) error { return &net.OpError{Op: "readfrom", Net: "tcp", Err: err} }
	write := func(err error) error { return &net.OpError{Op: "write", Net: "tcp", Err: err} }
	cases := []struct {
		name string
		err  error
		want int // attempts
	}{
		{"the body's error", readfrom(errDisk), 1},
		{"the body's unexpected EOF", readfrom(io.ErrUnexpectedEOF), 1},
		{"a reset connection", readfrom(write(os.NewSyscallError("write", syscall.ECONNRESET))), 3},
		{"a closed connection", readfrom(write(net.ErrClosed)), 3},
		{"a write deadline", readfrom(write(os.ErrDeadlineExceeded)), 3},
		{"a reset while splicing", readfrom(os.NewSyscallError("sendfile", syscall.EPIPE)), 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := retryConfig(3, 503)
			withWaits(cfg, time.Microsecond, time.Microsecond)
			tr, base := newCalls(cfg, fail(tc.err))
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "PUT", "payload"))
			assert.Nil(t, resp)
			assert.ErrorIs(t, err, tc.err)
			var rerr *retryhttp.Error
			require.ErrorAs(t, err, &rerr)
			assert.Equal(t, tc.want, rerr.Attempts)
			assert.Equal(t, tc.want, base.count())
		})
	}
}

// A transparent resend goes at once, whatever the rule's waits, and
// under WithoutRetries too: the attempt never reached the server, so
// there is nothing to wait for.
func TestTransparentRetryGoesAtOnce(t *testing.T) {
	slow := retryConfig(3, 503)
	withWaits(slow, time.Second, time.Second)
	same := func(ctx context.Context) context.Context { return ctx }
	cases := []struct {
		name   string
		cfg    *policy.Config
		ctx    func(context.Context) context.Context
		method string
	}{
		{"a retry rule", slow, same, "POST"},
		{"a hedging rule", hedgeConfig(3, time.Second, 503), same, "GET"},
		{"WithoutRetries", slow, retryhttp.WithoutRetries, "PUT"},
		{"policy.None", policy.None(), same, "POST"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := script(rt.Step{Status: 201, Body: "made"})
				tr, base := newCalls(tc.cfg, refuse, srv.RoundTrip)
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, tc.ctx(t.Context()), tc.method, "payload"))
				require.NoError(t, err)
				assert.Equal(t, "made", readAll(t, resp))
				assert.Zero(t, time.Since(start))
				assert.Equal(t, 2, base.count())
				assert.NotContains(t, resp.Header, retryhttp.AttemptsHeader, "the resend keeps the first attempt's number")
				srv.WantHeader(t, retryhttp.AttemptsHeader, "")
				st := tr.Stats().Total
				assert.Equal(t, uint64(1), st.TransparentRetries)
				assert.Zero(t, st.ExtraAttempts)
			})
		})
	}
}

// A later attempt resent transparently keeps its number, on the wire and
// on the answer: the server sees X-Retry-Attempts 1 on the resend of
// attempt 2, and the caller's answer says one attempt came before it.
func TestTransparentResendKeepsTheAttemptsHeader(t *testing.T) {
	for _, cfg := range []*policy.Config{retryConfig(3, 503), hedgeConfig(3, time.Second, 503)} {
		synctest.Test(t, func(t *testing.T) {
			srv := script(rt.Step{Status: 503}, rt.Step{Body: "ok"})
			tr, base := newCalls(cfg, srv.RoundTrip, refuse, srv.RoundTrip)
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			assert.Equal(t, "ok", readAll(t, resp))
			assert.Equal(t, 3, base.count())
			srv.WantHeader(t, retryhttp.AttemptsHeader, "", "1")
			assert.Equal(t, []string{"1"}, resp.Header.Values(retryhttp.AttemptsHeader))
		})
	}
}

// An attempt cut by its per-attempt timeout is a timeout, never the
// caller's cancellation, whatever the base reports: net/http over
// HTTP/1.1 returns the context's cause, over HTTP/2 its bare error
// (context.Canceled), which a caller's errors.Is(err, context.Canceled)
// would otherwise take for its own. A cancellation by the caller still
// matches.
func TestPerAttemptTimeoutIsNoCancellation(t *testing.T) {
	t.Parallel()
	hang := func(report func(ctx context.Context) error) roundTripFunc {
		return func(req *http.Request) (*http.Response, error) {
			<-req.Context().Done()
			return nil, report(req.Context())
		}
	}
	tests := []struct {
		name         string
		base         roundTripFunc
		callerCancel bool
	}{
		{name: "base returns the cause, as HTTP/1.1", base: hang(context.Cause)},
		{name: "base returns the bare error, as HTTP/2", base: hang(func(ctx context.Context) error { return ctx.Err() })},
		{name: "caller cancels, HTTP/2", base: hang(func(ctx context.Context) error { return ctx.Err() }), callerCancel: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				cfg := retryConfig(2, 503)
				cfg.Rules[0].Retry.PerAttemptTimeout = time.Second
				var classified []error
				tr := &retryhttp.Transport{Base: tt.base, Policy: cfg,
					Classify: func(_ int, _ *http.Response, err error) retryhttp.Verdict {
						classified = append(classified, err)
						return retryhttp.UsePolicy
					}}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tt.callerCancel {
					time.AfterFunc(500*time.Millisecond, cancel)
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://api.example.com/x", nil)
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				require.Nil(t, resp)
				var rerr *retryhttp.Error
				require.ErrorAs(t, err, &rerr)
				if tt.callerCancel {
					assert.ErrorIs(t, err, context.Canceled, "the caller cancelled")
					return
				}
				assert.Equal(t, 2, rerr.Attempts, "attempts")
				assert.True(t, rerr.Timeout(), "got %v, want a timeout", err)
				assert.NotErrorIs(t, err, context.Canceled, "got %v, a cancellation the caller never made", err)
				require.Len(t, classified, 2, "outcomes classified")
				for i, cerr := range classified {
					assert.NotErrorIs(t, cerr, context.Canceled, "attempt %d: Classify got %v, a cancellation", i+1, cerr)
				}
			})
		})
	}
}

// A dial the per-attempt timeout cut short, reported by a base of the
// caller's own as a *net.OpError wrapping the bare context.Canceled, is
// still a dial: the attempt never reached the server, and is resent at
// once, a POST included. When every dial is cut short, the error keeps
// the OpError, reachable by errors.As, and is a timeout, not a
// cancellation the caller never made.
func TestPerAttemptTimeoutDuringADialIsStillADial(t *testing.T) {
	t.Parallel()
	for _, cut := range []int{1, 100} {
		t.Run(fmt.Sprintf("dials cut %d", cut), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls int
				base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
					calls++
					if calls <= cut {
						<-req.Context().Done()
						return nil, &net.OpError{Op: "dial", Net: "tcp", Err: req.Context().Err()}
					}
					return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
				})
				cfg := retryConfig(2, 503)
				cfg.Rules[0].Retry.PerAttemptTimeout = time.Second
				tr := &retryhttp.Transport{Base: base, Policy: cfg}
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "https://api.example.com/x",
					strings.NewReader("payload"))
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				if cut == 1 {
					require.NoError(t, err, "the dial cut short is resent")
					assert.Equal(t, 200, resp.StatusCode)
					assert.Equal(t, 2, calls)
					assert.Equal(t, uint64(1), tr.Stats().Total.TransparentRetries)
					return
				}
				require.Error(t, err)
				var op *net.OpError
				assert.ErrorAs(t, err, &op, "the dial's error is kept")
				assert.NotErrorIs(t, err, context.Canceled, "got %v, a cancellation the caller never made", err)
				var rerr *retryhttp.Error
				require.ErrorAs(t, err, &rerr)
				assert.True(t, rerr.Timeout(), "got %v, want a timeout", err)
			})
		})
	}
}
