package benchmarks

import (
	"cmp"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/internal/memfleet"
)

// Scenario is one overload scenario: a scripted [Host], the load that its
// clients offer it, and the figures read from a run ([Metric]). Times are
// since the start of the run. See [Scenarios] for S0-S5.
type Scenario struct {
	// Name is short and has no spaces or slashes: it names the scenario
	// in benchmark names. Title describes it in tables.
	Name, Title string
	// Host returns the run's host, scripted as the scenario says (its
	// Trouble, its Seed). It is called at the start of each run.
	Host func(sc Scenario) Host
	// Load is the clients and what they send.
	Load []Group
	// Duration is how long the load is offered: requests start in
	// [0, Duration); the run ends when the last of them has.
	Duration time.Duration
	// Window is where the steady rates are read.
	Window Window
	// Trouble is when the host is in trouble (a loss of workers, an
	// outage), zero when it never is: figures "during" it are read
	// there, and recovery is timed from its end.
	Trouble Window
	// Fleet, when set, makes the run's clients share one Fleet kept in
	// memory (internal/memfleet); only contenders that can share one
	// ([Contender.InFleet]) run it.
	Fleet bool
	// Seed seeds the host's draws and the clients' phases.
	Seed uint64
	// Metrics are the figures the benchmarks report for the scenario.
	Metrics []Metric
}

// Group is a set of clients that send alike. Each client is built once
// by the contender, as a process of its own would.
type Group struct {
	// Clients is how many clients the group has.
	Clients int
	// Rate, when positive, makes the load open: each client starts
	// Rate requests per second whatever becomes of them, one per
	// interval of 1/Rate, the clients' phases spread evenly over one
	// interval in an order drawn from the scenario's seed, so that the
	// group's requests have slots spaced interval/Clients apart. Each
	// request starts at a point drawn uniformly within half a spacing of
	// its slot: the group's rate holds over any few spacings, yet no
	// request keeps in step with another, or with the host.
	Rate float64
	// Callers, when Rate is zero, makes the load closed: each client is
	// shared by Callers callers, each starting its next request as soon
	// as its last one ended (after [ClosedPause] when that one took no
	// time at all).
	Callers int
	// Deadline bounds each request, from its start.
	Deadline time.Duration
}

// ClosedPause is how long a caller of a closed load waits before its
// next request when its last one ended at once, as a request refused
// locally does: in virtual time, a caller that never waits would stop
// the clock. A caller that spins on refusals in real life burns a CPU.
const ClosedPause = time.Millisecond

// Offered is the rate the load's open groups offer, in requests per
// second (closed groups offer what their answers let them).
func (sc Scenario) Offered() float64 {
	var r float64
	for _, g := range sc.Load {
		r += float64(g.Clients) * g.Rate
	}
	return r
}

// Scaled returns sc with its Duration, Window and Trouble times f, for
// runs shorter than the benchmarks' (rates and deadlines are kept).
func (sc Scenario) Scaled(f float64) Scenario {
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	sc.Duration = scale(sc.Duration)
	sc.Window = Window{scale(sc.Window.From), scale(sc.Window.To)}
	sc.Trouble = Window{scale(sc.Trouble.From), scale(sc.Trouble.To)}
	return sc
}

// Window is the stretch of a run [From, To), since its start.
type Window struct{ From, To time.Duration }

// Has reports whether t falls in w.
func (w Window) Has(t time.Duration) bool { return t >= w.From && t < w.To }

// Seconds is w's length in seconds.
func (w Window) Seconds() float64 { return (w.To - w.From).Seconds() }

// Metric is one figure read from a [Trial]: Unit names it in benchmark
// output ("goodput/s"), Of reads it.
type Metric struct {
	Unit string
	Of   func(Trial) float64
}

// Run runs sc with contender c: it builds the host and the clients,
// offers the load, waits for every request to end, and returns what was
// seen. It is meant to run in a testing/synctest bubble, where its time is
// virtual (a 40 s scenario takes a fraction of a second); outside one it
// takes the scenario's real time. It returns once every request has
// ended; in a bubble, a goroutine that a client leaves blocked after its
// request ended fails the bubble.
//
// Run panics when c cannot run sc ([Contender.Runs]).
func (sc Scenario) Run(c Contender) Trial {
	if !c.Runs(sc) {
		panic("benchmarks: " + c.Name + " cannot share a fleet, as " + sc.Name + " needs")
	}
	host := sc.Host(sc)
	var fleet retryhttp.Fleet
	if sc.Fleet {
		fleet = memfleet.New()
	}
	d := driver{start: time.Now(), c: c}
	var sends []send
	for _, g := range sc.Load {
		clients := make([]*http.Client, g.Clients)
		for i := range clients {
			if fleet != nil {
				clients[i] = &http.Client{Transport: c.InFleet(host, fleet)}
			} else {
				clients[i] = &http.Client{Transport: c.New(host)}
			}
		}
		if g.Rate > 0 {
			sends = append(sends, schedule(g, clients, sc)...)
			continue
		}
		for _, client := range clients {
			for range g.Callers {
				d.wg.Go(func() { d.loop(client, g.Deadline, sc.Duration) })
			}
		}
	}
	slices.SortStableFunc(sends, func(a, b send) int { return cmp.Compare(a.at, b.at) })
	for _, s := range sends {
		time.Sleep(time.Until(d.start.Add(s.at)))
		d.wg.Go(func() { d.request(s.client, s.deadline) })
	}
	d.wg.Wait()
	slices.SortFunc(d.requests, func(a, b Request) int { return cmp.Compare(a.id, b.id) })
	attempts := host.Attempts()
	for _, a := range attempts {
		if a.Request >= 0 && a.Request < int64(len(d.requests)) {
			d.requests[a.Request].Attempts++
		}
	}
	return Trial{Scenario: sc, Contender: c.Name, Requests: d.requests, Attempts: attempts}
}

// Runs reports whether c can run sc: any scenario, but those of a fleet
// only when c can share one.
func (c Contender) Runs(sc Scenario) bool { return !sc.Fleet || c.InFleet != nil }

// send is one request of an open load: when it starts, through which
// client, under which deadline.
type send struct {
	at       time.Duration
	client   *http.Client
	deadline time.Duration
}

// schedule returns the requests of g's open load over sc's Duration:
// none for no clients, or for a rate so high that a client's interval
// rounds to nothing.
func schedule(g Group, clients []*http.Client, sc Scenario) []send {
	interval := time.Duration(float64(time.Second) / g.Rate)
	if len(clients) == 0 || interval <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(sc.Seed, uint64(len(clients))))
	order := rng.Perm(len(clients))
	spacing := interval / time.Duration(len(clients))
	var out []send
	for i, client := range clients {
		phase := spacing * time.Duration(order[i])
		for slot := phase; slot < sc.Duration; slot += interval {
			at := slot + time.Duration((rng.Float64()-0.5)*float64(spacing))
			if at >= 0 && at < sc.Duration {
				out = append(out, send{at: at, client: client, deadline: g.Deadline})
			}
		}
	}
	return out
}

// driver sends a run's requests and keeps what became of them.
type driver struct {
	start time.Time
	c     Contender
	wg    sync.WaitGroup
	mu    sync.Mutex // guards what follows: requests end on many goroutines
	next  int64
	// requests are in the order they ended until the run sorts them.
	requests []Request
}

// loop is one caller of a closed load: requests one after the other
// until the load's end.
func (d *driver) loop(client *http.Client, deadline, end time.Duration) {
	for time.Since(d.start) < end {
		began := time.Now()
		d.request(client, deadline)
		if time.Since(began) == 0 {
			time.Sleep(ClosedPause)
		}
	}
}

// request sends one GET through client under deadline, reads and closes
// the answer, and records the outcome.
func (d *driver) request(client *http.Client, deadline time.Duration) {
	d.mu.Lock()
	id := d.next
	d.next++
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(WithRequestID(context.Background(), id), deadline)
	defer cancel()
	r := Request{id: id, Start: time.Since(d.start)}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, TargetURL, nil)
	if err == nil {
		var resp *http.Response
		if resp, err = client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			r.Status = resp.StatusCode
		}
	}
	r.End = time.Since(d.start)
	if err != nil {
		r.Failure = d.failure(ctx, err)
	}
	d.mu.Lock()
	d.requests = append(d.requests, r)
	d.mu.Unlock()
}

// failure names the failure err is for a request under ctx.
func (d *driver) failure(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return FailDeadline
	}
	if d.c.Refusal != nil {
		if name := d.c.Refusal(err); name != "" {
			return name
		}
	}
	return FailError
}
