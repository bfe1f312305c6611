package retryhttptest_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// In memory, every wait of a script runs in a synctest bubble's virtual
// time: these tests check waits to the nanosecond and take microseconds.

func TestRetryAfterInVirtualTime(t *testing.T) {
	wall := time.Now()
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Script: []rt.Step{
			{Status: 503, Header: http.Header{"Retry-After": {"30"}}},
			{Body: "ok"},
		}}
		client := &http.Client{Transport: &retryhttp.Transport{Base: srv}} // policy.Default
		resp, err := client.Get("https://api.example.com/v1/items")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "ok" {
			t.Errorf("got %d %q, want 200 \"ok\"", resp.StatusCode, body)
		}
		srv.WantHeader(t, retryhttp.AttemptsHeader, "", "1")
		// 30 s, and retryhttp's jitter of under a tenth, at most 1 s.
		if at := srv.Attempts()[1].At; at < 30*time.Second || at >= 31*time.Second {
			t.Errorf("attempt 2 arrived at %v, want 30s to 31s", at)
		}
	})
	t.Logf("30 s of Retry-After took %v of wall time", time.Since(wall))
}

func TestDelayTakesItsTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Delay: 2 * time.Second, Body: "late"})
		start := time.Now()
		resp, err := srv.RoundTrip(newRequest(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("answered after %v, want 2s", d)
		}
	})
}

func TestTrickleSendsPiecesAtItsRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Body: "0123456789", Trickle: rt.Rate{Bytes: 4, Every: 250 * time.Millisecond}})
		start := time.Now()
		resp, err := srv.RoundTrip(newRequest(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if d := time.Since(start); d != 0 {
			t.Errorf("headers after %v, want at once", d)
		}
		var pieces []string
		var times []time.Duration
		buf := make([]byte, 64)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				pieces = append(pieces, string(buf[:n]))
				times = append(times, time.Since(start))
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		want := []string{"0123", "4567", "89"}
		wantTimes := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond}
		if !equal(pieces, want) || !equal(times, wantTimes) {
			t.Errorf("got pieces %q at %v, want %q at %v", pieces, times, want, wantTimes)
		}
		if err := srv.Wait(context.Background()); err != nil || srv.Attempts()[0].Cancelled {
			t.Errorf("a trickle read to its end: got %v, cancelled %v", err, srv.Attempts()[0].Cancelled)
		}
	})
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A trickle the client stops reading is over for the server when the
// body is closed: the attempt ends, cancelled, and Wait returns.
func TestClosingATrickleEndsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Body: "0123456789", Trickle: rt.Rate{Every: time.Hour}})
		resp, err := srv.RoundTrip(newRequest(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() {
			_, err := resp.Body.Read(make([]byte, 1))
			done <- err
		}()
		synctest.Wait() // the read waits for its piece
		resp.Body.Close()
		if err := <-done; err != http.ErrBodyReadAfterClose {
			t.Errorf("read during Close: got %v, want http.ErrBodyReadAfterClose", err)
		}
		if err := srv.Wait(context.Background()); err != nil || !srv.Attempts()[0].Cancelled {
			t.Errorf("got %v, cancelled %v; want the attempt ended, cancelled", err, srv.Attempts()[0].Cancelled)
		}
	})
}

func TestHangEndsAtThePerAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Fault: rt.Hang}, rt.Step{Body: "ok"})
		cfg := retryPolicy()
		cfg.Rules[0].Retry.PerAttemptTimeout = 5 * time.Second
		resp, err := (&retryhttp.Transport{Base: srv, Policy: cfg}).RoundTrip(newRequest(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.WantArrivals(t, 0, 5*time.Second+time.Millisecond)
		if a := srv.Attempts(); !a[0].Cancelled || a[1].Cancelled {
			t.Errorf("got cancelled %v, %v; want the hung attempt cancelled", a[0].Cancelled, a[1].Cancelled)
		}
	})
}

// A slow first answer is beaten by a hedge, which the server sees 50 ms
// later; the first is cancelled at once.
func TestHedgeBeatsASlowAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Delay: time.Second, Body: "slow"}, rt.Step{Delay: 10 * time.Millisecond, Body: "fast"})
		cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 50 * time.Millisecond}}}}
		start := time.Now()
		resp, err := (&retryhttp.Transport{Base: srv, Policy: cfg}).RoundTrip(newRequest(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "fast" || time.Since(start) != 60*time.Millisecond {
			t.Errorf("got %q after %v, want \"fast\" after 60ms", body, time.Since(start))
		}
		srv.WantArrivals(t, 0, 50*time.Millisecond)
		srv.WantHeader(t, retryhttp.AttemptsHeader, "", "1")
		if err := srv.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if a := srv.Attempts(); !a[0].Cancelled || a[1].Cancelled {
			t.Errorf("got cancelled %v, %v; want the slow attempt cancelled", a[0].Cancelled, a[1].Cancelled)
		}
	})
}

// A trickle whose request ends is over for the server then, whether or
// not the client reads or closes the body, as over a socket, where the
// client's transport closes the connection: the attempt ends, cancelled,
// and Wait returns.
func TestATrickleEndsWithItsRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Body: "0123456789", Trickle: rt.Rate{Every: time.Hour}})
		ctx, cancel := context.WithCancel(t.Context())
		resp, err := srv.RoundTrip(newRequest(t, ctx, "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		cancel()
		wait, stop := context.WithTimeout(t.Context(), time.Minute)
		defer stop()
		if err := srv.Wait(wait); err != nil || !srv.Attempts()[0].Cancelled {
			t.Errorf("got %v, cancelled %v; want the attempt ended, cancelled", err, srv.Attempts()[0].Cancelled)
		}
	})
}
