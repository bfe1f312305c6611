package dial

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/retryhttp/retryhttp/internal/hostmap"
	"github.com/retryhttp/retryhttp/internal/hostport"
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
	// maxResolved is the number of hosts whose addresses are kept; past
	// it, those whose time is up go first, then the least recently used,
	// to be looked up again when used.
	maxResolved = 1024
	// maxPinned is the number of addresses with a transport of their
	// own; past it, the least recently used are closed, to be made anew
	// when used.
	maxPinned = 256
)

// spread sends the attempts of a request to distinct backends. It exists
// only when the Transport built its own base, so that it owns the dials:
// each resolved address of a host gets a transport of its own, a clone of
// the base that dials only that address, and an attempt goes through the
// transport of an address that no attempt of its request in flight (for
// hedges) or that failed (for retries) is using, as Envoy's previous_hosts
// does. Without it, every attempt would reach the address the base dials
// first, or an idle connection to it: one slow or broken backend would
// hold every copy of the request.
//
// A request to a host with one address, an IP literal or a proxy is left
// to the base. Routing costs a request two map lookups under a read lock
// and no allocation once its host is known. An address keeps its
// transport, and so its idle connections, across the lookups of its
// host.
type spread struct {
	base    *http.Transport
	dialer  *Dialer
	resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	lookups singleflight.Group // one lookup of a host at a time, shared

	// hosts are what is known of each URL host, nil until its first
	// lookup ends; pinned the transport of each address. Lookups and
	// dials happen outside their locks.
	hosts  *hostmap.Map[hostKey, atomic.Pointer[hostEntry]]
	pinned *hostmap.Map[string, pinned] // by host:port "@" ip:port
}

// hostKey names what spread knows of a URL host: the host as the URL
// writes it, lowercased, and the port its scheme implies, since
// http://h/ and https://h/ reach different ports of one name.
type hostKey struct {
	host, implied string
}

// hostEntry is what spread knows of one URL host until its time is up. It
// is never changed once made.
type hostEntry struct {
	until  time.Time
	target string   // host:port, as the base would dial it
	addrs  []string // ip:port of each address, when there are several
	keys   []string // each address's key in pinned
}

// pinned is the transport of one address.
type pinned struct {
	t *http.Transport
}

func newSpread(base *http.Transport, d *Dialer) *spread {
	s := &spread{
		base: base, dialer: d,
		resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
			if d.LookupNetIP != nil {
				return d.LookupNetIP(ctx, "ip", host)
			}
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
	}
	s.hosts = hostmap.New(hostmap.Options[hostKey, atomic.Pointer[hostEntry]]{Bound: maxResolved,
		Rank: func(p *atomic.Pointer[hostEntry], now time.Time) hostmap.Rank {
			e := p.Load()
			return hostmap.Rank{Idle: e == nil || !now.Before(e.until)} // to be looked up again anyway
		}})
	s.pinned = hostmap.New(hostmap.Options[string, pinned]{Bound: maxPinned, Init: s.pin,
		// Every transport is worth keeping (its pool may hold
		// connections): the least recently used go, closed.
		Rank:    func(*pinned, time.Time) hostmap.Rank { return hostmap.Rank{} },
		Dropped: func(p *pinned) { p.t.CloseIdleConnections() }})
	return s
}

// route returns the transport for the next attempt of req, whose URL host
// lowercased is host, and the address it dials, given the addresses the
// attempt must avoid; ctx bounds a lookup. An address backing off is
// passed over, and so is one whose dials have been in flight for 250 ms
// with none ending (a black hole, until its dials time out). When no
// address is left and one is backing off, avoided or not (a retry avoids
// the addresses that failed it), the attempt goes to the one whose window
// ends first, where its dial fails at once with a [*BackoffError],
// touching no network: left to the base, it would dial the host's name,
// a key with no window of its own, and reach the addresses that are
// down. It returns nil, "" when the choice is the base's to make: the
// host is an IP literal, has one address or none, is reached through a
// proxy, or every address is avoided or stalled, none backing off.
func (s *spread) route(ctx context.Context, req *http.Request, host string, avoid []string) (http.RoundTripper, string) {
	if s.base.Proxy != nil {
		if pu, err := s.base.Proxy(req); err != nil || pu != nil {
			return nil, ""
		}
	}
	e := s.entry(ctx, req.URL, host)
	if len(e.addrs) < 2 {
		return nil, ""
	}
	now := time.Now()
	first, firstEnds := -1, time.Time{} // of those backing off, whose window ends first
	for i, ap := range e.addrs {
		unready, window := s.dialer.unready("tcp", ap, now)
		if !unready && !slices.Contains(avoid, ap) {
			return s.transport(e, i), ap
		}
		if !window.IsZero() && (first < 0 || window.Before(firstEnds)) {
			first, firstEnds = i, window
		}
	}
	if first >= 0 {
		return s.transport(e, first), e.addrs[first]
	}
	return nil, ""
}

// maxAddrs bounds the addresses of one host that attempts are spread
// over: enough for every hedge.
const maxAddrs = 8

// entry returns what is known of u's host (host, lowercased), looking it
// up when that is stale; concurrent callers share one lookup. A failed
// lookup is remembered for failedTTL unless ctx ended it: the base looks
// the host up again and reports the failure itself.
//
// A caller waits for a shared lookup only as long as its own ctx lasts:
// the lookup runs under the context of the caller that started it, which
// may have no deadline, and a resolver that hangs must not hold a request
// past its own end. A caller that leaves gets an entry without addresses,
// leaving the choice to the base, which then fails with ctx's error.
// The lookup runs on a goroutine of singleflight's, which ends with it.
func (s *spread) entry(ctx context.Context, u *url.URL, host string) *hostEntry {
	now := time.Now()
	key := hostKey{host, hostport.Default(u.Scheme)}
	if e := s.hosts.Get(key).Load(); e != nil && now.Before(e.until) {
		return e
	}
	ch := s.lookups.DoChan(key.implied+" "+host, func() (any, error) {
		e := s.lookup(ctx, u)
		if e.until.IsZero() {
			return e, nil // not to be remembered
		}
		s.hosts.Get(key).Store(e) // looked up again: the host's entry may have gone meanwhile
		return e, nil
	})
	select {
	case r := <-ch:
		return r.Val.(*hostEntry)
	case <-ctx.Done():
		return &hostEntry{}
	}
}

// lookup resolves u's host into a fresh entry. A URL whose port is
// neither written nor implied by its scheme (one net/http does not send)
// gets an entry without addresses: there is nothing to dial, and the base
// reports the scheme itself.
func (s *spread) lookup(ctx context.Context, u *url.URL) *hostEntry {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = hostport.Default(u.Scheme)
	}
	e := &hostEntry{until: time.Now().Add(resolveTTL), target: net.JoinHostPort(host, port)}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || host == "" {
		return e
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return e
	}
	addrs, err := s.resolve(ctx, strings.ToLower(host))
	if err != nil {
		if ctx.Err() != nil {
			return &hostEntry{}
		}
		e.until = time.Now().Add(failedTTL)
		return e
	}
	for _, a := range addrs[:min(len(addrs), maxAddrs)] {
		ap := netip.AddrPortFrom(a.Unmap(), uint16(p)).String()
		e.addrs = append(e.addrs, ap)
		e.keys = append(e.keys, e.target+"@"+ap)
	}
	return e
}

// transport returns the transport that dials address i of e, creating it
// if need be. It keeps its own pool of connections, so that a connection
// reused for an attempt is one to that address. Past maxPinned
// addresses, the transports least recently used are closed (connections
// in use stay open until their response ends) and made anew when used.
func (s *spread) transport(e *hostEntry, i int) *http.Transport {
	return s.pinned.Get(e.keys[i]).t
}

// pin makes the transport of the address key names (target "@" ip): a
// clone of the base whose dials for target go to ip. A URL host holds no
// "@", so the first one ends target.
func (s *spread) pin(key string, p *pinned) {
	target, ip, _ := strings.Cut(key, "@")
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
	p.t = t
}

// hostsByAddr returns the URL hosts (lowercased, as a request's URL
// names them) whose attempts were spread over each address, for
// [Dialer.Windows]. It changes nothing; entries past their time count, as
// their addresses may still be backing off.
func (s *spread) hostsByAddr() map[string][]string {
	out := make(map[string][]string)
	s.hosts.Each(func(k hostKey, p *atomic.Pointer[hostEntry]) {
		if e := p.Load(); e != nil {
			for _, a := range e.addrs {
				if !slices.Contains(out[a], k.host) {
					out[a] = append(out[a], k.host)
				}
			}
		}
	})
	return out
}

// addrsOf returns the addresses attempts to host (a URL host, lowercased)
// were spread over, whatever the scheme's port; with anyPort, those of
// host on every port its URLs named too ("h" covers "h:8443").
func (s *spread) addrsOf(host string, anyPort bool) []string {
	var out []string
	s.hosts.Each(func(k hostKey, p *atomic.Pointer[hostEntry]) {
		if e := p.Load(); e != nil && (k.host == host || anyPort && hostOf(k.host) == host) {
			out = append(out, e.addrs...)
		}
	})
	return out
}

// closeIdle closes the idle connections of every address's transport.
func (s *spread) closeIdle() {
	s.pinned.Each(func(_ string, p *pinned) { p.t.CloseIdleConnections() })
}
