package benchmarks

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Host is a scripted server in memory, the Base of every client of an
// overload run ([Scenario.Run]): an [http.RoundTripper] that decides each attempt's
// answer and the time of that answer when the attempt arrives, then holds
// the attempt until then. No socket is involved, so that a run fits in a
// testing/synctest bubble and its time is virtual.
//
// A Host never notices that a caller gave up: the work it planned for an
// attempt whose context ended is done all the same, and only the caller
// stops waiting (it gets the context's error at once). Hosts are safe for
// concurrent use.
type Host interface {
	http.RoundTripper
	// Attempts returns every attempt the host has seen, in the order of
	// arrival.
	Attempts() []Attempt
}

// TargetURL is what every request of an overload run asks for; the hosts
// answer whatever is asked.
const TargetURL = "http://api.test/v1/items"

// Attempt is one attempt as a [Host] saw it. Times are since the host was
// built, which [Scenario.Run] does at the start of the run.
type Attempt struct {
	// Request is the number [Scenario.Run] gave the request this attempt belongs
	// to (see [WithRequestID]), or -1 when it carried none.
	Request int64
	// Arrived is when the attempt reached the host; Answered, when the
	// host answered it or would have, had its caller still waited.
	Arrived, Answered time.Duration
	// Status is the answer's status.
	Status int
}

// Latency is how long the host took over the attempt, queueing included.
func (a Attempt) Latency() time.Duration { return a.Answered - a.Arrived }

// requestIDKey carries a request's number in its context.
type requestIDKey struct{}

// WithRequestID returns ctx carrying the request number id, which a [Host]
// records with every attempt made under it: retries and hedges carry
// their request's context, so the host can tell which request each
// attempt belongs to, whatever the client.
func WithRequestID(ctx context.Context, id int64) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// requestID returns the number that ctx carries, or -1.
func requestID(ctx context.Context) int64 {
	if id, ok := ctx.Value(requestIDKey{}).(int64); ok {
		return id
	}
	return -1
}

// ledger is the part every Host shares: its start and the attempts it saw.
type ledger struct {
	start time.Time
	mu    sync.Mutex // guards seen, and the host's own state: attempts arrive from many goroutines
	seen  []Attempt
}

func newLedger() ledger { return ledger{start: time.Now()} }

// since is the time from the host's start to now.
func (l *ledger) since(now time.Time) time.Duration { return now.Sub(l.start) }

// Attempts implements Host.
func (l *ledger) Attempts() []Attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

// record notes that req's attempt arrived at now and is answered with
// status at the time at. The caller holds l.mu, under which the host
// also made its decision, so that the ledger's order is the order in
// which the host took the attempts.
func (l *ledger) record(req *http.Request, now, at time.Time, status int) {
	l.seen = append(l.seen, Attempt{Request: requestID(req.Context()),
		Arrived: l.since(now), Answered: l.since(at), Status: status})
}

// reply waits until at and answers req with status and header (nil for
// none). The caller's context ending stops the wait, not the host's work.
func reply(req *http.Request, now, at time.Time, status int, header http.Header) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close() // the RoundTripper contract; these hosts read none
	}
	ctx := req.Context()
	if d := at.Sub(now); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	} else if err := ctx.Err(); err != nil {
		return nil, err
	}
	if header == nil {
		header = http.Header{}
	}
	return &http.Response{
		Status:     strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode: status,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  header,
		Body:    http.NoBody,
		Request: req,
	}, nil
}
