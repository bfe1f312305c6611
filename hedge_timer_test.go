package retryhttp

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// A pooled hedger keeps its timer for the next request. Under the timer
// semantics a program may still choose (GODEBUG=asynctimerchan=1, those of
// Go before 1.23), a tick that fired unread would stay in the channel
// through Stop and Reset and send the next request's hedge at once; finish
// drains it. The check runs in a child process with that setting, where
// testing/synctest is not available: it waits for the tick to land, with
// no assumption on how fast the machine is, and then looks at the channel
// the next request would use.
func TestPooledHedgeTimerCarriesNoTick(t *testing.T) {
	if os.Getenv("RETRYHTTP_TIMER_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPooledHedgeTimerCarriesNoTick$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "RETRYHTTP_TIMER_CHILD=1", "GODEBUG=asynctimerchan=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("with GODEBUG=asynctimerchan=1:\n%s", out)
		}
		return
	}
	var c call
	h := &c.hedger
	h.start()
	h.arm(time.Millisecond, nil, nil) // a next hedge is due, and then no longer read: the request ends first
	for len(h.timer.C) == 0 {
		runtime.Gosched() // the tick lands in the channel's buffer, unread
	}
	h.finish(&c)
	next := h.keepable()
	next.start()
	select {
	case <-next.timer.C:
		t.Fatal("the next request's timer carried the last request's tick: its hedge would go at once")
	default:
	}
}
