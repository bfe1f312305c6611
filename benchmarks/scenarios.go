package benchmarks

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// trackingBase is the transport every peer sends through in the load scenarios: a
// net/http transport that keeps as many idle connections per host as
// there are workers, so that connections opened measure the peer, not the
// pool. It remembers every connection it dials, so that a run can close
// them all at its end: a peer that never closes the body of an answer it
// discards leaves that connection in use for good, and the next run
// would inherit its file descriptors.
type trackingBase struct {
	*http.Transport
	mu    sync.Mutex // guards conns
	conns []net.Conn
}

func newBase(workers int) *trackingBase {
	b := &trackingBase{Transport: &http.Transport{
		MaxIdleConnsPerHost: workers, MaxIdleConns: 4 * workers, IdleConnTimeout: time.Minute,
	}}
	var d net.Dialer
	b.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err == nil {
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
		}
		return c, err
	}
	return b
}

// close closes every connection b dialed, idle, in use or leaked.
func (b *trackingBase) close() {
	b.CloseIdleConnections()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		c.Close()
	}
	b.conns = nil
}

// closeIdle closes rt's idle connections when it can.
func closeIdle(rt http.RoundTripper) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RunOn runs l through peer p, built from s over a fresh pooled base,
// against a server answering with h.
func RunOn(p Peer, s Spec, h http.Handler, l Load) Result {
	srv := NewServer(h)
	defer srv.Close()
	b := newBase(l.Workers)
	defer b.close()
	return Run(&http.Client{Transport: p.New(s, b)}, srv, l)
}

// Seeds of the random servers, fixed so that runs compare.
const (
	FlakySeed = 7
	TailSeed  = 42
)

// Outage runs l against a server that answers every request 503.
func Outage(p Peer, l Load) Result { return RunOn(p, LoadSpec(), Failing(1, 1), l) }

// Flaky runs l against a server that answers 10% of requests 503.
func Flaky(p Peer, l Load) Result { return RunOn(p, LoadSpec(), Failing(0.1, FlakySeed), l) }

// TailLatency runs l under s against a [HeavyTail] server.
func TailLatency(p Peer, s Spec, l Load) Result { return RunOn(p, s, HeavyTail(TailSeed), l) }

// TailShift runs l under [TailSpec] against a [ShiftingTail] server whose
// fast answers slow down once it has seen half as many arrivals as l has
// requests.
func TailShift(p Peer, l Load) Result {
	return RunOn(p, TailSpec(), ShiftingTail(TailSeed, int64(l.Requests/2)), l)
}

// KeepAlive runs l through p against a server answering 200, with
// http.Client.Timeout set, over p's own default base when defaultBase is
// set and over a pooled base otherwise, and returns what was seen.
func KeepAlive(p Peer, defaultBase bool, l Load) Result {
	srv := NewServer(OK())
	defer srv.Close()
	var rt http.RoundTripper
	if defaultBase {
		rt = p.New(EverydaySpec(), nil)
	} else {
		b := newBase(l.Workers)
		defer b.close()
		rt = p.New(EverydaySpec(), b)
	}
	defer closeIdle(rt)
	defer closeIdle(http.DefaultTransport)
	return Run(&http.Client{Transport: rt, Timeout: time.Minute}, srv, l)
}

// Outcome is what one request under a deadline came to.
type Outcome struct {
	// Status is the answer's status, 0 when there was none.
	Status int
	// Err is the error when there was no answer.
	Err error
	// Elapsed is the time until the answer or the error.
	Elapsed time.Duration
	// ServerRequests is what the server got.
	ServerRequests int64
}

// DeadlineExceeded reports whether the request failed with the deadline.
func (o Outcome) DeadlineExceeded() bool { return errors.Is(o.Err, context.DeadlineExceeded) }

// RetryAfterDeadline sends one GET through p, under a context deadline,
// to a server that answers 429 with Retry-After: 120.
func RetryAfterDeadline(p Peer, deadline time.Duration) Outcome {
	srv := NewServer(RetryAfter(http.StatusTooManyRequests, 120))
	defer srv.Close()
	b := newBase(1)
	defer b.close()
	client := &http.Client{Transport: p.New(EverydaySpec(), b)}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if err != nil {
		return Outcome{Err: err}
	}
	start := time.Now()
	var o Outcome
	resp, err := client.Do(req)
	if err == nil {
		o.Status = resp.StatusCode
		resp.Body.Close()
	}
	o.Err, o.Elapsed, o.ServerRequests = err, time.Since(start), srv.Hits()
	return o
}
