package retryhttptest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

func TestBadScriptsFailWithAClearError(t *testing.T) {
	choose := func(int, *http.Request) rt.Step { return rt.Step{} }
	cases := []struct {
		name string
		srv  *rt.Server
		want string
	}{
		{"empty", &rt.Server{}, "empty script: set Server.Script or Server.Choose"},
		{"script and choose", &rt.Server{Script: []rt.Step{{}}, Choose: choose}, "Server has both Script and Choose: set one"},
		{"status 1000", script(rt.Step{}, rt.Step{Status: 1000}), "Script[1]: status 1000 outside 200..999"},
		{"status 199", script(rt.Step{Status: 199}), "Script[0]: status 199 outside 200..999"},
		{"status 100", script(rt.Step{Status: 100}), "Script[0]: status 100 outside 200..999"},
		{"status -1", script(rt.Step{Status: -1}), "Script[0]: status -1 outside 200..999"},
		{"Content-Length longer than the body", script(rt.Step{Body: "hello", Header: http.Header{"Content-Length": {"10"}}}),
			`Script[0]: Content-Length "10" does not match a body of 5 bytes (to cut a body short, use CloseMidBody)`},
		{"Content-Length shorter than the body", script(rt.Step{Body: "hello", Header: http.Header{"Content-Length": {"5", "4"}}}),
			`Script[0]: Content-Length "4" does not match a body of 5 bytes (to cut a body short, use CloseMidBody)`},
		{"Transfer-Encoding", script(rt.Step{Header: http.Header{"Transfer-Encoding": {"chunked"}}}),
			"Script[0]: Transfer-Encoding is set: the server frames the body itself"},
		// A Header written as a literal keeps its keys as written; the
		// reply sends them canonical, so the checks read them so too.
		{"transfer-encoding", script(rt.Step{Header: http.Header{"transfer-encoding": {"chunked"}}}),
			"Script[0]: Transfer-Encoding is set: the server frames the body itself"},
		{"content-length", script(rt.Step{Body: "hello", Header: http.Header{"content-length": {"10"}}}),
			`Script[0]: Content-Length "10" does not match a body of 5 bytes (to cut a body short, use CloseMidBody)`},
		{"body of a 204", script(rt.Step{Status: 204, Body: "x"}), "Script[0]: status 204 allows no body, got 1 bytes"},
		{"cut past the body", script(rt.Step{Body: "abc", Fault: rt.CloseMidBody, After: 3}),
			"Script[0]: CloseMidBody after 3 bytes of a body of 3: After must be in 0..len(Body)-1"},
		{"cut of no body", script(rt.Step{Fault: rt.ResetMidBody}),
			"Script[0]: ResetMidBody after 0 bytes of a body of 0: After must be in 0..len(Body)-1"},
		{"After with no cut", script(rt.Step{Body: "abc", After: 1}), "Script[0]: after 1 bytes, yet the fault is neither ResetMidBody nor CloseMidBody"},
		{"Reset with a status", script(rt.Step{Status: 503, Fault: rt.Reset}),
			"Script[0]: Reset sends no answer: leave Status, Header, Body and Trickle out"},
		{"Hang with a trickle", script(rt.Step{Fault: rt.Hang, Trickle: rt.Rate{Every: time.Second}}),
			"Script[0]: Hang sends no answer: leave Status, Header, Body and Trickle out"},
		{"negative delay", script(rt.Step{Delay: -time.Second}), "Script[0]: negative Delay -1s"},
		{"negative trickle", script(rt.Step{Trickle: rt.Rate{Bytes: -1}}), "Script[0]: negative Trickle {Bytes:-1 Every:0s}"},
		{"unknown fault", script(rt.Step{Fault: 9}), "Script[0]: unknown fault Fault(9)"},
		// A field no server can send would answer three ways: as written
		// in memory, blanked over HTTP/1.1, dropped over HTTP/2.
		{"a header name with a space", script(rt.Step{Header: http.Header{"Bad Key": {"v"}}}),
			`Script[0]: header name "Bad Key" is no HTTP field name: no server can send it`},
		{"an empty header name", script(rt.Step{Header: http.Header{"": {"v"}}}),
			`Script[0]: header name "" is no HTTP field name: no server can send it`},
		{"a header value with CR LF", script(rt.Step{Header: http.Header{"X-Bad": {"a\r\nInjected: yes"}}}),
			`Script[0]: header X-Bad: value "a\r\nInjected: yes" holds a control byte: no server can send it`},
		{"a header value with NUL", script(rt.Step{Header: http.Header{"X-Bad": {"ok", "a\x00"}}}),
			`Script[0]: header X-Bad: value "a\x00" holds a control byte: no server can send it`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := "retryhttptest: " + tc.want
			_, err := tc.srv.RoundTrip(newRequest(t, context.Background(), "GET", ""))
			if err == nil || err.Error() != want {
				t.Errorf("in memory: got error %v, want %q", err, want)
			}
			if err := tc.srv.Err(); err == nil || err.Error() != want {
				t.Errorf("Err: got %v, want %q", err, want)
			}
			if n := tc.srv.Count(); n != 0 {
				t.Errorf("got %d attempts recorded, want none", n)
			}
			r := &reports{}
			func() {
				defer func() {
					if v := recover(); v != nil && v != (fatal{}) {
						panic(v)
					}
				}()
				tc.srv.Start(r)
				t.Error("Start returned with a bad script")
			}()
			r.cleanup()
			if len(r.errs) != 1 || r.errs[0] != want {
				t.Errorf("Start: got reports %q, want %q", r.errs, want)
			}
		})
	}
}

func script(steps ...rt.Step) *rt.Server { return &rt.Server{Script: steps} }

// A request with no URL fails as net/http's transport fails it, rather
// than panicking, and reaches no record.
func TestRequestWithoutURL(t *testing.T) {
	srv := script(rt.Step{})
	body := &closeCount{Reader: strings.NewReader("x")}
	_, err := srv.RoundTrip(&http.Request{Method: "POST", Header: http.Header{}, Body: body})
	if err == nil || err.Error() != "retryhttptest: nil Request.URL" {
		t.Errorf("got error %v, want %q", err, "retryhttptest: nil Request.URL")
	}
	if body.closed != 1 {
		t.Errorf("body closed %d times, want once", body.closed)
	}
	srv.WantAttempts(t, 0)
}

// closeCount is a request body that counts its closes.
type closeCount struct {
	io.Reader
	closed int
}

func (c *closeCount) Close() error { c.closed++; return nil }

func newRequest(t *testing.T, ctx context.Context, method, body string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "https://api.example.com/v1/items", rd)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// A bad step from Choose fails the request it was chosen for, and is
// reported by the helpers, and by the loopback server when the test ends.
func TestBadChoiceFailsItsRequest(t *testing.T) {
	const want = "retryhttptest: Choose(2, ...): status 42 outside 200..999"
	choose := func(n int, _ *http.Request) rt.Step {
		if n == 2 {
			return rt.Step{Status: 42}
		}
		return rt.Step{Body: "ok"}
	}
	t.Run("memory", func(t *testing.T) {
		srv := &rt.Server{Choose: choose}
		if _, err := srv.RoundTrip(newRequest(t, context.Background(), "GET", "")); err != nil {
			t.Fatalf("attempt 1: %v", err)
		}
		_, err := srv.RoundTrip(newRequest(t, context.Background(), "GET", ""))
		if err == nil || err.Error() != want {
			t.Errorf("got error %v, want %q", err, want)
		}
		r := &reports{}
		wantReports(t, r, srv.WantAttempts(r, 2), want)
	})
	t.Run("loopback", func(t *testing.T) {
		srv := &rt.Server{Choose: choose}
		r := &reports{}
		ts := srv.Start(r)
		for i, wantStatus := range []int{200, 500} {
			resp, err := ts.Client().Get(ts.URL)
			if err != nil {
				t.Fatalf("attempt %d: %v", i+1, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != wantStatus {
				t.Errorf("attempt %d: got status %d, want %d", i+1, resp.StatusCode, wantStatus)
			}
			if wantStatus == 500 && !strings.Contains(string(body), want) {
				t.Errorf("attempt %d: got body %q, want the error", i+1, body)
			}
		}
		if len(r.errs) != 0 {
			t.Errorf("reported %q before the test ended", r.errs)
		}
		r.cleanup()
		if len(r.errs) != 1 || r.errs[0] != want {
			t.Errorf("got reports %q, want %q", r.errs, want)
		}
	})
}

// A request body that does not match its declared length is refused by
// net/http's client, and in memory by the server, in net/http's words.
// Over a socket the server sees the request cut short, or nothing when
// the client failed before its buffered headers went out.
func TestBodyNotMatchingItsLength(t *testing.T) {
	for _, m := range modes[:2] {
		t.Run(m.name, func(t *testing.T) {
			srv := script(rt.Step{})
			m.run(t, srv, func(t *testing.T, base http.RoundTripper, url string) {
				req, err := http.NewRequest("PUT", url, strings.NewReader("short"))
				if err != nil {
					t.Fatal(err)
				}
				req.ContentLength = 10
				resp, err := base.RoundTrip(req)
				if err == nil {
					resp.Body.Close()
					t.Fatal("a body shorter than its length was answered")
				}
				// Over a socket the error is net/http's, which varies with
				// the moment the connection breaks.
				const want = "retryhttptest: request ContentLength=10 with Body length 5"
				if m.name == "memory" && err.Error() != want {
					t.Errorf("got error %v, want %q", err, want)
				}
				got := records(t, srv)
				if m.name != "memory" && len(got) == 0 {
					return
				}
				if len(got) != 1 || !got[0].bodyCut || got[0].body == "short" {
					t.Errorf("got records %v, want one with its body cut short", got)
				}
			})
		})
	}
}

// endless is a request body that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

// A body that never ends is read up to MaxBody, then answered 413; what
// the server keeps of it stays within its bounds.
func TestEndlessBodyIsCutAtMaxBody(t *testing.T) {
	srv := &rt.Server{Script: []rt.Step{{}}, MaxBody: 1 << 20}
	req := newRequest(t, context.Background(), "PUT", "")
	req.Body = io.NopCloser(endless{})
	resp, err := srv.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("got status %d, want 413", resp.StatusCode)
	}
	a := srv.Attempts()[0]
	if a.BodySize != 1<<20 || !errors.Is(a.BodyErr, rt.ErrBodyTooLarge) || a.Body != nil {
		t.Errorf("got body of %d bytes (kept %d), error %v; want 1 MiB read, none kept, ErrBodyTooLarge",
			a.BodySize, len(a.Body), a.BodyErr)
	}
	if a.ContentLength != -1 {
		t.Errorf("got ContentLength %d, want -1 (unknown)", a.ContentLength)
	}
}

// The same over a socket: the test ends, whatever the client meets
// (the 413, or a connection the server closed under its upload).
func TestEndlessBodyOverLoopback(t *testing.T) {
	srv := &rt.Server{Script: []rt.Step{{}}, MaxBody: 1 << 20}
	ts := srv.Start(t)
	req, err := http.NewRequest("PUT", ts.URL, io.NopCloser(endless{}))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := ts.Client().Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("got status %d, want 413", resp.StatusCode)
		}
	}
	records(t, srv)
	if a := srv.Attempts(); len(a) != 1 || a[0].BodySize != 1<<20 || !errors.Is(a[0].BodyErr, rt.ErrBodyTooLarge) {
		t.Errorf("got records %+v, want one cut at 1 MiB", a)
	}
}

// A body whose reads block is given up when the request ends: the
// attempt is recorded as cancelled and RoundTrip returns the cause.
func TestBlockedBodyEndsWithTheRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{})
		ctx, cancel := context.WithTimeoutCause(context.Background(), time.Second, errGaveUp)
		defer cancel()
		pr, pw := io.Pipe()
		defer pw.Close()
		req := newRequest(t, ctx, "PUT", "")
		req.Body = pr
		start := time.Now()
		_, err := srv.RoundTrip(req)
		if !errors.Is(err, errGaveUp) {
			t.Errorf("got error %v, want the request's cause", err)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("returned after %v, want 1s", d)
		}
		if a := srv.Attempts()[0]; !a.Cancelled || !errors.Is(a.BodyErr, errGaveUp) {
			t.Errorf("got cancelled %v, body error %v; want cancelled by the cause", a.Cancelled, a.BodyErr)
		}
	})
}
