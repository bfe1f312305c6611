package dial

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp/policy"
)

// DefaultMinConnectTimeout is the least time a [Dialer] gives one connection
// attempt when its MinConnectTimeout is zero: gRPC's MIN_CONNECT_TIMEOUT.
const DefaultMinConnectTimeout = 20 * time.Second

// DefaultMaxAddrs is the number of addresses whose backoff a [Dialer]
// remembers when its MaxAddrs is zero.
const DefaultMaxAddrs = 1024

// Dialer dials with gRPC's connection backoff, kept per address (network and
// addr): after a failed attempt started at time s with backoff b, no
// attempt to that address starts before s+b. A dial inside that window
// fails at once with a [*BackoffError] and makes no network call. The
// backoff before retry n is Backoff.Duration(n); n counts the address's
// consecutive failures and returns to 0 once a connection is accepted, or on
// [Dialer.ResetBackoff].
//
// Each attempt gets max(b, MinConnectTimeout) to connect, within the
// caller's context, so that a slow server is not cut off by a short backoff
// while a long backoff still bounds a hung one. An attempt cut by that
// timeout is a failure; as its window is counted from its start, one that
// took longer than b leaves no window and the next dial goes at once, as
// in gRPC. An attempt the caller's context ends (cancelled, or its
// deadline passed) says nothing about the server: it is neither a failure
// nor a success.
//
// With Algorithm set to [Stubby], the legacy algorithm of the same
// design, a window starts at the end of the failed attempt instead of its
// start, and an attempt gets exactly MinConnectTimeout; see
// [Algorithm].
//
// Dials to an address that is not in a window go to the network even while
// another dial to it is in flight, as [net/http.Transport] dials in
// parallel. Attempts that start with the same n are one round: however
// many of them fail, they move n on once, and the window lasts until the
// latest of their start+b (end+b with Stubby). A connection ends the backoff however old its
// attempt, while a failure of an attempt that started before a success or
// a ResetBackoff of its address is stale and is ignored.
//
// To use one under an [net/http.Transport], set its DialContext to
// d.DialContext and, for HTTPS, its DialTLSContext to d.DialTLSContext and
// ForceAttemptHTTP2 to true (see [Dialer.DialTLSContext]).
//
// The zero value is ready to use. A Dialer is safe for concurrent use; its
// fields must not change after its first dial, and it must not be copied
// after first use.
type Dialer struct {
	// Dial makes a connection. Nil means a [net.Dialer] with a 30 s
	// keep-alive. Its context carries the attempt's connect deadline.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	// Backoff gives the backoff before retry n of an address. Nil means
	// [policy.ConnectionBackoff]: 1 s growing by 1.6 per failure up to
	// 120 s, each ±20%; with [Stubby], 1 s doubling up to 120 s,
	// with no jitter.
	Backoff policy.Backoff

	// Algorithm says where a backoff window starts: at the start of the
	// failed attempt ([GRPC], the zero value) or at its end
	// ([Stubby]).
	Algorithm Algorithm

	// MinConnectTimeout is the least time an attempt gets to connect
	// (TCP, and TLS for DialTLSContext); with [Stubby] it is
	// exactly the time an attempt gets. Zero or negative means
	// [DefaultMinConnectTimeout].
	MinConnectTimeout time.Duration

	// TLSConfig configures the client side of DialTLSContext. It is
	// cloned, never modified. An empty ServerName is taken from addr's
	// host, and an empty NextProtos offers "h2" then "http/1.1", as
	// net/http does with its own TLS config; to keep to HTTP/1.1, set
	// NextProtos to just "http/1.1". Nil means the system roots with those
	// defaults.
	TLSConfig *tls.Config

	// MaxAddrs bounds how many addresses the Dialer keeps state for. Zero
	// or negative means [DefaultMaxAddrs]. Only addresses that are backing
	// off or being dialed take room. When the table is full, the idle
	// address whose window ended longest ago is forgotten, as if it had
	// never failed; addresses with a dial in flight are forgotten only when
	// every address has one. Making room scans the table, so it costs time
	// in proportion to MaxAddrs.
	MaxAddrs int

	// LookupNetIP looks up the addresses of a host for [Dialer.Route], as
	// [net.Resolver.LookupNetIP] does, network being "ip". Nil means
	// net.DefaultResolver's. Set it to route by a discovery service of
	// your own, or to a fixed table in tests.
	LookupNetIP func(ctx context.Context, network, host string) ([]netip.Addr, error)

	// mu guards addrs. One lock for the whole table: admitting a dial
	// checks a window and joins a round in one step, recording an outcome
	// updates the counter and the window together and may insert, evict or
	// delete entries. Critical sections hold no I/O and no call into
	// Backoff or Dial, so the lock is held for a map operation at most (a
	// scan of the table when it is full).
	mu    sync.Mutex
	addrs map[dialKey]*dialEntry
	// spread routes the attempts of a request over the addresses of its
	// host, for a Dialer made by NewBase; nil otherwise.
	spread *spread
}

// dialKey identifies an address: the same host:port over tcp4 and tcp6
// backs off apart.
type dialKey struct {
	network, addr string
}

// dialEntry is the backoff state of one address. An entry that is not
// backing off and has no dial in flight is deleted: its absence means a
// counter of 0 and no window.
type dialEntry struct {
	failures int       // consecutive failed rounds: the next backoff is Duration(failures)
	until    time.Time // no attempt starts before until
	inflight int       // attempts that started with this entry and have not ended
	// quiet is, while attempts are in flight, since when none of them
	// ended: the start of the first, or the end of the last one that
	// ended; zero while none is in flight.
	quiet time.Time
	err   error // the failure that set until
}

// dialAttempt is one admitted dial. entry identifies its generation: once
// the address succeeds, is reset or is evicted, the map holds another entry
// (or none) and this attempt's failure no longer counts.
type dialAttempt struct {
	key     dialKey
	entry   *dialEntry
	round   int           // entry.failures when the attempt started
	start   time.Time     // when it started
	backoff time.Duration // Backoff.Duration(round), drawn at the start
}

// DialContext connects to addr on network through Dial, unless addr is in
// its backoff window: then it returns a [*BackoffError] at once. A
// connection returned ends addr's backoff. When ctx is already done it
// returns ctx.Err() without dialing.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return d.connect(ctx, network, addr, nil)
}

// DialTLSContext is [Dialer.DialContext] followed by a TLS handshake as the
// client, with [Dialer.TLSConfig]. The connect timeout covers both. The
// returned connection is a [*tls.Conn] past its handshake.
//
// By default the handshake offers HTTP/2, so a [net/http.Transport] that
// dials through it needs ForceAttemptHTTP2: without it, a Transport with a
// custom DialTLSContext does not set up HTTP/2 and would speak HTTP/1.1 on
// a connection where the server chose h2. Such a Transport ignores its own
// TLSClientConfig and TLSHandshakeTimeout.
//
// Only a completed handshake ends addr's backoff, and a failed one counts as
// a failed connection: a server that accepts TCP but cannot complete TLS (a
// misconfigured proxy, a bad certificate) is as unavailable as one that
// refuses, and resetting on the TCP accept would have every client retry it
// at the initial rate forever.
func (d *Dialer) DialTLSContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return d.dialTLS(ctx, network, addr, addr)
}

// dialTLS connects to addr and runs the TLS handshake for the server
// named by nameAddr's host, which differs from addr's when addr is one of
// the resolved addresses of that name.
func (d *Dialer) dialTLS(ctx context.Context, network, addr, nameAddr string) (net.Conn, error) {
	return d.connect(ctx, network, addr, d.tlsConfig(nameAddr))
}

// connect is one admitted attempt: a dial and, with a TLS config, the
// handshake, both within the attempt's connect timeout. Its outcome is
// recorded in addr's backoff.
func (d *Dialer) connect(ctx context.Context, network, addr string, cfg *tls.Config) (net.Conn, error) {
	a, err := d.admit(ctx, network, addr, time.Now())
	if err != nil {
		return nil, err
	}
	actx, cancel := context.WithTimeout(ctx, d.connectTimeout(a.backoff))
	defer cancel()
	conn, err := d.dial(actx, network, addr)
	if err == nil && conn == nil {
		// A Dial of the caller's that breaks its contract must not
		// panic in the handshake, nor pass for a connection.
		err = errNoConn
	}
	if err == nil && cfg != nil {
		conn, err = handshake(actx, conn, cfg)
	}
	d.finish(a, err, ctx.Err() != nil, time.Now())
	return conn, err
}

// errNoConn is the failure of a Dial that returned neither a connection
// nor an error.
var errNoConn = errors.New("retryhttp: Dialer.Dial returned no connection and no error")

// handshake runs the client side of TLS over raw, closing raw if it fails.
func handshake(ctx context.Context, raw net.Conn, cfg *tls.Config) (net.Conn, error) {
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return tc, nil
}

// ResetBackoff ends the backoff of addr on every network: the next dial
// to it goes to the network at once, and a failure then waits
// Backoff.Duration(0). It is the out-of-band signal of an application that
// knows the server is back. addr is "host:port", that address; or a host
// alone (an IPv6 literal with or without brackets), every port of it and
// every address [Dialer.Route] sent that host's attempts to, on any port;
// or "", every address. Names compare without regard
// to case. Dials already in flight no longer count. ResetBackoff scans
// the table, so it costs time in proportion to MaxAddrs.
func (d *Dialer) ResetBackoff(addr string) {
	// A host alone may be an IPv6 literal, bracketed as a URL writes
	// it ("[::1]") or not ("::1"): it has colons but no port.
	host, hasPort := bareHost(addr)
	var routed []string // the addresses Route sent addr's attempts to
	if d.spread != nil && addr != "" {
		routed = d.spread.addrsOf(strings.ToLower(addr), !hasPort)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.addrs {
		if addr == "" || strings.EqualFold(k.addr, addr) || slices.Contains(routed, k.addr) ||
			!hasPort && strings.EqualFold(hostOf(k.addr), host) {
			delete(d.addrs, k)
		}
	}
}

// hostOf returns the host of addr ("host:port"), or addr when it has no
// port.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// bareHost returns the host of addr without brackets, and whether addr
// has a port: "[::1]:80" and "h:80" have one, "[::1]", "::1" and "h" do
// not.
func bareHost(addr string) (host string, hasPort bool) {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h, true
	}
	if len(addr) > 1 && addr[0] == '[' && addr[len(addr)-1] == ']' {
		return addr[1 : len(addr)-1], false
	}
	return addr, false
}

// stallAfter is how long an address may be dialed with no dial of it
// ending before [Dialer.Route] sends new attempts elsewhere: RFC 8305's
// Connection Attempt Delay, which gRPC's Happy Eyeballs takes too. A
// black-holed address fails its dials only at their connect timeout, 20 s
// at least, and its window, counted from the start of the failed dial,
// has then passed: without this, every first attempt to its host would go
// there and wait, round after round, until the backoff outgrew the
// timeout (about two and a half minutes).
const stallAfter = 250 * time.Millisecond

// unready reports whether new attempts should not be sent to addr on
// network at now, and why: a dial to it would be refused until window
// ends (zero when it would not be), or its dials have been in flight for
// stallAfter with none ending.
func (d *Dialer) unready(network, addr string, now time.Time) (unready bool, window time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.addrs[dialKey{network, addr}]
	switch {
	case e == nil:
		return false, time.Time{}
	case now.Before(e.until):
		return true, e.until
	}
	return e.inflight > 0 && now.Sub(e.quiet) >= stallAfter, time.Time{}
}

// Window is the backoff of one address that failed since its last
// connection, as [Dialer.Windows] reports it.
type Window struct {
	Network, Addr string
	// Failures counts the address's failed rounds in a row.
	Failures int
	// Until is when its window ends: no dial to it starts before then.
	// It may have passed, for an address not dialed since.
	Until time.Time
	// Err is the failure that set the window.
	Err error
	// Hosts are the URL hosts (lowercased, as in a request's URL) whose
	// attempts [Dialer.Route] sent to the address, for a Dialer made by
	// [NewBase]; nil otherwise.
	Hosts []string
}

// Windows returns the backoff of every address that failed since its last
// connection, in its window or past it, in no order: what an operator's
// page shows of a host that is down. It changes nothing, and costs a copy
// of the table under the Dialer's lock.
func (d *Dialer) Windows() []Window {
	d.mu.Lock()
	out := make([]Window, 0, len(d.addrs))
	for k, e := range d.addrs {
		if e.failures > 0 {
			out = append(out, Window{Network: k.network, Addr: k.addr, Failures: e.failures, Until: e.until, Err: e.err})
		}
	}
	d.mu.Unlock()
	if d.spread != nil && len(out) > 0 {
		hosts := d.spread.hostsByAddr()
		for i := range out {
			out[i].Hosts = hosts[out[i].Addr]
		}
	}
	return out
}

// admit lets a dial to addr start at now, or refuses it. An admitted dial
// joins the address's current round, creating its entry if needed.
func (d *Dialer) admit(ctx context.Context, network, addr string, now time.Time) (dialAttempt, error) {
	if err := ctx.Err(); err != nil {
		return dialAttempt{}, err
	}
	key := dialKey{network, addr}
	d.mu.Lock()
	e := d.addrs[key]
	if e != nil && now.Before(e.until) {
		// Read under the lock: a dial of the round that set the window
		// may still fail and move it on.
		err := &BackoffError{Addr: addr, Remaining: e.until.Sub(now), Err: e.err}
		d.mu.Unlock()
		return dialAttempt{}, err
	}
	if e == nil {
		e = d.insert(key)
	}
	if e.inflight == 0 {
		e.quiet = now
	}
	e.inflight++
	round := e.failures
	d.mu.Unlock()
	// Drawn outside the lock: Backoff is the caller's code.
	b := d.policy().Duration(round)
	return dialAttempt{key: key, entry: e, round: round, start: now, backoff: b}, nil
}

// finish records how attempt a ended, at end: err is its error, nil for a
// connection; callerDone says the caller's context ended, in which case
// nothing is learnt about the server.
func (d *Dialer) finish(a dialAttempt, err error, callerDone bool, end time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := a.entry
	e.inflight--
	e.quiet = time.Time{}
	if e.inflight > 0 {
		e.quiet = end
	}
	switch {
	case err == nil:
		// However old the attempt, a connection is news: the address is
		// up now.
		delete(d.addrs, a.key)
		return
	case d.addrs[a.key] != e:
		// Stale: a success, reset or eviction came after this attempt
		// started, and the entry in the map (if any) is not its own.
		return
	case !callerDone:
		if e.failures == a.round {
			e.failures++
		}
		if until := d.Algorithm.windowEnd(a, end); until.After(e.until) {
			e.until, e.err = until, err
		}
	}
	if e.failures == 0 && e.inflight == 0 {
		delete(d.addrs, a.key)
	}
}

// insert adds a fresh entry for key, first making room if the table is
// full. d.mu must be held.
func (d *Dialer) insert(key dialKey) *dialEntry {
	if d.addrs == nil {
		d.addrs = make(map[dialKey]*dialEntry)
	}
	limit := d.MaxAddrs
	if limit <= 0 {
		limit = DefaultMaxAddrs
	}
	for len(d.addrs) >= limit {
		d.evict()
	}
	e := &dialEntry{}
	d.addrs[key] = e
	return e
}

// evict forgets one entry: the idle one whose window ended (or ends)
// first, or, when every entry has a dial in flight, any one. Idle entries
// go first because their state is complete; forgetting an entry with a
// dial in flight would also drop that dial's outcome. d.mu must be held.
func (d *Dialer) evict() {
	var victim dialKey
	var oldest *dialEntry
	for k, e := range d.addrs {
		switch {
		case oldest == nil,
			e.inflight == 0 && oldest.inflight > 0,
			(e.inflight == 0) == (oldest.inflight == 0) && e.until.Before(oldest.until):
			victim, oldest = k, e
		}
	}
	delete(d.addrs, victim)
}

func (d *Dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.Dial != nil {
		return d.Dial(ctx, network, addr)
	}
	nd := net.Dialer{KeepAlive: 30 * time.Second}
	return nd.DialContext(ctx, network, addr)
}

func (d *Dialer) policy() policy.Backoff {
	if d.Backoff != nil {
		return d.Backoff
	}
	return d.Algorithm.defaultBackoff()
}

// connectTimeout is the time an attempt with backoff b gets to connect.
func (d *Dialer) connectTimeout(b time.Duration) time.Duration {
	m := d.MinConnectTimeout
	if m <= 0 {
		m = DefaultMinConnectTimeout
	}
	return d.Algorithm.connectTimeout(b, m)
}

// tlsConfig returns the client config for a handshake with addr.
func (d *Dialer) tlsConfig(addr string) *tls.Config {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	cfg := &tls.Config{}
	if d.TLSConfig != nil {
		cfg = d.TLSConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	if len(cfg.NextProtos) == 0 {
		// What http.Transport offers with its own config, so that
		// HTTP/2 keeps working behind one.
		cfg.NextProtos = []string{"h2", "http/1.1"}
	}
	return cfg
}
