package retryhttp_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// TestRandomContract sends requests through random scripts, policies,
// verdicts and cancellations, in virtual time, and checks the RoundTripper
// contract and that nothing outlives a request.
func TestRandomContract(t *testing.T) {
	for seed := range uint64(500) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { randomCase(t, seed) })
		})
	}
	t.Log("panics:", panics.Load())
}

var panics atomic.Int64

func randomCase(t *testing.T, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, 7))
	steps := []rt.Step{
		{Body: "ok"},
		{Status: 503, Body: "busy"},
		{Status: 503, Body: big},
		{Status: 429, Header: http.Header{"Retry-After": {"1"}}},
		{Status: 503, Header: http.Header{"Retry-After": {"1"}}, Body: big},
		{Fault: rt.Reset},
		{Delay: 300 * time.Millisecond, Body: "slow"},
		{Status: 503, Trickle: rt.Rate{Bytes: 1, Every: 30 * time.Millisecond}, Body: "trickle"},
		{Body: "okok", Trickle: rt.Rate{Bytes: 1, Every: 80 * time.Millisecond}},
	}
	var choice [8]int
	for i := range choice {
		choice[i] = rnd.IntN(len(steps))
	}
	srv := &rt.Server{Choose: func(n int, req *http.Request) rt.Step {
		st := steps[choice[min(n, len(choice))-1]]
		if st.Fault == rt.NoFault {
			h := http.Header{"X-Got": {req.Header.Get(retryhttp.AttemptsHeader)}}
			for k, v := range st.Header {
				h[k] = v
			}
			st.Header = h
		}
		return st
	}}
	base := &tracked{next: srv}
	var cfg *policy.Config
	switch rnd.IntN(3) {
	case 0:
		cfg = retryConfig(4, 503, 429)
		cfg.Hold = &policy.Hold{}
	case 1:
		cfg = &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 50 * time.Millisecond, NonFatalStatusCodes: []int{503, 429}}}},
			Hold: &policy.Hold{}}
	default:
		cfg = retryConfig(3, 503)
		cfg.Rules[0].Retry.PerAttemptTimeout = 200 * time.Millisecond
	}
	where, when := rnd.IntN(10), 1+rnd.IntN(3)
	var boomN atomic.Int64
	boom := func(at, attempt int) {
		if at == where && attempt >= when && boomN.Add(1) == 1 {
			panic("boom")
		}
	}
	var pbase http.RoundTripper = roundTripFunc(func(req *http.Request) (*http.Response, error) {
		n := 1
		if v := req.Header.Get(retryhttp.AttemptsHeader); v != "" {
			fmt.Sscan(v, &n)
			n++
		}
		boom(7, n)
		return base.RoundTrip(req)
	})
	tr := &retryhttp.Transport{Base: pbase, Policy: cfg, Buffer: retryhttp.BufferLimits{PerRequest: 1500},
		Hooks: &retrytrace.Hooks{
			AttemptStart: func(a retrytrace.AttemptStartInfo) { boom(1, a.Attempt) },
			AttemptDone:  func(a retrytrace.AttemptDoneInfo) { boom(2, a.Attempt) },
			Wait:         func(a retrytrace.WaitInfo) { boom(3, a.Attempt) },
			Refused:      func(a retrytrace.RefusedInfo) { boom(4, a.Attempt) },
			Done:         func(a retrytrace.DoneInfo) { boom(5, a.Attempts) },
		}}
	if rnd.IntN(2) == 0 {
		v := rnd.IntN(5)
		tr.Classify = func(attempt int, resp *http.Response, err error) retryhttp.Verdict {
			boom(6, attempt)
			switch v {
			case 0:
				return retryhttp.Retryable
			case 1:
				return retryhttp.RetryableUnprocessed.After(50 * time.Millisecond)
			case 2:
				if resp != nil {
					retryhttp.PeekBody(resp, 10)
				}
				return retryhttp.UsePolicy
			case 3:
				return retryhttp.Final
			}
			return retryhttp.UsePolicy.After(0)
		}
	}
	var wg sync.WaitGroup
	for g := range 3 {
		rnd := rand.New(rand.NewPCG(seed, uint64(g)))
		wg.Go(func() {
			for range 3 {
				ctx, cancel := context.WithCancel(context.Background())
				if rnd.IntN(2) == 0 {
					time.AfterFunc(time.Duration(rnd.IntN(1500))*time.Millisecond, cancel)
				}
				if rnd.IntN(6) == 0 {
					ctx = retryhttp.WithoutRetries(ctx)
				}
				if rnd.IntN(3) == 0 {
					var c2 context.CancelFunc
					ctx, c2 = context.WithTimeout(ctx, time.Duration(rnd.IntN(2000))*time.Millisecond)
					defer c2()
				}
				method, body := "GET", ""
				if rnd.IntN(2) == 0 {
					method, body = "PUT", strings.Repeat("b", rnd.IntN(3)*1000)
				}
				req, _ := http.NewRequestWithContext(ctx, method, "https://api.test/x", nil)
				var srcClosed atomic.Int64
				if body != "" {
					req.Body = &closeCounter{ReadCloser: io.NopCloser(strings.NewReader(body)), n: &srcClosed}
					if rnd.IntN(2) == 0 {
						gets := 1
						req.GetBody = func() (io.ReadCloser, error) {
							gets++
							boom(8, gets)
							return io.NopCloser(strings.NewReader(body)), nil
						}
						req.ContentLength = int64(len(body))
					}
				}
				var resp *http.Response
				var err error
				func() {
					defer func() {
						if p := recover(); p != nil && p != "boom" {
							panic(p)
						} else if p != nil {
							err, resp = fmt.Errorf("panicked"), nil
							panics.Add(1)
						}
					}()
					resp, err = tr.RoundTrip(req)
				}()
				if (resp == nil) == (err == nil) {
					t.Errorf("got resp %v and err %v", resp, err)
				}
				if resp != nil {
					if got, want := resp.Header.Get(retryhttp.AttemptsHeader), resp.Header.Get("X-Got"); got != want {
						t.Errorf("X-Retry-Attempts %q, the attempt carried %q", got, want)
					}
					if resp.Request != req {
						t.Errorf("resp.Request is not the caller's")
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				cancel()
				time.Sleep(time.Second)
				if body != "" && srcClosed.Load() != 1 {
					t.Errorf("caller's body closed %d times", srcClosed.Load())
				}
			}
		})
	}
	wg.Wait()
	synctest.Wait()
	{
		if n := base.open(); n != 0 {
			t.Errorf("%d response bodies left open (choices %v)", n, choice)
			base.closed.Add(n)
		}
		if b := tr.Stats().Buffer.Buffered; b != 0 {
			t.Errorf("buffer room held: %d", b)
		}
	}
}
