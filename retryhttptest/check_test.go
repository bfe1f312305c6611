package retryhttptest_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// reports is a testing.TB that keeps what the kit reports to it. Its
// embedded TB is nil: a kit that called anything else would panic.
type reports struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *reports) Helper() {}

func (r *reports) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *reports) Error(args ...any) { r.errs = append(r.errs, fmt.Sprint(args...)) }

// fatal is what a reports' Fatal panics with, to stop its caller.
type fatal struct{}

func (r *reports) Fatal(args ...any) {
	r.Error(args...)
	panic(fatal{})
}

func (r *reports) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

// cleanup runs the cleanups registered, last first, as testing does.
func (r *reports) cleanup() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	r.cleanups = nil
}

// wantReports checks that the helper returned ok and reported want.
func wantReports(t *testing.T, r *reports, ok bool, want ...string) {
	t.Helper()
	if ok != (len(want) == 0) {
		t.Errorf("helper returned %v with reports %q", ok, r.errs)
	}
	if len(r.errs) != len(want) {
		t.Fatalf("got reports %q, want %q", r.errs, want)
	}
	for i := range want {
		if r.errs[i] != want[i] {
			t.Errorf("report %d:\n got %q\nwant %q", i, r.errs[i], want[i])
		}
	}
}

// retried sends one GET of body through a retryhttp.Transport over srv,
// in a bubble's virtual time.
func retried(t *testing.T, srv *retryhttptest.Server, method, body string) {
	t.Helper()
	req, err := http.NewRequest(method, "https://api.example.com/v1/items", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	tr := &retryhttp.Transport{Base: srv, Policy: retryPolicy()}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func TestWantAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &retryhttptest.Server{Script: []retryhttptest.Step{{Status: 503}, {Status: 503}, {Status: 200}}}
		retried(t, srv, "GET", "")
		r := &reports{}
		wantReports(t, r, srv.WantAttempts(r, 3))
		r = &reports{}
		wantReports(t, r, srv.WantAttempts(r, 2), "got 3 attempts, want 2"+
			"\n\tattempt 1 at 0s: GET /v1/items"+
			"\n\tattempt 2 at 1ms: GET /v1/items, X-Retry-Attempts: 1"+
			"\n\tattempt 3 at 2ms: GET /v1/items, X-Retry-Attempts: 2")
	})
}

func TestWantAttemptsOfOne(t *testing.T) {
	srv := &retryhttptest.Server{Script: []retryhttptest.Step{{}}}
	retried(t, srv, "PUT", "x")
	r := &reports{}
	wantReports(t, r, srv.WantAttempts(r, 2), "got 1 attempt, want 2\n\tattempt 1 at 0s: PUT /v1/items")
}

func TestWantHeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &retryhttptest.Server{Script: []retryhttptest.Step{{Status: 503}, {Status: 200}}}
		retried(t, srv, "GET", "")
		r := &reports{}
		wantReports(t, r, srv.WantHeader(r, retryhttp.AttemptsHeader, "", "1"))
		r = &reports{}
		wantReports(t, r, srv.WantHeader(r, retryhttp.AttemptsHeader, "1", "1"),
			`attempt 1: X-Retry-Attempts is "", want "1"`)
		r = &reports{}
		wantReports(t, r, srv.WantHeader(r, retryhttp.AttemptsHeader, "", "1", "2"),
			`got 2 attempts, want 3 (X-Retry-Attempts ["" "1" "2"])`+
				"\n\tattempt 1 at 0s: GET /v1/items"+
				"\n\tattempt 2 at 1ms: GET /v1/items, X-Retry-Attempts: 1")
	})
}

func TestWantBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &retryhttptest.Server{Script: []retryhttptest.Step{{Status: 503}, {Status: 200}}}
		retried(t, srv, "PUT", "payload")
		r := &reports{}
		wantReports(t, r, srv.WantBody(r, "payload"))
		r = &reports{}
		wantReports(t, r, srv.WantBody(r, "other"),
			`attempt 1: body is 7 bytes "payload", want 5 bytes "other"`,
			`attempt 2: body is 7 bytes "payload", want 5 bytes "other"`)
	})
}

func TestWantBodyTooLongToKeep(t *testing.T) {
	srv := &retryhttptest.Server{Script: []retryhttptest.Step{{}}, KeepBody: 4}
	retried(t, srv, "PUT", "payload")
	r := &reports{}
	wantReports(t, r, srv.WantBody(r, "payload"))
	r = &reports{}
	wantReports(t, r, srv.WantBody(r, "payloaf"),
		`attempt 1: body is 7 bytes (sha256 239f59ed55e737c7...), want 7 bytes "payloaf"`)
}

func TestWantBodyOfNoAttempt(t *testing.T) {
	srv := &retryhttptest.Server{Script: []retryhttptest.Step{{}}}
	r := &reports{}
	wantReports(t, r, srv.WantBody(r, ""), "got no attempts, want a body of 0 bytes")
}

func TestWantArrivals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &retryhttptest.Server{Script: []retryhttptest.Step{{Status: 503}, {Status: 503}, {Status: 200}}}
		retried(t, srv, "GET", "")
		r := &reports{}
		wantReports(t, r, srv.WantArrivals(r, 0, time.Millisecond, 2*time.Millisecond))
		r = &reports{}
		wantReports(t, r, srv.WantArrivals(r, 0, time.Millisecond, 3*time.Millisecond),
			"attempt 3: arrived at 2ms, want 3ms")
	})
}

func TestWantHelpersReportABadScript(t *testing.T) {
	srv := &retryhttptest.Server{}
	if _, err := srv.RoundTrip(httptestRequest(t)); err == nil {
		t.Fatal("an empty script answered")
	}
	const msg = "retryhttptest: empty script: set Server.Script or Server.Choose"
	for name, check := range map[string]func(testing.TB) bool{
		"WantAttempts": func(tb testing.TB) bool { return srv.WantAttempts(tb, 0) },
		"WantHeader":   func(tb testing.TB) bool { return srv.WantHeader(tb, "X") },
		"WantBody":     func(tb testing.TB) bool { return srv.WantBody(tb, "") },
		"WantArrivals": func(tb testing.TB) bool { return srv.WantArrivals(tb) },
	} {
		t.Run(name, func(t *testing.T) {
			r := &reports{}
			wantReports(t, r, check(r), msg)
		})
	}
}

func httptestRequest(t *testing.T) *http.Request {
	req, err := http.NewRequest("GET", "https://api.example.com/", nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
