package retryhttptest_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// itemCase is a case of the items SDK's table: a script, a call, and
// what the caller and the server should see.
type itemCase struct {
	name     string
	post     bool
	deadline time.Duration // of the caller's context; 0 for none
	script   []rt.Step
	want     string
	retries  []string        // X-Retry-Attempts of each attempt
	at       []time.Duration // when each arrived
	jitter   time.Duration   // retryhttp's jitter on a server's delay
}

const (
	item    = `{"id":"7"}`
	backoff = 500 * time.Millisecond // the SDK's own, doubling
)

func header(k, v string) http.Header { return http.Header{k: {v}} }

var itemCases = []itemCase{
	{name: "ok", script: []rt.Step{{Body: item}}, want: item,
		retries: []string{""}, at: []time.Duration{0}},
	{name: "503 twice, then ok", script: []rt.Step{{Status: 503}, {Status: 503}, {Body: item}}, want: item,
		retries: []string{"", "1", "2"}, at: []time.Duration{0, backoff, 3 * backoff}},
	{name: "always 503", script: []rt.Step{{Status: 503}}, want: "items: 503 Service Unavailable",
		retries: []string{"", "1", "2"}, at: []time.Duration{0, backoff, 3 * backoff}},
	{name: "404 is final", script: []rt.Step{{Status: 404}, {Body: item}}, want: "items: 404 Not Found",
		retries: []string{""}, at: []time.Duration{0}},
	{name: "429, Retry-After: 30", script: []rt.Step{{Status: 429, Header: header("Retry-After", "30")}, {Body: item}},
		want: item, retries: []string{"", "1"}, at: []time.Duration{0, 30 * time.Second}, jitter: time.Second},
	{name: "429, Retry-After: an hour", script: []rt.Step{{Status: 429, Header: header("Retry-After", "3600")}, {Body: item}},
		want: "items: 429 Too Many Requests", retries: []string{""}, at: []time.Duration{0}},
	{name: "pushback 250 ms", script: []rt.Step{{Status: 503, Header: header("X-Retry-Pushback-Ms", "250")}, {Body: item}},
		want: item, retries: []string{"", "1"}, at: []time.Duration{0, 250 * time.Millisecond}, jitter: 25 * time.Millisecond},
	{name: "pushback -1: no retry", script: []rt.Step{{Status: 503, Header: header("X-Retry-Pushback-Ms", "-1")}, {Body: item}},
		want: "items: 503 Service Unavailable", retries: []string{""}, at: []time.Duration{0}},
	{name: "reset before the answer", script: []rt.Step{{Fault: rt.Reset}, {Body: item}}, want: item,
		retries: []string{"", "1"}, at: []time.Duration{0, backoff}},
	{name: "reset mid-body", script: []rt.Step{{Body: item, Fault: rt.ResetMidBody, After: 4}},
		want:    "items: reading /v1/items/7: read tcp api.example.com:443: read: connection reset by peer",
		retries: []string{""}, at: []time.Duration{0}},
	{name: "POST: 503 is not retried", post: true, script: []rt.Step{{Status: 503}, {Status: 201, Body: item}},
		want: "items: 503 Service Unavailable", retries: []string{""}, at: []time.Duration{0}},
	{name: "hang until the caller's deadline", deadline: 10 * time.Second, script: []rt.Step{{Fault: rt.Hang}},
		want:    `items: Get "https://api.example.com/v1/items/7": retryhttp: no response after 1 attempt(s): context deadline exceeded`,
		retries: []string{""}, at: []time.Duration{0}},
}

// TestItemsInVirtualTime is Example_retryTable as a test: the SDK's own
// waits and the servers' delays (Retry-After: 30) pass in virtual time,
// so that each arrival can be checked.
func TestItemsInVirtualTime(t *testing.T) {
	for _, tc := range itemCases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, tc.run)
		})
	}
}

func (tc *itemCase) run(t *testing.T) {
	srv := &rt.Server{Script: tc.script}
	sdk := newItems(srv, backoff)
	ctx := t.Context()
	if tc.deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, tc.deadline)
		defer cancel()
	}
	var got string
	var err error
	if tc.post {
		got, err = sdk.create(ctx, item)
		srv.WantBody(t, item)
	} else {
		got, err = sdk.get(ctx, "7")
	}
	if err != nil {
		got = err.Error()
	}
	if got != tc.want {
		t.Errorf("got %s, want %s", got, tc.want)
	}
	srv.WantHeader(t, retryhttp.AttemptsHeader, tc.retries...)
	if tc.jitter == 0 {
		srv.WantArrivals(t, tc.at...)
		return
	}
	for i, a := range srv.Attempts() {
		if a.At < tc.at[i] || a.At > tc.at[i]+tc.jitter {
			t.Errorf("attempt %d: arrived at %v, want %v to %v", a.N, a.At, tc.at[i], tc.at[i]+tc.jitter)
		}
	}
}
