package retryhttptest_test

import (
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/retryhttp/retryhttp"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

func TestAttemptsAreCopies(t *testing.T) {
	srv := script(rt.Step{})
	req := newRequest(t, context.Background(), "PUT", "payload")
	req.Header.Set("A", "1")
	resp, err := srv.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	a := srv.Attempts()[0]
	a.Header.Set("A", "2")
	a.Body[0] = 'P'
	req.Header.Set("A", "3")
	if b := srv.Attempts()[0]; b.Header.Get("A") != "1" || string(b.Body) != "payload" {
		t.Errorf("got header A %q, body %q; want the record unchanged", b.Header.Get("A"), b.Body)
	}
}

func TestRecordOfARequest(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := script(rt.Step{})
			m.run(t, srv, func(t *testing.T, base http.RoundTripper, url string) {
				req, err := http.NewRequest("POST", url+"/v1/items?a=1&b=2", io.NopCloser(strings.NewReader("streamed")))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Idempotency-Key", "k-1")
				resp, err := base.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				a := srv.Attempts()[0]
				wantProto := map[string]string{"HTTP/2": "HTTP/2.0"}[m.name]
				if wantProto == "" {
					wantProto = "HTTP/1.1"
				}
				if a.N != 1 || a.At != 0 || a.Proto != wantProto || a.Method != "POST" || a.Path != "/v1/items" ||
					a.RawQuery != "a=1&b=2" || a.Header.Get("Idempotency-Key") != "k-1" || a.ContentLength != -1 ||
					string(a.Body) != "streamed" || a.BodySize != 8 || a.BodySHA256 != sha256.Sum256([]byte("streamed")) ||
					a.BodyErr != nil || a.Cancelled || !strings.Contains(url, a.Host) {
					t.Errorf("got %+v for POST %s/v1/items?a=1&b=2", a, url)
				}
			})
		})
	}
}

func TestKeepBody(t *testing.T) {
	for _, tc := range []struct {
		keep     int64
		size     int
		wantKept bool
	}{
		{0, rt.DefaultKeepBody, true},
		{0, rt.DefaultKeepBody + 1, false},
		{8, 8, true},
		{8, 9, false},
		{-1, 0, false},
		{-1, 1, false},
	} {
		srv := &rt.Server{Script: []rt.Step{{}}, KeepBody: tc.keep}
		body := strings.Repeat("x", tc.size)
		resp, err := srv.RoundTrip(newRequest(t, context.Background(), "PUT", body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		a := srv.Attempts()[0]
		if kept := a.Body != nil; kept != tc.wantKept || a.BodySize != int64(tc.size) ||
			a.BodySHA256 != sha256.Sum256([]byte(body)) || (kept && string(a.Body) != body) {
			t.Errorf("KeepBody %d, body of %d bytes: got %d bytes kept of %d; want kept %v, and the size and SHA-256",
				tc.keep, tc.size, len(a.Body), a.BodySize, tc.wantKept)
		}
	}
}

// Hedges arrive at once: every one is counted and recorded once, numbered
// in order of arrival.
func TestConcurrentAttemptsAreEachRecordedOnce(t *testing.T) {
	srv := &rt.Server{Choose: func(n int, req *http.Request) rt.Step {
		b, _ := io.ReadAll(req.Body)
		return rt.Step{Body: string(b)}
	}}
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := strings.Repeat("b", i+1)
			resp, err := srv.RoundTrip(newRequest(t, context.Background(), "PUT", body))
			if err != nil {
				t.Error(err)
				return
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(got) != body {
				t.Errorf("request with a body of %d bytes got back %d bytes", len(body), len(got))
			}
			_ = srv.Attempts() // read while others record
		})
	}
	wg.Wait()
	as := srv.Attempts()
	if srv.Count() != n || len(as) != n {
		t.Fatalf("got %d attempts counted, %d recorded; want %d", srv.Count(), len(as), n)
	}
	sizes := map[int64]bool{}
	for i, a := range as {
		if a.N != i+1 || (i > 0 && a.At < as[i-1].At) {
			t.Errorf("attempt %d: got N %d at %v after %v", i+1, a.N, a.At, as[max(i-1, 0)].At)
		}
		sizes[a.BodySize] = true
	}
	if len(sizes) != n {
		t.Errorf("got %d distinct bodies, want %d", len(sizes), n)
	}
}

func TestRecordsStopAtMaxRecords(t *testing.T) {
	srv := script(rt.Step{})
	for range rt.MaxRecords + 1 {
		resp, err := srv.RoundTrip(newRequest(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if n, r := srv.Count(), len(srv.Attempts()); n != rt.MaxRecords+1 || r != rt.MaxRecords {
		t.Errorf("got %d counted, %d recorded; want %d, %d", n, r, rt.MaxRecords+1, rt.MaxRecords)
	}
	r := &reports{}
	if srv.WantAttempts(r, rt.MaxRecords+1); len(r.errs) != 0 {
		t.Errorf("WantAttempts reported %q", r.errs)
	}
}

// Choose sees the attempt's number and its request, body included, and
// may answer by them.
func TestChooseByAttemptAndRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []string
		srv := &rt.Server{Choose: func(n int, req *http.Request) rt.Step {
			b, _ := io.ReadAll(req.Body)
			seen = append(seen, req.Method+" "+string(b)+" "+req.Header.Get(retryhttp.AttemptsHeader))
			if n < 3 {
				return rt.Step{Status: 503}
			}
			return rt.Step{Status: 201}
		}}
		cfg := retryPolicy()
		cfg.Rules[0].Retry.RetryNonIdempotent = true
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		resp, err := tr.RoundTrip(newRequest(t, context.Background(), "POST", "payload"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := []string{"POST payload ", "POST payload 1", "POST payload 2"}
		if resp.StatusCode != 201 || strings.Join(seen, "|") != strings.Join(want, "|") {
			t.Errorf("got status %d, Choose saw %q; want 201, %q", resp.StatusCode, seen, want)
		}
	})
}

// Attempts over HTTP/2 share a connection; a reset of one stream leaves
// the others to answer, as a real server's RST_STREAM does.
func TestStreamResetSparesOtherAttempts(t *testing.T) {
	arrived, resetSeen := make(chan struct{}), make(chan struct{})
	srv := &rt.Server{Choose: func(n int, _ *http.Request) rt.Step {
		if n == 1 {
			close(arrived)
			<-resetSeen // answer once the other stream has been reset
			return rt.Step{Body: "first"}
		}
		return rt.Step{Fault: rt.Reset}
	}}
	ts := srv.StartHTTP2(t)
	client := ts.Client()
	first := make(chan string, 1)
	req := newRequestTo(t, context.Background(), ts.URL)
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			first <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		first <- resp.Proto + " " + string(b)
	}()
	<-arrived
	_, err := client.Do(newRequestTo(t, context.Background(), ts.URL))
	close(resetSeen)
	if errClass(err) != "stream reset" {
		t.Errorf("attempt 2: got %v, want a stream reset", err)
	}
	if got := <-first; got != "HTTP/2.0 first" {
		t.Errorf("attempt 1: got %q, want its answer", got)
	}
}

func newRequestTo(t *testing.T, ctx context.Context, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
