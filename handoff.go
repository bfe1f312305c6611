package retryhttp

import (
	"net/http"
	"sync"
)

// handoff passes a hedged request from the caller's goroutine, sending
// attempt 1, to the hedge loop's, once the hedging delay ends first. mu
// makes the two decide once which of them runs the loop.
type handoff struct {
	h        *hedger
	mu       sync.Mutex
	answered bool // attempt 1 answered first: the caller runs the loop
	looping  bool // the delay ended first: the loop runs on its own
	final    chan final
}

type final struct {
	resp *http.Response
	err  error
}

// answer reports, once attempt 1 has answered, whether the caller's
// goroutine runs the loop; if not, the loop has started and the caller
// hands it the answer.
func (ho *handoff) answer() bool {
	ho.mu.Lock()
	defer ho.mu.Unlock()
	ho.answered = !ho.looping
	return ho.answered
}

// takeOver runs the loop on the timer's goroutine, unless attempt 1 has
// answered already. The next hedge is due at once.
func (ho *handoff) takeOver() {
	ho.mu.Lock()
	if ho.answered {
		ho.mu.Unlock()
		return
	}
	ho.looping = true
	ho.final = make(chan final, 1)
	ho.h.results = make(chan result, ho.h.max+1)
	ho.mu.Unlock()
	resp, err := ho.h.run(nil, 0, 0)
	ho.final <- final{resp, err}
}
