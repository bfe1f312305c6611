package benchmarks

import (
	"math/rand/v2"
	"net/http"
	"time"
)

// TailHost is a healthy host with a heavy latency tail: it answers each
// attempt 200 after [TailFast], or after [TailSlow] with probability
// [TailSlowRate], drawn per arrival from a generator seeded with its
// seed. Its capacity is never reached: an answer's latency is its own
// draw whatever the load, as on a host at half its capacity, so that a
// client's latencies are the host's and nothing else.
type TailHost struct {
	ledger
	rng *rand.Rand // guarded by ledger.mu, not safe for concurrent use
}

// NewTailHost returns a TailHost whose draws come from seed.
func NewTailHost(seed uint64) *TailHost {
	return &TailHost{ledger: newLedger(), rng: rand.New(rand.NewPCG(seed, seed))}
}

// RoundTrip implements http.RoundTripper.
func (h *TailHost) RoundTrip(req *http.Request) (*http.Response, error) {
	now := time.Now()
	h.mu.Lock()
	d := TailFast
	if h.rng.Float64() < TailSlowRate {
		d = TailSlow
	}
	h.record(req, now, now.Add(d), http.StatusOK)
	h.mu.Unlock()
	return reply(req, now, now.Add(d), http.StatusOK, nil)
}
