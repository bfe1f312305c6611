package retryhttp

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bounds of a spread's memory.
const (
	// resolveTTL is how long a host's addresses are used before they are
	// looked up again.
	resolveTTL = 30 * time.Second
	// failedTTL is how long a failed lookup is remembered, so that the
	// hedges of every request to a host that does not resolve do not
	// each wait for the resolver in turn.
	failedTTL = 5 * time.Second
	// maxResolved is the number of hosts whose addresses are kept; when
	// it is reached, they are all forgotten and looked up again.
	maxResolved = 1024
	// maxPinned is the number of addresses with a transport of their
	// own; when it is reached, one is closed and forgotten.
	maxPinned = 256
)

// spread sends the attempts of a hedged request to distinct backends. It
// exists only when the Transport built its own base, so that it owns the
// dials: each resolved address of a host gets a transport of its own, a
// clone of the base that dials only that address, and an attempt goes
// through the transport of an address that no attempt of its request in
// flight is using. Without it, every attempt would reach the address the
// base dials first, or an idle connection to it: one slow backend would
// hold every copy of the request.
type spread struct {
	base    *http.Transport
	dialer  *Dialer
	resolve func(ctx context.Context, host string) ([]netip.Addr, error)

	// mu guards the maps. It is held for map operations only: lookups
	// and dials happen outside it.
	mu       sync.Mutex
	resolved map[string]resolvedHost    // by host name
	pinned   map[string]*http.Transport // by host:port "@" ip:port
}

type resolvedHost struct {
	addrs []netip.Addr
	until time.Time
}

func newSpread(base *http.Transport, d *Dialer) *spread {
	return &spread{
		base: base, dialer: d,
		resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
		resolved: make(map[string]resolvedHost),
		pinned:   make(map[string]*http.Transport),
	}
}

// route returns the transport for the next attempt of req and the address
// it dials, given the addresses busy with the request's attempts in flight.
// It returns nil, "" when the choice is the base's to make: the host is
// an IP literal, has one address or none, is reached through a proxy, or
// every address is busy or backing off.
func (s *spread) route(req *http.Request, busy []string) (http.RoundTripper, string) {
	u := req.URL
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = defaultPort(u)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || host == "" {
		return nil, ""
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil, ""
	}
	if s.base.Proxy != nil {
		if pu, err := s.base.Proxy(req); err != nil || pu != nil {
			return nil, ""
		}
	}
	addrs := s.lookup(req.Context(), host)
	if len(addrs) < 2 {
		return nil, ""
	}
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, uint16(p)).String()
		if slices.Contains(busy, ap) || s.dialer.backingOff("tcp", ap) {
			continue
		}
		return s.transport(net.JoinHostPort(host, port), ap), ap
	}
	return nil, ""
}

// defaultPort is the port net/http dials for u when it names none.
func defaultPort(u *url.URL) string {
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// lookup returns host's addresses, from the cache while they are fresh.
// A failed lookup returns none, and is remembered for failedTTL unless the
// request's own context ended it: the base looks the host up again and
// reports the failure itself.
func (s *spread) lookup(ctx context.Context, host string) []netip.Addr {
	host = strings.ToLower(host)
	now := time.Now()
	s.mu.Lock()
	r, ok := s.resolved[host]
	s.mu.Unlock()
	if ok && now.Before(r.until) {
		return r.addrs
	}
	addrs, err := s.resolve(ctx, host)
	ttl := resolveTTL
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		addrs, ttl = nil, failedTTL
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap()
	}
	s.mu.Lock()
	if len(s.resolved) >= maxResolved {
		clear(s.resolved)
	}
	s.resolved[host] = resolvedHost{addrs: addrs, until: now.Add(ttl)}
	s.mu.Unlock()
	return addrs
}

// transport returns the transport that dials ip for target (host:port),
// creating it if need be. It keeps its own pool of connections, so that a
// connection reused for an attempt is one to that address.
func (s *spread) transport(target, ip string) *http.Transport {
	key := target + "@" + ip
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.pinned[key]; t != nil {
		return t
	}
	if len(s.pinned) >= maxPinned {
		for k, t := range s.pinned {
			// Connections in use stay open until their response
			// ends; idle ones close now.
			t.CloseIdleConnections()
			delete(s.pinned, k)
			break
		}
	}
	t := s.base.Clone()
	// Dials for anything but target (none are expected, as requests
	// through a proxy are not routed here) go where they were meant to.
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if strings.EqualFold(addr, target) {
			addr = ip
		}
		return s.dialer.DialContext(ctx, network, addr)
	}
	// The handshake is for target's name, whichever address it reaches.
	t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if strings.EqualFold(addr, target) {
			return s.dialer.dialTLS(ctx, network, ip, addr)
		}
		return s.dialer.DialTLSContext(ctx, network, addr)
	}
	s.pinned[key] = t
	return t
}

// closeIdle closes the idle connections of every address's transport.
func (s *spread) closeIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.pinned {
		t.CloseIdleConnections()
	}
}
