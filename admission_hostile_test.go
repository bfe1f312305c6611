package retryhttp_test

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// Whatever becomes of its requests (a classifier that panics, a caller
// that gives up, a hedge cancelled, a body never read or closed at once,
// a pace or a hold that refuses them), a host's concurrency slots all
// come back, and a request refused before it was sent has its body
// closed once.
func TestAdmissionSlotsComeBackWhateverHappens(t *testing.T) {
	rules := map[string]*policy.Config{
		"retry": retryConfig(4, 500, 503),
		"hedge": hedgeConfig(3, 20*time.Millisecond, 500, 503),
	}
	for name, cfg := range rules {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rnd := rand.New(rand.NewPCG(1, 2))
				var mu sync.Mutex
				srv := &rt.Server{Choose: func(int, *http.Request) rt.Step {
					mu.Lock()
					defer mu.Unlock()
					steps := []rt.Step{
						{Delay: 30 * time.Millisecond, Body: "ok"},
						{Status: 503, Header: http.Header{"Retry-After": {"1"}}},
						{Status: 429},
						{Status: 500},
						{Delay: time.Second, Body: "slow"},
						{Status: 200, Header: http.Header{"Ratelimit": {`"d";r=2;t=1`}, "Ratelimit-Policy": {`"d";q=5;w=1`}}},
						{Fault: rt.Reset},
					}
					return steps[rnd.IntN(len(steps))]
				}}
				cfg.Admission = &policy.Admission{MaxConcurrency: 4, MaxWait: 200 * time.Millisecond}
				cfg.Hold = &policy.Hold{}
				var calls atomic.Int64
				tr := &retryhttp.Transport{Base: srv, Policy: cfg,
					Classify: func(int, *http.Response, error) retryhttp.Verdict {
						if calls.Add(1)%7 == 0 {
							panic("the classifier is broken")
						}
						return retryhttp.UsePolicy
					}}
				var wg sync.WaitGroup
				var unsentOpen atomic.Int64
				for i := range 200 {
					time.Sleep(10 * time.Millisecond)
					wg.Go(func() {
						defer func() { _ = recover() }()
						ctx, cancel := context.WithTimeout(t.Context(), time.Duration(1+i%5)*300*time.Millisecond)
						defer cancel()
						if i%11 == 0 {
							go func() { time.Sleep(15 * time.Millisecond); cancel() }()
						}
						var closes atomic.Int64
						body := &closeCounter{ReadCloser: io.NopCloser(strings.NewReader("payload")), n: &closes}
						req, err := http.NewRequestWithContext(ctx, "PUT", "https://api.test/x", body)
						require.NoError(t, err)
						resp, err := tr.RoundTrip(req)
						if err != nil {
							var e *retryhttp.Error
							if assert.ErrorAs(t, err, &e) && e.Attempts == 0 && ctx.Err() == nil {
								assert.Equal(t, int64(1), closes.Load(), "a request refused unsent closes its body once: %v", err)
								unsentOpen.Add(1)
							}
							return
						}
						switch i % 3 {
						case 0:
							resp.Body.Close() // at once, unread
						case 1:
							readAll(t, resp)
						case 2: // never read, never closed
						}
					})
				}
				wg.Wait()
				time.Sleep(2 * time.Minute) // every slow answer and hedge ended
				synctest.Wait()
				hs := tr.Stats().Hosts["api.test"]
				assert.Zero(t, hs.InFlight, "every slot came back")
				t.Logf("refused unsent: %d; limit %d; shed %d, paced %d, held %d", unsentOpen.Load(), hs.ConcurrencyLimit,
					tr.Stats().Total.Shed, tr.Stats().Total.PaceRefusals, tr.Stats().Total.HoldRefusals)
			})
		})
	}
}
