package retryhttp

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/dial"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// Transport is an [http.RoundTripper] that retries or hedges requests by
// policy, replays request bodies from a bounded buffer, obeys the server's
// Retry-After and pushback headers, and gates every extra attempt through a
// per-host token budget.
//
// The zero value is ready to use: set it as an [http.Client]'s Transport.
// A Transport is safe for concurrent use. Its fields must not change after
// its first use, which is its first request (or [Transport.SetPolicy]):
// it reads them then, once. Hooks, Classify and Prepare are the
// exceptions, read by each request as it starts. A Base, Policy, Buffer, Fleet or
// OmitAttemptsHeader changed later is not taken: requests then fail with
// an error that names the field, rather than go on as if it were
// unchanged. Stats, CloseIdleConnections and ResetBackoff
// are no first use.
//
// Every response it discards (one retried, a hedge that lost) is drained
// so that its connection can be reused, within bounds whatever the base
// does: up to 64 KiB within 100 ms. A body declared longer is closed at
// once; one that takes longer is closed (its attempt cancelled first, when
// it has a context of its own), and the request goes on. A body that
// ignores both its context and Close keeps one goroutine reading it until
// its Read returns, never the request.
type Transport struct {
	// Base sends each attempt. Nil means a pooled transport from
	// go-cleanhttp, built once per Transport (never
	// http.DefaultTransport), whose dials go through a [dial.Dialer] so that a
	// host that is down is not hammered. With that base, the attempts of
	// a hedged request to a host with several addresses go to distinct
	// ones: each attempt dials, or reuses a connection to, an address that
	// no other attempt of the request in flight is using and that is not
	// backing off. Addresses are looked up again every 30 s; requests sent
	// through a proxy are left to the proxy.
	Base http.RoundTripper

	// Policy chooses what is done with each request. Nil means
	// [policy.Default]. It is copied and validated on first use, so that
	// later edits to the Config change nothing; an invalid policy makes
	// every RoundTrip return the validation error, until
	// [Transport.SetPolicy] gives a valid one.
	Policy *policy.Config

	// Hooks, when set, are called for every request; see
	// [retrytrace.Hooks] and [retrytrace.WithHooks].
	Hooks *retrytrace.Hooks

	// Buffer bounds the memory used to replay request bodies that have no
	// GetBody. The zero value means 1 MiB per request and 64 MiB for the
	// whole Transport.
	Buffer BufferLimits

	// Classify, when set, is asked first about the outcome of every
	// attempt that reached, or may have reached, the server: any
	// response, and network errors. attempt is 1 for the request's first
	// attempt, 2 for the next, hedges counted alike; resp (with a nil
	// err) or err (with a nil resp) is the outcome. It is not asked
	// about an attempt that provably never reached the server (its
	// transparent resend keeps its number), nor once the caller's
	// context has ended; it is asked about one refused before anything
	// was sent for a malformed URL, which no verdict retries (below). Its [Verdict] overrides the rule: its error
	// codes ([policy.ErrorCodes]), the server's own verdict and its
	// status lists; [UsePolicy], the zero Verdict, leaves them to decide.
	// No verdict retries what the Transport never retries: a redirect or
	// an informational answer, a certificate error, or a malformed URL
	// (one no attempt could send: a port out of range, no host, a scheme
	// the base does not speak). It may read the
	// response's body with [PeekBody], and must not close it or keep
	// resp. It is called on the goroutine running the request (its hedge
	// loop's, for hedges), one attempt at a time per request, and may be
	// called concurrently for different requests.
	//
	// A Classify that panics ends its request: every other attempt is
	// cancelled and closed, the response it was asked about is closed,
	// the body's buffer is let go, and then the panic is raised again,
	// with its value, on the goroutine that called RoundTrip.
	Classify func(attempt int, resp *http.Response, err error) Verdict

	// Prepare, when set, is called with each attempt's request just
	// before it is sent, once every wait for it is over: to sign it
	// afresh, refresh a token, or set the attempt number an API asks
	// for, as AWS's Amz-Sdk-Request: attempt=2; max=3. attempt is 1 for
	// the request's first attempt, 2 for the next, hedges counted alike;
	// the transparent resend of an attempt is prepared again, under the
	// same number. req is the attempt's own copy of the caller's request:
	// Prepare may change its Header (which holds [AttemptsHeader] on an
	// attempt after the first), its URL and its Host, for that attempt
	// alone. It must not read, close or replace req.Body, the attempt's
	// own reader of the caller's body (to sign the payload, hash it
	// before RoundTrip, or read a copy from req.GetBody); and what makes
	// a request safe to send twice (its Method, an Idempotency-Key) is
	// read from the caller's request, before any Prepare. A per-call
	// Prepare ([WithPrepare]) is called after this one, each once per
	// attempt sent.
	//
	// An error from Prepare ends the request with that error: RoundTrip
	// returns an [*Error] that wraps it, whose Attempts counts the
	// attempts sent before; nothing of the attempt is sent, hedges in
	// flight are cancelled, and an answer kept for the caller is closed.
	// Prepare is called on the goroutine running the request, one
	// attempt at a time per request, and may be called concurrently for
	// different requests. A Prepare that panics ends its request as a
	// Classify that panics does.
	//
	// With no Prepare, a request's first attempt is sent as the caller's
	// own request; with one, every attempt is a copy, whose header and
	// URL cost allocations of their size.
	Prepare func(attempt int, req *http.Request) error

	// Fleet, when set, shares the per-host budget and holds with the
	// other Transports of a fleet of processes (see [Fleet]). Nil means
	// none: each Transport keeps its own.
	Fleet Fleet

	// OmitAttemptsHeader, when true, neither sends [AttemptsHeader] on
	// attempts after the first nor sets it on the response handed back,
	// for servers and proxies that must not see it; a response then
	// carries whatever the server sent. The zero value sends and sets it.
	OmitAttemptsHeader bool

	once sync.Once
	st   atomic.Pointer[state] // nil until first use
}

// state is what a Transport builds from its fields on first use.
type state struct {
	fields // as they were then
	// policyField is the Policy field as the Transport last took it: on
	// first use, or when SetPolicy said what the policy is.
	policyField atomic.Pointer[policy.Config]
	base        http.RoundTripper      // fields.base, or the one it built
	dialer      *dial.Dialer           // non-nil when the Transport built its own base
	pol         atomic.Pointer[active] // the policy in force
	hosts       *hostTable             // budgets, holds, latencies and statistics per host
	failures    failureRing            // the last requests that failed, for the status page
	pool        *bufferPool
	// calls keeps the state of finished requests for the next ones, so
	// that a request costs no allocation of its own.
	calls sync.Pool
	// setting makes SetPolicy calls one at a time.
	setting sync.Mutex
}

// active is a validated policy and the counters of its rules, or the
// error of an invalid one. A request reads it once, when it starts, and
// keeps it to its end.
type active struct {
	// cfg is the Transport's own copy of the policy, its switches
	// resolved (policy.Config.InForce): a nil Throttle or Hold is off.
	cfg *policy.Config
	ruleStats
	delayHeaders []policy.DelayHeader // cfg's, their names canonical
	pacing       bool                 // cfg paces hosts
	err          error
}

func newActive(cfg *policy.Config) *active {
	return &active{cfg: cfg, ruleStats: newRuleStats(cfg.Rules), delayHeaders: cfg.ServerDelayHeaders(), pacing: cfg.Pace != nil}
}

// init builds the Transport's state on first use. The policy is checked
// then: an invalid one is kept, so that every request fails with its error
// until SetPolicy gives a valid one.
func (t *Transport) init() *state {
	t.once.Do(func() {
		st := &state{
			fields: fields{base: t.Base, buffer: t.Buffer, fleet: t.Fleet, omitHeader: t.OmitAttemptsHeader,
				compareBase: canCompare(t.Base), compareFleet: canCompare(t.Fleet)},
			base:  t.Base,
			hosts: newHostTable(nil, 0),
			pool:  newBufferPool(t.Buffer),
		}
		st.calls.New = func() any { return new(call) }
		if st.base == nil {
			st.base, st.dialer = dial.NewBase()
		}
		if err := st.setPolicy(t.Policy); err != nil {
			st.pol.Store(&active{err: err})
		}
		st.policyField.Store(t.Policy)
		t.st.Store(st)
	})
	return t.st.Load()
}

// fields are the Transport's fields that it reads once, on first use, as
// they were then, so that one set later is known for what it is.
type fields struct {
	base         http.RoundTripper
	buffer       BufferLimits
	fleet        Fleet
	omitHeader   bool
	compareBase  bool // base and fleet have types that == may compare
	compareFleet bool
}

// canCompare reports whether v's dynamic type can be compared with ==,
// which panics for a func or a struct holding a slice, say.
func canCompare(v any) bool { return v == nil || reflect.TypeOf(v).Comparable() }

// changed returns an error naming a field of t set since its first use,
// or nil. A Base or Fleet whose type cannot be compared is not checked.
func (st *state) changed(t *Transport) error {
	f := &st.fields
	field, hint := "", "set it before the first request, or use a new Transport"
	switch {
	case t.Policy != st.policyField.Load():
		field, hint = "Policy", "call SetPolicy to change the policy of a Transport in use"
	case t.Buffer != f.buffer:
		field = "Buffer"
	case t.OmitAttemptsHeader != f.omitHeader:
		field = "OmitAttemptsHeader"
	case f.compareBase && t.Base != f.base:
		field = "Base"
	case f.compareFleet && t.Fleet != f.fleet:
		field = "Fleet"
	default:
		return nil
	}
	return fmt.Errorf("retryhttp: Transport.%s changed after the Transport's first use, which does not take it: %s", field, hint)
}

// SetPolicy checks cfg and, if it is valid, makes it the Transport's
// policy from the next request on; a nil cfg means [policy.Default], as a
// nil Policy does. An invalid cfg changes nothing and is returned as an
// error naming the field. Requests in flight keep the rule they started
// with, but a host's concurrency limit is the host's: it takes the new
// maxConcurrency at once, for their attempts too. The per-host budgets
// keep their tokens and take the new throttle's limits (a cfg whose
// throttle is off stops gating); statistics
// per rule start afresh for the new rules, while the totals and the
// per-host figures carry on. SetPolicy is safe to call while requests
// run. It takes a deep copy of cfg ([policy.Config.Clone]): edits to cfg
// afterwards change nothing. It also mends a Transport whose Policy field
// was invalid.
func (t *Transport) SetPolicy(cfg *policy.Config) error {
	st := t.init()
	if err := st.setPolicy(cfg); err != nil {
		return err
	}
	// SetPolicy says what the policy is: a Policy field set meanwhile is
	// no longer a change to report.
	st.policyField.Store(t.Policy)
	return nil
}

// setPolicy validates cfg and puts a copy of it in force, with the
// throttle's limits. The copy is taken first and is the one validated, so
// that what is checked is what runs, whatever the caller does to cfg
// later; it is then resolved, a nil switch meaning the default no more.
func (st *state) setPolicy(cfg *policy.Config) error {
	if cfg == nil {
		cfg = policy.Default()
	}
	own := cfg.Clone()
	if err := own.Validate(); err != nil {
		return fmt.Errorf("retryhttp: invalid policy: %w", err)
	}
	own = own.InForce()
	// One policy at a time, so that the limits in force are always the
	// policy's.
	st.setting.Lock()
	defer st.setting.Unlock()
	st.hosts.set(own.Throttle)
	st.pol.Store(newActive(own))
	return nil
}

// RoundTrip implements [http.RoundTripper]. It never modifies req, always
// closes its body, returns the final response with a nil error even when
// its status is an error, and never returns both a response and an error.
// The returned response's Request is req; its X-Retry-Attempts header holds
// the number of attempts sent before the one that produced it (absent when
// the first attempt answered).
//
// When no response was obtained, the error is an [*Error] that wraps the
// last cause; when the caller's context ended, it wraps the context's
// cause. A request that RoundTrip cannot take at all (a nil request, URL
// or Header; an invalid rule, given by [WithPolicy] or in the policy; a
// field of the Transport changed after its first use) is refused with an
// error that names the fault instead, not an [*Error]: nothing is sent,
// and the body is closed.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	st := t.init()
	err := checkRequest(req)
	if err == nil {
		err = st.changed(t)
	}
	var c *call
	if err == nil {
		c, err = st.newCall(req, t.Hooks, t.Classify, t.Prepare)
	}
	if err != nil {
		if req != nil && req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	// A panic of a hook, the caller's classifier or GetBody, or the base
	// goes on up to the caller once the loop has cancelled and closed
	// every attempt; the deferred end lets the body go, and keeps the
	// call out of the pool.
	completed := false
	var resp *http.Response
	defer func() {
		if !completed && resp != nil {
			resp.Body.Close() // a Done hook panicked over it
		}
		c.end(completed)
	}()
	c.started()
	switch c.plan.kind {
	case planHedge:
		resp, err = c.hedge()
	default:
		resp, err = c.retry()
	}
	c.settleWatch(resp)
	c.finished(resp, err, c.tried)
	c.noteFailure(resp, err)
	completed = true
	return resp, err
}

// checkRequest rejects what no attempt could send, before anything is
// sent or buffered.
func checkRequest(req *http.Request) error {
	switch {
	case req == nil:
		return errors.New("retryhttp: nil request")
	case req.URL == nil:
		return errors.New("retryhttp: nil request URL")
	case req.Header == nil:
		return errors.New("retryhttp: nil request header")
	}
	return nil
}

// Stats returns a snapshot of what the Transport has done so far, and of
// what it holds now: per host, its budget, holds and latencies; the
// addresses its dialer backs off; its last failures. It reads atomic
// counters and takes the locks that requests share only to copy what it
// returns, so it is cheap enough to call often; its cost grows with the
// hosts the Transport keeps. It is no first use.
func (t *Transport) Stats() Stats {
	st := t.st.Load()
	if st == nil { // no request yet, and no first use
		return Stats{Rules: map[string]Counters{}, Hosts: map[string]HostStats{}}
	}
	return st.snapshot(time.Now())
}

// CloseIdleConnections closes the idle connections of the base transport,
// if it has such a method.
func (t *Transport) CloseIdleConnections() {
	base, st := t.Base, t.st.Load() // before first use, only a Base of the caller's has connections
	if st != nil {
		base = st.base
	}
	if c, ok := base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	if st != nil && st.dialer != nil {
		st.dialer.CloseIdleConnections()
	}
}

// ResetBackoff tells the Transport that host is back, for an application
// that has an out-of-band reason to believe so, as gRPC's
// ResetConnectBackoff does for a channel: the holds on host end (the
// Fleet's that it knows of now included, for this Transport: a hold the
// Fleet learns of later counts), its pace and concurrency limit are
// lifted, and, when the Transport dials through a base of its own (Base
// is nil), the dial backoff windows of its addresses end too; the next
// request goes at once, and so do the requests waiting for a hold or a
// pace of host. host is a URL host, as in a request's URL
// ("api.example.com", "api.example.com:8443"), in any case; "" means
// every host. A Base of the caller's keeps its own dial backoff: see
// dial.Dialer.ResetBackoff.
func (t *Transport) ResetBackoff(host string) {
	st := t.st.Load()
	if st == nil {
		return
	}
	host = strings.ToLower(host)
	if st.dialer != nil {
		st.dialer.ResetBackoff(host)
	}
	st.hosts.reset(host, st.fleet, st.pol.Load().names)
}
