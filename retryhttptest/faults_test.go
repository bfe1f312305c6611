package retryhttptest_test

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// When the caller gives a request up.
type giveUp int

const (
	keepOn       giveUp = iota
	onArrival           // as soon as the server has the request
	afterHeaders        // once the response headers are in
)

// faultCase is a script played in every mode through a
// retryhttp.Transport, with the outcome wanted in memory and over
// HTTP/1.1, and over HTTP/2 where that differs.
type faultCase struct {
	name   string
	method string
	body   string // of the request
	steps  []retryhttptest.Step
	giveUp giveUp
	want   result
	h2     *result
}

func get(retries string) seen {
	return seen{method: "GET", path: "/v1/items", query: "page=2", retries: retries, body: "", length: 0}
}

func cancelled(s seen) seen { s.cancelled = true; return s }

func with(s seen, method, body string) seen {
	s.method, s.body, s.length = method, body, int64(len(body))
	return s
}

var faultCases = []faultCase{
	{name: "reply", steps: []retryhttptest.Step{{Body: "ok"}},
		want: result{status: 200, body: "ok", attempts: []seen{get("")}}},
	{name: "503 then a reply", steps: []retryhttptest.Step{{Status: 503, Body: "busy"}, {Body: "ok"}},
		want: result{status: 200, body: "ok", attempts: []seen{get(""), get("1")}}},
	{name: "reset", steps: []retryhttptest.Step{{Fault: retryhttptest.Reset}, {Body: "ok"}},
		// Over HTTP/2 the stream is reset, which retryhttp retries as
		// the connection reset of HTTP/1.1.
		want: result{status: 200, body: "ok", attempts: []seen{get(""), get("1")}}},
	{name: "reset of a POST", method: "POST", body: "payload",
		steps: []retryhttptest.Step{{Fault: retryhttptest.Reset}, {Body: "ok"}},
		want:  result{err: "reset", attempts: []seen{with(get(""), "POST", "payload")}},
		h2:    &result{err: "stream reset", attempts: []seen{with(get(""), "POST", "payload")}}},
	{name: "reset mid-body of a 503",
		steps: []retryhttptest.Step{{Status: 503, Body: "unavailable", Fault: retryhttptest.ResetMidBody, After: 3}, {Body: "ok"}},
		want:  result{status: 200, body: "ok", attempts: []seen{get(""), get("1")}}},
	{name: "reset mid-body of a 200",
		steps: []retryhttptest.Step{{Body: "0123456789", Fault: retryhttptest.ResetMidBody, After: 4}},
		want:  result{status: 200, body: "0123", bodyErr: "reset", attempts: []seen{get("")}},
		h2:    &result{status: 200, body: "0123", bodyErr: "stream reset", attempts: []seen{get("")}}},
	{name: "close mid-body",
		steps: []retryhttptest.Step{{Body: "0123456789", Fault: retryhttptest.CloseMidBody, After: 4}},
		want:  result{status: 200, body: "0123", bodyErr: "unexpected EOF", attempts: []seen{get("")}}},
	{name: "close after the headers",
		steps: []retryhttptest.Step{{Status: 503, Body: "busy", Fault: retryhttptest.CloseMidBody}, {Status: 202}},
		want:  result{status: 202, attempts: []seen{get(""), get("1")}}},
	{name: "delay", steps: []retryhttptest.Step{{Delay: 10 * time.Millisecond, Body: "late"}},
		want: result{status: 200, body: "late", attempts: []seen{get("")}}},
	{name: "hang, the caller gives up", steps: []retryhttptest.Step{{Fault: retryhttptest.Hang}}, giveUp: onArrival,
		want: result{err: "cause", attempts: []seen{cancelled(get(""))}}},
	{name: "delay, the caller gives up", steps: []retryhttptest.Step{{Delay: time.Hour, Body: "never"}}, giveUp: onArrival,
		want: result{err: "cause", attempts: []seen{cancelled(get(""))}}},
	{name: "trickle", steps: []retryhttptest.Step{{Body: "0123456789", Trickle: retryhttptest.Rate{Bytes: 3, Every: time.Millisecond}}},
		want: result{status: 200, body: "0123456789", attempts: []seen{get("")}}},
	{name: "trickle, the caller gives up mid-body", giveUp: afterHeaders,
		steps: []retryhttptest.Step{{Body: "0123456789", Trickle: retryhttptest.Rate{Bytes: 3, Every: time.Hour}}},
		want:  result{status: 200, bodyErr: "cause", attempts: []seen{cancelled(get(""))}},
		// HTTP/2's body reports the context's error, not its cause.
		h2: &result{status: 200, bodyErr: "context canceled", attempts: []seen{cancelled(get(""))}}},
	{name: "PUT replayed", method: "PUT", body: "payload",
		steps: []retryhttptest.Step{{Status: 503}, {Status: 201, Body: "made"}},
		want: result{status: 201, body: "made",
			attempts: []seen{with(get(""), "PUT", "payload"), with(get("1"), "PUT", "payload")}}},
	{name: "HEAD gets no body fault", method: "HEAD",
		steps: []retryhttptest.Step{{Body: "0123456789", Fault: retryhttptest.ResetMidBody, After: 4}},
		want:  result{status: 200, attempts: []seen{with(get(""), "HEAD", "")}}},
}

// TestFaultsLookTheSameEveryWay plays each fault in memory and over
// HTTP/1.1 and HTTP/2 on loopback, through a retryhttp.Transport, and
// checks the outcome and the attempt records of each mode against the
// same expectation.
func TestFaultsLookTheSameEveryWay(t *testing.T) {
	for _, fc := range faultCases {
		t.Run(fc.name, func(t *testing.T) {
			for _, m := range modes {
				t.Run(m.name, func(t *testing.T) {
					want := fc.want
					if fc.h2 != nil && m.name == "HTTP/2" {
						want = *fc.h2
					}
					if got := play(t, m, fc); !reflect.DeepEqual(got, want) {
						t.Errorf("got %v\n\twant %v", got, want)
					}
				})
			}
		})
	}
}

// play runs fc's script in mode m and returns the outcome.
func play(t *testing.T, m mode, fc faultCase) result {
	var got result
	// The request's context is made inside the mode, in its bubble, and
	// handed to the server's side, which may run on another goroutine.
	var giveUpNow atomic.Pointer[context.CancelCauseFunc]
	srv := &retryhttptest.Server{Choose: func(n int, req *http.Request) retryhttptest.Step {
		if fc.giveUp == onArrival {
			(*giveUpNow.Load())(errGaveUp)
		}
		return fc.steps[min(n, len(fc.steps))-1]
	}}
	m.run(t, srv, func(t *testing.T, base http.RoundTripper, url string) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		giveUpNow.Store(&cancel)
		method := fc.method
		if method == "" {
			method = "GET"
		}
		var body io.Reader
		if fc.body != "" {
			body = strings.NewReader(fc.body)
		}
		req, err := http.NewRequestWithContext(ctx, method, url+"/v1/items?page=2", body)
		if err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Transport: &retryhttp.Transport{Base: base, Policy: retryPolicy()}}
		defer client.CloseIdleConnections()
		resp, err := client.Do(req)
		got.err = errClass(err)
		if err == nil {
			if fc.giveUp == afterHeaders {
				cancel(errGaveUp)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			got.status, got.body, got.bodyErr = resp.StatusCode, string(b), errClass(err)
		}
		got.attempts = records(t, srv)
	})
	return got
}
