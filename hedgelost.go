package retryhttp

import "time"

// The hedges that lost: once one attempt of a hedged request wins (or the
// request ends), every other is cancelled, drained and closed, and the
// winner goes back within drainTimeout even when a loser's base ignores
// its cancellation.

// cancelAll cancels every attempt still in flight and closes what they
// got. It waits for them within drainTimeout, so that
// a base that ignores cancellation cannot hold the request up: attempts
// still out then are counted as cancelled now, and a goroutine of their
// own closes what they get, on the channel they report to, which the
// request gives up. The attempts whose results were in before any was
// cut off ended on their own, and are taken as such (see beaten).
func (h *hedger) cancelAll(c *call, cause error) {
	if h.flying == 0 {
		return
	}
	early := 0 // results in, of attempts that ended on their own
	if !h.cutOff {
		early = len(h.results) // only the loop receives: these are there
		h.cutOff = true
	}
	for _, f := range h.flights {
		if f.live && f.cancel != nil {
			f.cancel(cause)
		}
	}
	tail := c.hedgeDelay()
	timeout := time.NewTimer(drainTimeout)
	defer timeout.Stop()
	var panicked any // a loser's base's, raised once every attempt is closed
	defer func() {
		if panicked != nil {
			panic(panicked)
		}
	}()
	for h.flying > 0 {
		select {
		case r := <-h.results:
			ended := early > 0
			early--
			switch {
			case r.unprepared:
				// Never sent: nothing to cut off or to report, and no
				// latency of its host to learn.
				h.flights[r.n] = flight{}
				h.flying--
				continue
			case ended && r.panicked == nil:
				h.beaten(c, &r)
				continue
			}
			h.cut(c, r.n, tail)
			if r.panicked != nil && panicked == nil {
				panicked = r.panicked
			}
			h.loser(c, &r)
		case <-timeout.C:
			left := h.flying
			for n, f := range h.flights {
				if f.live {
					h.cut(c, n, tail)
					r := result{n: n, hedge: n > 1, err: cause}
					c.attemptDone(&r, outCancelled)
				}
			}
			go reap(h.results, left)
			h.results = nil
		}
	}
}

// beaten takes r, the result of an attempt that ended on its own (an
// answer, an error) before another won and it could be cut off. Its
// outcome reaches the hooks and teaches its host as any attempt's does,
// in the host's budgets, the Transport's and the fleet's alike, its holds
// and its pace (an answer that came first would have been taken so), but
// for one that would have been sent again transparently, which counts
// nowhere. Its answer is discarded, even when a hook or the fleet panics.
func (h *hedger) beaten(c *call, r *result) {
	h.flights[r.n] = flight{}
	h.flying--
	defer r.discard()
	if _, _, again := c.absorb(r, c.judge(r)); again {
		c.unadmit(r.n) // it will not be sent again: the request is over
	}
}

// loser reports r, an attempt cut off, to the hooks and discards its
// answer, even when a hook panics.
func (h *hedger) loser(c *call, r *result) {
	defer r.discard()
	c.attemptDone(r, outCancelled)
}

// cut takes attempt n out of flight, cut off; past tail, the hedging
// delay, its time so far counts as a latency of its host.
func (h *hedger) cut(c *call, n int, tail time.Duration) {
	f := h.flights[n]
	h.flights[n] = flight{}
	h.flying--
	c.unadmit(n)
	if took := time.Since(f.started); took >= tail {
		// Cut off past the delay, it was as slow as the tail that
		// hedges are sent for, and the time it took, a lower bound,
		// counts there. One cut off sooner tells nothing of the tail:
		// counted, it would drag the delay down and send more hedges.
		c.host.latency().add(took)
	}
}

// reap closes what the n attempts still to report on results get: they
// were cancelled, and their request has ended. A base that panics on one
// of them then has no caller to reach: its panic is dropped with it.
func reap(results <-chan result, n int) {
	for range n {
		r := <-results
		r.abort(errHedgeLost)
	}
}
