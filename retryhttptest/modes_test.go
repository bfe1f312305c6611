package retryhttptest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// mode is one way to run a script: in memory inside a synctest bubble, or
// on loopback. run calls f with the base transport that reaches srv and
// the URL of its root.
type mode struct {
	name string
	run  func(t *testing.T, srv *retryhttptest.Server, f func(t *testing.T, base http.RoundTripper, url string))
}

var modes = []mode{
	{"memory", func(t *testing.T, srv *retryhttptest.Server, f func(*testing.T, http.RoundTripper, string)) {
		synctest.Test(t, func(t *testing.T) { f(t, srv, "https://api.example.com") })
	}},
	{"HTTP/1.1", func(t *testing.T, srv *retryhttptest.Server, f func(*testing.T, http.RoundTripper, string)) {
		ts := srv.Start(t)
		f(t, ts.Client().Transport, ts.URL)
	}},
	{"HTTP/2", func(t *testing.T, srv *retryhttptest.Server, f func(*testing.T, http.RoundTripper, string)) {
		ts := srv.StartHTTP2(t)
		f(t, ts.Client().Transport, ts.URL)
	}},
}

// retryPolicy retries every request up to 3 attempts on 503, after 1 ms:
// these tests are about what each attempt meets, not about time.
func retryPolicy() *policy.Config {
	return &policy.Config{Rules: []policy.Rule{{
		Name: []policy.Name{{}},
		Retry: &policy.Retry{MaxAttempts: 3, RetryableStatusCodes: []int{503},
			Backoff: policy.Exponential{Initial: time.Millisecond, Max: time.Millisecond, Multiplier: 1}},
	}}}
}

// errGaveUp is the cause with which a test's caller gives a request up.
var errGaveUp = errors.New("the caller gave up")

// errClass names what an error means to a client, in the terms the fault
// documentation uses.
func errClass(err error) string {
	var op *net.OpError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, errGaveUp):
		return "cause"
	case errors.Is(err, context.Canceled):
		return "context canceled"
	case errors.As(err, &op) && errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected EOF"
	case strings.Contains(err.Error(), "stream error") && strings.Contains(err.Error(), "INTERNAL_ERROR"):
		return "stream reset"
	}
	return "other: " + err.Error()
}

// seen is what a test compares of an attempt's record.
type seen struct {
	method, path, query, retries, body string
	length                             int64
	bodyCut, cancelled                 bool
}

func (s seen) String() string {
	return fmt.Sprintf("%s %s?%s retries=%q body=%q length=%d cut=%v cancelled=%v",
		s.method, s.path, s.query, s.retries, s.body, s.length, s.bodyCut, s.cancelled)
}

// result is the outcome of one request, as its caller and the server saw
// it.
type result struct {
	status   int
	body     string // read before the body's error, if any
	err      string // class of the request's error
	bodyErr  string // class of the body's error
	attempts []seen
}

func (r result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "status %d, body %q, err %q, body err %q", r.status, r.body, r.err, r.bodyErr)
	for i, a := range r.attempts {
		fmt.Fprintf(&b, "\n\t\tattempt %d: %v", i+1, a)
	}
	return b.String()
}

// records returns what srv recorded, once it has finished with every
// attempt. The bound turns a hang into a failure; it is never reached
// when the code is right, however slow the machine.
func records(t *testing.T, srv *retryhttptest.Server) []seen {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Wait(ctx); err != nil {
		t.Fatalf("server still busy: %v", err)
	}
	var out []seen
	for _, a := range srv.Attempts() {
		body := string(a.Body)
		if a.Body == nil && a.BodySize > 0 {
			body = fmt.Sprintf("<%d bytes, sha256 %x>", a.BodySize, a.BodySHA256[:4])
		}
		out = append(out, seen{method: a.Method, path: a.Path, query: a.RawQuery,
			retries: a.Header.Get(retryhttp.AttemptsHeader), body: body, length: a.ContentLength,
			bodyCut: a.BodyErr != nil, cancelled: a.Cancelled})
	}
	return out
}

// A step's header keys reach the client in canonical form in every mode,
// as they do off a connection.
func TestHeaderKeysAreCanonical(t *testing.T) {
	srv := &retryhttptest.Server{Script: []retryhttptest.Step{{Header: http.Header{"x-ratelimit-reset": {"1"}}}}}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			m.run(t, srv, func(t *testing.T, base http.RoundTripper, url string) {
				resp, err := (&http.Client{Transport: base}).Get(url)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if got := resp.Header.Get("X-RateLimit-Reset"); got != "1" {
					t.Errorf("got X-RateLimit-Reset %q, want %q", got, "1")
				}
			})
		})
	}
}
