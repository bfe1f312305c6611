package benchmarks

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
)

// Peer is one client setup under test.
type Peer struct {
	// Name is short and has no spaces or slashes: it names the peer in
	// benchmark names.
	Name string
	// Label names the peer in tables and charts; Library, the library
	// whose setup it is.
	Label, Library string
	// Caps says what the peer can express of a [Spec].
	Caps Caps
	// Delay is how a hedger sets the wait before each next hedge.
	Delay Delay
	// Notes say how the Spec was mapped where the peer's model differs.
	Notes []string
	// New returns the peer's round tripper for s, sending each attempt
	// through base. A nil base means the peer's own default.
	New func(s Spec, base http.RoundTripper) http.RoundTripper
}

// Caps is what a peer can express of a [Spec]. The mapping tests check each
// field against what the peer does.
type Caps struct {
	// Retries: a listed status, or a network error, is retried up to
	// MaxAttempts, with the Spec's backoff between attempts.
	Retries bool
	// Hedges: while an attempt is unanswered after HedgeDelay, another
	// starts, up to MaxAttempts in all; the first good answer wins.
	Hedges bool
	// Statuses: only the Spec's statuses are retried or hedged past;
	// without it, any answer ends the request.
	Statuses bool
	// Jitter: waits spread by the Spec's Jitter. Multiplier: waits grow by
	// the Spec's Multiplier (any value, not one fixed by the peer).
	Jitter, Multiplier bool
	// RetryAfter: a Retry-After on a listed status sets the wait.
	RetryAfter bool
	// Deadline: a wait that would end past the caller's deadline is not
	// started; the last answer is handed back at once.
	Deadline bool
	// Idempotent: only idempotent requests (GET, PUT, ..., or any with an
	// Idempotency-Key) are retried or hedged; a POST is sent once.
	Idempotent bool
	// Budget: extra attempts are gated by a budget. KeepsAnswer: a
	// request whose retry the budget refuses gets its last answer back,
	// not an error.
	Budget, KeepsAnswer bool
	// LoadBudget: hedges are capped at MaxExtraLoad of the requests sent
	// to a host, over time, whatever sets the delay.
	LoadBudget bool
	// Body is how a request body without GetBody is made replayable.
	Body BodyMode
}

// BodyMode is how a peer replays request bodies.
type BodyMode int

const (
	// BodySentOnce: the body is sent once and never replayed.
	BodySentOnce BodyMode = iota
	// BodyBounded: the body is kept as it is first sent, up to a limit;
	// a longer one is sent once and not replayed. GetBody is used when
	// the request has it.
	BodyBounded
	// BodyWhole: the whole body is read into memory before the first
	// attempt, GetBody or not.
	BodyWhole
	// BodyShared: attempts share the caller's body reader, so concurrent
	// hedges would read it at once; such peers are left out of the body
	// scenarios.
	BodyShared
)

// Delay is how a hedger sets the wait before each next hedge.
type Delay int

const (
	// DelayFixed waits the Spec's HedgeDelay.
	DelayFixed Delay = iota
	// DelayQuantile waits the Spec's HedgeQuantile of the host's recent
	// latencies, and HedgeDelay until enough of them are known.
	DelayQuantile
	// DelayBudget waits the host's latency at the start of its tail,
	// where the hedges spend the MaxExtraLoad budget, and sends no hedge
	// until the host's latencies are known.
	DelayBudget
)

// Describe says, for a table, how long d waits under s.
func (d Delay) Describe(s Spec) string {
	switch d {
	case DelayQuantile:
		return fmt.Sprintf("%g quantile (%v until known)", s.HedgeQuantile, s.HedgeDelay)
	case DelayBudget:
		return "start of the tail"
	}
	return s.HedgeDelay.String()
}

// Lacks lists, in words for a table, what p's library cannot express of
// a Spec: what none of its setups among peers does (retries, hedging, a
// budget, Retry-After, waits cut at the deadline), and what p's own mode
// cannot (statuses, jitter, a multiplier, keeping the answer on a budget
// refusal, a body). A setup that leaves out by choice what another setup
// of the same library does (retryhttp without its budget) lacks nothing.
func Lacks(p Peer, peers []Peer) string {
	if !p.Caps.Retries && !p.Caps.Hedges {
		return "no retries, no hedges (the baseline)"
	}
	var lib Caps
	for _, q := range peers {
		if q.Library == p.Library {
			lib.Retries = lib.Retries || q.Caps.Retries
			lib.Hedges = lib.Hedges || q.Caps.Hedges
			lib.Budget = lib.Budget || q.Caps.Budget
			lib.LoadBudget = lib.LoadBudget || q.Caps.LoadBudget
			lib.RetryAfter = lib.RetryAfter || q.Caps.RetryAfter
			lib.Deadline = lib.Deadline || q.Caps.Deadline
		}
	}
	var out []string
	add := func(ok bool, what string) {
		if !ok {
			out = append(out, what)
		}
	}
	c := p.Caps
	if c.Hedges {
		add(c.Statuses, "non-fatal statuses (any answer wins)")
	} else {
		add(c.Statuses, "a status list")
		add(c.Jitter, "jitter")
		add(c.Multiplier, "a backoff multiplier other than 2")
	}
	add(lib.Retries, "retries")
	add(lib.Hedges, "hedging")
	add(lib.RetryAfter, "Retry-After")
	add(lib.Deadline, "waits cut at the deadline")
	add(lib.Budget, "a budget")
	if lib.Hedges {
		add(lib.LoadBudget, "hedges capped at a share of the requests sent")
	}
	if c.Budget {
		add(c.KeepsAnswer, "the last answer when the budget refuses (an error instead)")
	}
	if c.Body == BodyShared {
		out = append(out, "a request body (hedges share one reader)")
	}
	return strings.Join(out, "; ")
}

// Peers returns the peers of every scenario, bare net/http first.
func Peers() []Peer {
	return []Peer{bare(), retryhttpRetry(false), retryhttpRetry(true), retryhttpHedge(DelayFixed, false),
		retryablehttpPeer(), failsafeRetry(false), failsafeRetry(true), failsafeHedge(false), hedgedhttpPeer()}
}

// HedgePeers returns the peers of the heavy-tail scenarios, bare net/http
// first: the hedgers of [Peers], and the other ways retryhttp and
// failsafe-go offer to set or bound hedging: a delay at a quantile, a
// delay and a cap from a hedge budget, a fixed delay under that cap, and
// failsafe-go's budget.
func HedgePeers() []Peer {
	return []Peer{bare(), retryhttpHedge(DelayFixed, false), retryhttpHedge(DelayQuantile, false),
		retryhttpHedge(DelayBudget, true), retryhttpHedge(DelayFixed, true),
		failsafeHedge(false), failsafeHedge(true), hedgedhttpPeer()}
}

// AllPeers returns every peer once: Peers, then those HedgePeers adds.
func AllPeers() []Peer {
	out := Peers()
	for _, p := range HedgePeers() {
		if !slices.ContainsFunc(out, func(q Peer) bool { return q.Name == p.Name }) {
			out = append(out, p)
		}
	}
	return out
}

// Find returns the peer with this name, or false.
func Find(name string) (Peer, bool) {
	for _, p := range AllPeers() {
		if p.Name == name {
			return p, true
		}
	}
	return Peer{}, false
}

func bare() Peer {
	return Peer{
		Name:    "bare",
		Label:   "net/http",
		Library: "net/http",
		Caps:    Caps{Body: BodySentOnce},
		New: func(_ Spec, base http.RoundTripper) http.RoundTripper {
			if base == nil {
				return http.DefaultTransport
			}
			return base
		},
	}
}

// retryhttpCaps is what retryhttp expresses, retry or hedge.
var retryhttpCaps = Caps{Statuses: true, Jitter: true, Multiplier: true,
	RetryAfter: true, Deadline: true, Idempotent: true, Body: BodyBounded}

func retryhttpRetry(budget bool) Peer {
	p := Peer{Name: "retryhttp", Label: "retryhttp", Library: "retryhttp", Caps: retryhttpCaps}
	p.Caps.Retries = true
	p.Notes = []string{"policy.Retry with the spec's fields, no throttle; retries idempotent requests only"}
	if budget {
		p.Name, p.Label, p.Caps.Budget = "retryhttp+budget", "retryhttp + budget", true
		p.Caps.KeepsAnswer = true
		p.Notes = []string{"policy.Retry with the spec's fields and its throttle, a token bucket per host; retries idempotent requests only"}
	}
	p.New = func(s Spec, base http.RoundTripper) http.RoundTripper {
		cfg := &policy.Config{Rules: []policy.Rule{{
			Name: []policy.Name{{}},
			Retry: &policy.Retry{
				MaxAttempts:          s.MaxAttempts,
				InitialBackoff:       s.InitialBackoff,
				MaxBackoff:           s.MaxBackoff,
				BackoffMultiplier:    s.Multiplier,
				Jitter:               s.Jitter,
				RetryableStatusCodes: s.Statuses,
			},
		}}, Throttle: &policy.Throttle{Off: true}, Hold: &policy.Hold{Off: true}} // each as the peer says
		if budget {
			cfg.Throttle = &s.Throttle
		}
		return &retryhttp.Transport{Base: base, Policy: cfg}
	}
	return p
}

// retryhttpHedge is retryhttp's hedging policy with its delay set as
// delay says, under the spec's hedge budget when loadBudget is set, as it
// always is with a DelayBudget.
func retryhttpHedge(delay Delay, loadBudget bool) Peer {
	loadBudget = loadBudget || delay == DelayBudget
	p := Peer{Name: "retryhttp-hedge", Label: "retryhttp hedge", Library: "retryhttp", Caps: retryhttpCaps, Delay: delay}
	p.Caps.Hedges, p.Caps.Budget, p.Caps.KeepsAnswer, p.Caps.LoadBudget = true, true, true, loadBudget
	p.Notes = []string{"policy.Hedge with the spec's fields and its throttle per host; hedges idempotent requests only"}
	switch {
	case delay == DelayQuantile:
		p.Name, p.Label = "retryhttp-hedge-quantile", "retryhttp hedge, quantile delay"
		p.Notes = append(p.Notes, "HedgingDelayQuantile: the spec's quantile, HedgingDelay until 20 latencies are known")
	case delay == DelayBudget:
		p.Name, p.Label = "retryhttp-hedge-loadbudget", "retryhttp hedge + load budget"
		p.Notes = append(p.Notes, "MaxExtraLoad: the spec's hedge budget, with no HedgingDelay: the delay sits at the start of the host's tail")
	case loadBudget:
		p.Name, p.Label = "retryhttp-hedge-fixed-loadbudget", "retryhttp hedge, fixed delay + load budget"
		p.Notes = append(p.Notes, "MaxExtraLoad: the spec's hedge budget, beside the fixed HedgingDelay")
	}
	p.New = func(s Spec, base http.RoundTripper) http.RoundTripper {
		h := &policy.Hedge{MaxAttempts: s.MaxAttempts, HedgingDelay: s.HedgeDelay, NonFatalStatusCodes: s.Statuses}
		switch delay {
		case DelayQuantile:
			h.HedgingDelayQuantile = s.HedgeQuantile
		case DelayBudget:
			h.HedgingDelay = 0
		}
		if loadBudget {
			h.MaxExtraLoad = s.MaxExtraLoad
		}
		cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}}, Hedge: h}}, Throttle: &s.Throttle, Hold: &policy.Hold{Off: true}}
		return &retryhttp.Transport{Base: base, Policy: cfg}
	}
	return p
}
