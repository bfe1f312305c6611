package benchmarks

import (
	"math"
	"slices"
	"time"
)

// Trial is what one run of a [Scenario] by a [Contender] saw, on both
// sides: every request as its caller saw it, every attempt as the host
// did. Its methods read the figures; times are since the run's start.
type Trial struct {
	Scenario  Scenario
	Contender string
	// Requests are in the order they started.
	Requests []Request
	// Attempts are the host's, in the order they arrived.
	Attempts []Attempt
}

// Request is one request as its caller saw it.
type Request struct {
	id int64
	// Start and End are when the request started and when its answer
	// was read or its error came.
	Start, End time.Duration
	// Status is the answer's status, 0 when there was none.
	Status int
	// Failure says why there was no answer, "" when there was one:
	// [FailDeadline], [FailError], or the name of a local refusal
	// given by the contender ([Contender.Refusal]).
	Failure string
	// Attempts is how many attempts of the request reached the host.
	Attempts int
}

// The failures of a request that are not local refusals.
const (
	// FailDeadline: the request's deadline had passed when it failed.
	FailDeadline = "deadline"
	// FailError: any other error, such as an attempt's own timeout.
	FailError = "error"
)

// OK reports whether the request was answered 2xx.
func (r Request) OK() bool { return r.Status >= 200 && r.Status < 300 }

// Refused reports whether the client failed the request on its own.
func (r Request) Refused() bool {
	return r.Failure != "" && r.Failure != FailDeadline && r.Failure != FailError
}

// Goodput is the requests answered 2xx whose answer came in w, per
// second.
func (t Trial) Goodput(w Window) float64 {
	n := 0
	for _, r := range t.Requests {
		if r.OK() && w.Has(r.End) {
			n++
		}
	}
	return float64(n) / w.Seconds()
}

// AttemptRate is the attempts that reached the host in w, per second.
func (t Trial) AttemptRate(w Window) float64 {
	return float64(len(t.arrived(w))) / w.Seconds()
}

// StatusShare is the share of the attempts that reached the host in w
// that it answered with status (429 for throttles), in [0, 1]; NaN when
// none reached it.
func (t Trial) StatusShare(w Window, status int) float64 {
	in := t.arrived(w)
	n := 0
	for _, a := range in {
		if a.Status == status {
			n++
		}
	}
	return float64(n) / float64(len(in))
}

// PerRequest is the attempts that reached the host per request started
// in w, counting each of those requests' attempts whenever they came.
func (t Trial) PerRequest(w Window) float64 {
	attempts, requests := t.Counts(w)
	return float64(attempts) / float64(requests)
}

// Counts are the attempts of the requests started in w, whenever they
// came, and those requests: PerRequest's ratio as the two counts it is
// made of, which go test prints exactly where it prints a ratio to four
// figures.
func (t Trial) Counts(w Window) (attempts, requests int) {
	in := t.started(w)
	for _, r := range in {
		attempts += r.Attempts
	}
	return attempts, len(in)
}

// Share is the share of the requests started in w for which is holds,
// in [0, 1]; NaN when none started.
func (t Trial) Share(w Window, is func(Request) bool) float64 {
	in := t.started(w)
	n := 0
	for _, r := range in {
		if is(r) {
			n++
		}
	}
	return float64(n) / float64(len(in))
}

// Quantile is the q-quantile, by nearest rank, of how long the requests
// started in w took their callers, whatever their outcome, in
// milliseconds; NaN when none started.
func (t Trial) Quantile(w Window, q float64) float64 {
	in := t.started(w)
	d := make([]time.Duration, len(in))
	for i, r := range in {
		d[i] = r.End - r.Start
	}
	return quantileMs(d, q)
}

// HostQuantile is the q-quantile, by nearest rank, of the host's latency
// (arrival to answer, queueing included) over the attempts that arrived
// in w, in milliseconds; NaN when none did.
func (t Trial) HostQuantile(w Window, q float64) float64 {
	in := t.arrived(w)
	d := make([]time.Duration, len(in))
	for i, a := range in {
		d[i] = a.Latency()
	}
	return quantileMs(d, q)
}

// quantileMs sorts d and returns its q-quantile by nearest rank in
// milliseconds, NaN for an empty d.
func quantileMs(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return math.NaN()
	}
	slices.Sort(d)
	i := min(max(int(math.Ceil(q*float64(len(d))))-1, 0), len(d)-1)
	return float64(d[i]) / float64(time.Millisecond)
}

func (t Trial) started(w Window) []Request {
	var out []Request
	for _, r := range t.Requests {
		if w.Has(r.Start) {
			out = append(out, r)
		}
	}
	return out
}

func (t Trial) arrived(w Window) []Attempt {
	var out []Attempt
	for _, a := range t.Attempts {
		if w.Has(a.Arrived) {
			out = append(out, a)
		}
	}
	return out
}
