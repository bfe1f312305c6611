package retryhttptest_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// endsAfterErr is a context that ends just after its at-th Err call has
// returned nil: a request cancelled by another goroutine at that instant,
// as a hedge that lost or a caller that gave up is.
type endsAfterErr struct {
	context.Context
	cancel context.CancelFunc
	at     int64
	n      atomic.Int64
}

func (c *endsAfterErr) Err() error {
	err := c.Context.Err()
	if c.n.Add(1) == c.at {
		c.cancel()
	}
	return err
}

// A request that ends after the server in memory has chosen to trickle
// its answer, but before the trickle watches the request, ends the
// trickle with no race and no panic. The watch registered on a context
// already ended runs at once, on a goroutine of its own, while the
// response is still being built; synctest.Wait lets it run before the
// body is touched. RoundTrip looks at the request's context twice when
// nothing ends it: before it reads the body, and after the step's delay;
// the request ends just after the second. Run with -race.
func TestTrickleRequestEndingAsTheAnswerIsBuilt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Script: []rt.Step{{Body: "slow body", Trickle: rt.Rate{Bytes: 1, Every: time.Millisecond}}}}
		for range 20 {
			base, cancel := context.WithCancel(context.Background())
			ctx := &endsAfterErr{Context: base, cancel: cancel, at: 2}
			req, err := http.NewRequestWithContext(ctx, "GET", "http://api.test/", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.RoundTrip(req)
			synctest.Wait()
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			cancel()
		}
		if got := srv.Count(); got != 20 {
			t.Errorf("server counted %d attempts, want 20", got)
		}
	})
}
