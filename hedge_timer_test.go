package retryhttp_test

import (
	"net/http"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// A pooled hedger keeps its timer for the next request. Under the timer
// semantics a program may still choose (GODEBUG=asynctimerchan=1, those of
// Go before 1.23), a tick that fired unread would stay in the channel
// through Stop and Reset and send the next request's hedge at once; it is
// drained, and the next request waits its hedging delay. The scenario
// runs in a child process with that setting.
func TestPooledHedgeTimerCarriesNoTick(t *testing.T) {
	if os.Getenv("RETRYHTTP_REVIEW_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPooledHedgeTimerCarriesNoTick$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "RETRYHTTP_REVIEW_CHILD=1", "GODEBUG=asynctimerchan=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("with GODEBUG=asynctimerchan=1:\n%s", out)
		}
		return
	}
	var n atomic.Int64
	srv := &rt.Server{Choose: func(i int, req *http.Request) rt.Step {
		n.Store(int64(i))
		switch i {
		case 1: // request A, attempt 1: slow
			return rt.Step{Delay: 300 * time.Millisecond, Body: "a"}
		case 2: // request A, its hedge: a 503 that forbids further hedges; the armed timer fires unread
			return rt.Step{Status: 503, Header: http.Header{"X-Retry-Pushback-Ms": {"-1"}}}
		}
		return rt.Step{Delay: 30 * time.Millisecond, Body: "b"} // request B: answered before its hedging delay
	}}
	cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
		Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 50 * time.Millisecond, NonFatalStatusCodes: []int{503}}}}}
	tr := &retryhttp.Transport{Base: srv, Policy: cfg}
	for _, want := range []int64{2, 3} { // A: attempts 1 and 2; B: attempt 3 alone
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := n.Load(); got != want {
			t.Errorf("the server has seen %d attempts, want %d: the second request hedged at once", got, want)
		}
	}
}
