package retryhttp_test

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/dial"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// Each verdict, for a GET and for a POST, against a server that answers
// 403 then 200, or 503 (a listed status) then 200.
func TestVerdicts(t *testing.T) {
	cases := []struct {
		verdict retryhttp.Verdict
		status  int
		method  string
		want    int // attempts
	}{
		{retryhttp.UsePolicy, 403, "GET", 1},
		{retryhttp.UsePolicy, 503, "GET", 2},
		{retryhttp.UsePolicy, 503, "POST", 1},
		{retryhttp.Retryable, 403, "GET", 2},
		{retryhttp.Retryable, 403, "POST", 1}, // idempotency rules still apply
		{retryhttp.RetryableUnprocessed, 403, "GET", 2},
		{retryhttp.RetryableUnprocessed, 403, "POST", 2}, // the server did not act on it
		{retryhttp.Final, 503, "GET", 1},                 // a listed status, handed back at once
		{retryhttp.Final, 503, "POST", 1},
		{retryhttp.Verdict(42), 503, "GET", 2}, // unknown: the policy decides
	}
	for _, tc := range cases {
		t.Run(tc.verdict.String()+"/"+http.StatusText(tc.status)+"/"+tc.method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, s := newScripted(retryConfig(3, 503), rt.Step{Status: tc.status}, rt.Step{})
				var asked []int
				tr.Classify = func(attempt int, resp *http.Response, err error) retryhttp.Verdict {
					asked = append(asked, attempt)
					if resp.StatusCode == 200 {
						return retryhttp.UsePolicy
					}
					return tc.verdict
				}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), tc.method, "payload"))
				require.NoError(t, err)
				readAll(t, resp)
				s.WantAttempts(t, tc.want)
				assert.Len(t, asked, tc.want, "asked about every attempt")
				if tc.want == 2 {
					assert.Equal(t, 200, resp.StatusCode)
					s.WantBody(t, "payload")
				} else {
					assert.Equal(t, tc.status, resp.StatusCode)
				}
			})
		})
	}
}

// A network error can be judged too: Final hands it back, Retryable
// retries it for an idempotent request.
func TestVerdictOnANetworkError(t *testing.T) {
	for v, want := range map[retryhttp.Verdict]int{retryhttp.UsePolicy: 3, retryhttp.Final: 1, retryhttp.Retryable: 3} {
		t.Run(v.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, base := newCalls(retryConfig(3, 503), fail(io.ErrUnexpectedEOF))
				tr.Classify = func(_ int, resp *http.Response, err error) retryhttp.Verdict {
					assert.Nil(t, resp)
					assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
					return v
				}
				_, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.ErrorIs(t, err, io.ErrUnexpectedEOF)
				assert.Equal(t, want, base.count())
			})
		})
	}
}

// The classifier is not asked about an attempt that provably never
// reached the server, nor once the caller has gone.
func TestClassifyIsNotAskedAboutTheUnsent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, base := newCalls(retryConfig(3, 503), refuse, script(rt.Step{}).RoundTrip)
		var asked []int
		tr.Classify = func(attempt int, resp *http.Response, err error) retryhttp.Verdict {
			asked = append(asked, attempt)
			return retryhttp.UsePolicy
		}
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, 2, base.count())
		assert.Equal(t, []int{1}, asked, "the transparent resend keeps its number; the refused dial is not asked about")

		ctx, cancel := context.WithCancel(t.Context())
		tr, _ = newScripted(retryConfig(3, 503), rt.Step{Status: 503})
		asked = nil
		tr.Classify = func(attempt int, resp *http.Response, err error) retryhttp.Verdict {
			asked = append(asked, attempt)
			return retryhttp.UsePolicy
		}
		tr.Base = roundTripFunc(func(*http.Request) (*http.Response, error) {
			cancel()
			return nil, context.Canceled
		})
		_, err = tr.RoundTrip(newRequest(t, ctx, "GET", ""))
		require.ErrorIs(t, err, context.Canceled)
		assert.Empty(t, asked)
	})
}

// A classifier that panics leaves nothing behind: every response is
// closed, no goroutine or buffer outlives the request, and the panic
// reaches the caller with its value.
func TestClassifyPanicLeavesNothingBehind(t *testing.T) {
	for _, name := range []string{"retry", "hedge, loop started", "hedge, first answer"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := retryConfig(3, 503)
				slow := time.Duration(0)
				if strings.HasPrefix(name, "hedge") {
					cfg = &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
						Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: time.Millisecond, NonFatalStatusCodes: []int{503}}}}}
				}
				if name == "hedge, loop started" {
					// Answers come after the hedging delay, so that
					// the loop runs on a goroutine of its own.
					slow = 5 * time.Millisecond
				}
				var sent, closed atomic.Int64
				tr := &retryhttp.Transport{Policy: cfg, Base: roundTripFunc(func(req *http.Request) (*http.Response, error) {
					io.Copy(io.Discard, req.Body)
					req.Body.Close()
					select {
					case <-time.After(slow):
					case <-req.Context().Done():
						return nil, req.Context().Err()
					}
					sent.Add(1)
					body := &closeCounter{ReadCloser: io.NopCloser(strings.NewReader("busy")), n: &closed}
					return &http.Response{StatusCode: 503, Header: http.Header{}, Body: body, Request: req}, nil
				})}
				tr.Classify = func(int, *http.Response, error) retryhttp.Verdict { panic("classifier bug") }
				req := newRequest(t, t.Context(), "PUT", "")
				body := &trackedBody{Reader: strings.NewReader("streamed, not GetBody")}
				req.Body, req.GetBody, req.ContentLength = body, nil, -1
				func() {
					defer func() {
						assert.Equal(t, "classifier bug", recover())
					}()
					tr.RoundTrip(req)
					t.Error("RoundTrip returned")
				}()
				synctest.Wait()
				assert.Positive(t, sent.Load())
				assert.Equal(t, sent.Load(), closed.Load(), "every response was closed")
				assert.Zero(t, tr.Stats().Buffer.Buffered, "the buffer was let go")
				assert.Equal(t, int64(1), body.closes.Load())
			})
		})
	}
}

// PeekBody reads ahead and leaves the body whole for the next reader,
// whatever the size asked.
func TestPeekBody(t *testing.T) {
	const text = `{"error":{"errors":[{"domain":"usageLimits","reason":"userRateLimitExceeded"}],"code":403}}`
	newResp := func() *http.Response {
		return &http.Response{StatusCode: 403, Body: io.NopCloser(strings.NewReader(text))}
	}
	for _, tc := range []struct {
		name string
		n    int
		want string
	}{
		{"negative", -1, ""},
		{"zero", 0, ""},
		{"some", 10, text[:10]},
		{"all", len(text), text},
		{"more than there is", 1 << 40, text},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := newResp()
			got, err := retryhttp.PeekBody(resp, tc.n)
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
			again, err := retryhttp.PeekBody(resp, tc.n)
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(again), "a second peek sees the same bytes")
			rest, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, text, string(rest), "the body is whole")
		})
	}
	for _, resp := range []*http.Response{nil, {}, {Body: http.NoBody}} {
		got, err := retryhttp.PeekBody(resp, 10)
		assert.Nil(t, got)
		assert.NoError(t, err)
	}
}

// failingBody returns some bytes, then an error.
type failingBody struct {
	data string
	err  error
}

func (b *failingBody) Read(p []byte) (int, error) {
	if b.data == "" {
		return 0, b.err
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

func (b *failingBody) Close() error { return nil }

// A body that fails mid-peek gives the bytes before the failure and the
// failure, and the next reader meets both again.
func TestPeekBodyThatFails(t *testing.T) {
	errBroken := errors.New("connection reset")
	resp := &http.Response{Body: &failingBody{data: "partial", err: errBroken}}
	got, err := retryhttp.PeekBody(resp, 100)
	assert.Equal(t, "partial", string(got))
	require.ErrorIs(t, err, errBroken)
	rest, err := io.ReadAll(resp.Body)
	assert.Equal(t, "partial", string(rest))
	require.ErrorIs(t, err, errBroken)
}

// A body that hangs, ignoring its context, is closed when the request's
// context ends: the peek returns then, with the context's cause.
func TestPeekBodyThatHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", "https://api.test/", nil)
		require.NoError(t, err)
		stuck := &stuckBody{closed: make(chan struct{})}
		resp := &http.Response{Body: stuck, Request: req}
		start := time.Now()
		got, err := retryhttp.PeekBody(resp, 10)
		assert.Empty(t, got)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, time.Second, time.Since(start))
	})
}

// A body the peek closed when the request's context ended is not closed
// again by its reader's Close: the base's body sees one Close, as
// io.Closer leaves a second one undefined.
func TestPeekBodyClosedByItsContextIsClosedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", "https://api.test/", nil)
		require.NoError(t, err)
		var closes atomic.Int64
		resp := &http.Response{Body: &closeCounter{ReadCloser: &stuckBody{closed: make(chan struct{})}, n: &closes}, Request: req}
		_, err = retryhttp.PeekBody(resp, 10)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NoError(t, resp.Body.Close())
		synctest.Wait()
		assert.Equal(t, int64(1), closes.Load(), "closes of the base's body")
	})
}

// A peek after part of the body was read starts where the next reader
// would read, with no gap.
func TestPeekBodyAfterARead(t *testing.T) {
	resp := &http.Response{Body: io.NopCloser(strings.NewReader("abcdefgh"))}
	got, err := retryhttp.PeekBody(resp, 2)
	require.NoError(t, err)
	assert.Equal(t, "ab", string(got))
	p := make([]byte, 3)
	n, err := resp.Body.Read(p)
	require.NoError(t, err)
	assert.Equal(t, "ab", string(p[:n]))
	got, err = retryhttp.PeekBody(resp, 4)
	require.NoError(t, err)
	assert.Equal(t, "cdef", string(got))
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "cdefgh", string(rest))
}

// Under a hedging rule too, the classifier is not asked about the
// attempts the caller's going away cut off, nor about the attempts that
// never reached the server.
func TestClassifyIsNotAskedAboutTheCutOffHedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Fault: rt.Hang})
		tr, base := newCalls(hedgeConfig(3, 10*time.Millisecond, 503), srv.RoundTrip, refuse, srv.RoundTrip)
		var asked atomic.Int64
		tr.Classify = func(int, *http.Response, error) retryhttp.Verdict {
			asked.Add(1)
			return retryhttp.UsePolicy
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
		assert.Nil(t, resp)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		synctest.Wait()
		assert.Equal(t, 4, base.count(), "three hedges, the second resent once")
		assert.Equal(t, []bool{true, true, true}, cancelled(srv))
		assert.Zero(t, asked.Load())
	})
}

// What the Transport never retries, no verdict retries either: a
// redirect or an informational answer is the server's answer, and a
// certificate that cannot be verified would fail again. A verdict still
// retries a success, which the caller may know to be a failure.
func TestVerdictsRetryNothingNeverRetried(t *testing.T) {
	verdicts := []retryhttp.Verdict{retryhttp.Retryable, retryhttp.RetryableUnprocessed, retryhttp.Throttled}
	for _, tc := range []struct {
		status int
		want   int // attempts
	}{
		{http.StatusFound, 1},
		{http.StatusNotModified, 1},
		{http.StatusPermanentRedirect, 1},
		{http.StatusOK, 3},
	} {
		for _, v := range verdicts {
			t.Run(http.StatusText(tc.status)+"/"+v.String(), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					for _, cfg := range []*policy.Config{retryConfig(3, 503), hedgeConfig(3, time.Second, 503)} {
						tr, s := newScripted(cfg, rt.Step{Status: tc.status, Header: hdr("Location", "/elsewhere")})
						var asked int
						tr.Classify = func(int, *http.Response, error) retryhttp.Verdict { asked++; return v }
						resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
						require.NoError(t, err)
						readAll(t, resp)
						assert.Equal(t, tc.status, resp.StatusCode)
						s.WantAttempts(t, tc.want)
						assert.Equal(t, tc.want, asked, "the classifier is asked about every answer")
					}
				})
			})
		}
	}
	t.Run("a certificate error", func(t *testing.T) {
		srv, conns := countingServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), true)
		for _, v := range verdicts {
			conns.Store(0)
			cfg := retryConfig(3, 503)
			withWaits(cfg, time.Millisecond, time.Millisecond)
			tr := &retryhttp.Transport{Base: freshBase(t), Policy: cfg}
			tr.Classify = func(int, *http.Response, error) retryhttp.Verdict { return v }
			req, err := http.NewRequestWithContext(t.Context(), "GET", srv.URL, nil)
			require.NoError(t, err)
			_, err = tr.RoundTrip(req)
			var uae x509.UnknownAuthorityError
			require.ErrorAs(t, err, &uae, v.String())
			var rerr *retryhttp.Error
			require.ErrorAs(t, err, &rerr)
			assert.Equal(t, 1, rerr.Attempts, v.String())
			assert.Equal(t, int64(1), conns.Load(), v.String())
		}
	})
}

// TestMalformedURLsAreNeverRetried sends, through the Transport's own
// base, URLs that no attempt could send: a port out of range, an
// address that does not parse, no host, a scheme net/http does not
// speak. Each is tried once, whatever the classifier says, with no
// transparent resend and nothing spent of the host's budget.
func TestMalformedURLsAreNeverRetried(t *testing.T) {
	verdicts := []retryhttp.Verdict{retryhttp.UsePolicy, retryhttp.Retryable, retryhttp.RetryableUnprocessed, retryhttp.Throttled}
	for _, raw := range []string{"http://127.0.0.1:99999/", "http://[::1:80/", "http:///path", "ftp://example.com/"} {
		for _, v := range verdicts {
			t.Run(raw+"/"+v.String(), func(t *testing.T) {
				u := &url.URL{Scheme: "http", Host: "[::1:80", Path: "/"} // url.Parse refuses it
				if parsed, err := url.Parse(raw); err == nil {
					u = parsed
				}
				cfg := retryConfig(3, 503)
				withWaits(cfg, time.Millisecond, time.Millisecond)
				tr := &retryhttp.Transport{Policy: cfg}
				var asked int
				tr.Classify = func(int, *http.Response, error) retryhttp.Verdict { asked++; return v }
				req := (&http.Request{Method: "GET", URL: u, Header: http.Header{}}).WithContext(t.Context())
				resp, err := tr.RoundTrip(req)
				require.Nil(t, resp)
				var rerr *retryhttp.Error
				require.ErrorAs(t, err, &rerr)
				assert.Equal(t, 1, rerr.Attempts, "got a malformed URL tried again: %v", err)
				assert.NotErrorIs(t, err, dial.ErrBackoff)
				st := tr.Stats()
				assert.Zero(t, st.Total.ExtraAttempts)
				assert.Zero(t, st.Total.TransparentRetries)
			})
		}
	}
}
