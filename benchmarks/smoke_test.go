package benchmarks

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The smoke tests run every scenario once on loopback at the Smoke sizes,
// and check what does not depend on the machine's speed.

func TestSmokeOutage(t *testing.T) {
	max := float64(LoadSpec().MaxAttempts)
	for _, p := range Peers() {
		t.Run(p.Name, func(t *testing.T) {
			r := Outage(p, Smoke.Storm)
			assert.Zero(t, r.OK, "answers 200")
			switch {
			case p.Caps.Hedges && !p.Caps.Statuses:
				// Any answer wins, but answers slower than the delay
				// (on a busy machine) are hedged.
				assert.GreaterOrEqual(t, r.PerRequest(), 1.0, "server requests per request")
				assert.LessOrEqual(t, r.PerRequest(), max, "server requests per request")
			case !extraAttempts(p):
				assert.Equal(t, 1.0, r.PerRequest(), "server requests per request")
			case p.Caps.Budget:
				assert.LessOrEqual(t, r.PerRequest(), max, "server requests per request")
			default:
				assert.Equal(t, max, r.PerRequest(), "server requests per request")
			}
			if !p.Caps.Budget || p.Caps.KeepsAnswer {
				assert.Zero(t, r.Errors, "requests with no answer")
			}
		})
	}
}

func TestSmokeFlaky(t *testing.T) {
	max := float64(LoadSpec().MaxAttempts)
	for _, p := range Peers() {
		t.Run(p.Name, func(t *testing.T) {
			r := Flaky(p, Smoke.Storm)
			switch {
			case extraAttempts(p) && (!p.Caps.Budget || p.Caps.KeepsAnswer):
				assert.Zero(t, r.Errors, "requests with no answer")
				assert.Equal(t, 1.0, r.Success(), "share answered 200")
			case extraAttempts(p):
				// A refused retry fails the request with an error.
				assert.Equal(t, r.Requests, r.OK+r.Errors, "requests answered 200 or failed")
			default:
				assert.Less(t, r.Success(), 1.0, "share answered 200")
			}
			if p.Caps.Hedges || extraAttempts(p) {
				// A hedger without statuses still hedges answers slower
				// than its delay.
				assert.GreaterOrEqual(t, r.PerRequest(), 1.0, "server requests per request")
				assert.LessOrEqual(t, r.PerRequest(), max, "server requests per request")
			} else {
				assert.Equal(t, 1.0, r.PerRequest(), "server requests per request")
			}
		})
	}
}

func TestSmokeTail(t *testing.T) {
	scenarios := []struct {
		name  string
		spec  Spec
		peers []Peer
		run   func(Peer, Load) Result
	}{
		{"tail", TailSpec(), HedgePeers(), func(p Peer, l Load) Result { return TailLatency(p, TailSpec(), l) }},
		{"short-delay", ShortDelaySpec(), fixedDelay(HedgePeers()), func(p Peer, l Load) Result { return TailLatency(p, ShortDelaySpec(), l) }},
		{"shift", TailSpec(), HedgePeers(), TailShift},
	}
	for _, sc := range scenarios {
		for _, p := range sc.peers {
			t.Run(sc.name+"/"+p.Name, func(t *testing.T) {
				r := sc.run(p, Smoke.Tail)
				assert.Zero(t, r.Errors)
				assert.Equal(t, r.Requests, r.OK)
				require.Len(t, r.Latencies, r.Requests)
				assert.LessOrEqual(t, r.Quantile(0.5), r.Quantile(0.99))
				switch {
				case p.Caps.LoadBudget:
					// The budget starts empty, so a run is sent at most
					// MaxExtraLoad of its requests as hedges.
					assert.LessOrEqual(t, r.PerRequest(), 1+sc.spec.MaxExtraLoad, "server requests per request")
				case p.Caps.Hedges:
					assert.GreaterOrEqual(t, r.PerRequest(), 1.0, "server requests per request")
					assert.LessOrEqual(t, r.PerRequest(), float64(sc.spec.MaxAttempts), "server requests per request")
				default:
					assert.Equal(t, 1.0, r.PerRequest(), "server requests per request")
				}
			})
		}
	}
}

func TestSmokeRetryAfter(t *testing.T) {
	for _, p := range Peers() {
		t.Run(p.Name, func(t *testing.T) {
			o := RetryAfterDeadline(p, Smoke.Deadline)
			switch {
			case p.Caps.Retries && !p.Caps.Deadline:
				assert.True(t, o.DeadlineExceeded(), "got %d, %v; want the deadline", o.Status, o.Err)
				assert.Equal(t, int64(1), o.ServerRequests)
			case p.Caps.Hedges:
				assert.True(t, o.Status == 429 || o.DeadlineExceeded(), "got %d, %v; want 429 or the deadline", o.Status, o.Err)
			default:
				assert.NoError(t, o.Err)
				assert.Equal(t, http.StatusTooManyRequests, o.Status)
				assert.Equal(t, int64(1), o.ServerRequests)
			}
		})
	}
}

func TestSmokeKeepAlive(t *testing.T) {
	for _, p := range Peers() {
		for _, def := range []bool{true, false} {
			name := p.Name + "/pooled-base"
			if def {
				name = p.Name + "/default-base"
			}
			t.Run(name, func(t *testing.T) {
				r := KeepAlive(p, def, Smoke.KeepAlive)
				assert.Zero(t, r.Errors)
				assert.Equal(t, r.Requests, r.OK)
				assert.Positive(t, r.Conns)
			})
		}
	}
}

func TestSmokeBodies(t *testing.T) {
	srv := NewServer(Discard())
	defer srv.Close()
	for _, p := range Peers() {
		t.Run(p.Name, func(t *testing.T) {
			base := newBase(1)
			defer base.close()
			client := &http.Client{Transport: p.New(EverydaySpec(), base)}
			status, err := get(client, srv.URL)
			require.NoError(t, err)
			assert.Equal(t, 200, status)
			if p.Caps.Body == BodyShared {
				return
			}
			assert.NoError(t, Post(client, srv.URL, make([]byte, 1<<10)))
			for _, known := range []bool{false, true} {
				_, err = Upload(client, srv.URL, Smoke.Upload, known, false)
				assert.NoError(t, err, "upload, length known: %v", known)
			}
		})
	}
}

// TestBaseClosesLeaks checks that a run's base closes a connection whose
// answer was never closed, as failsafe-go leaves those it retries.
func TestBaseClosesLeaks(t *testing.T) {
	srv := NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(make([]byte, 1<<20)) // more than the client reads ahead
	}))
	defer srv.Close()
	b := newBase(1)
	resp, err := (&http.Client{Transport: b}).Get(srv.URL)
	require.NoError(t, err)
	b.close()
	_, err = io.ReadAll(resp.Body)
	assert.Error(t, err, "reading a leaked body after close")
	resp.Body.Close()
}
