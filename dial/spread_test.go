package dial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A request that is not hedged, or a host with one address, is left to
// the base; a later request reuses the connection of its address.
func TestRouteLeavesSingleAddressesToTheBase(t *testing.T) {
	s := newSpread(&http.Transport{}, &Dialer{})
	s.resolve = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	for _, u := range []string{"http://one.test/", "http://127.0.0.1:8080/", "http://[::1]/"} {
		req, err := http.NewRequest("GET", u, nil)
		require.NoError(t, err)
		rt, addr := s.route(req.Context(), req, strings.ToLower(req.URL.Host), nil)
		assert.Nil(t, rt, u)
		assert.Empty(t, addr, u)
	}
	s.resolve = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("::ffff:10.0.0.2")}, nil
	}
	req, err := http.NewRequest("GET", "https://Two.test/", nil)
	require.NoError(t, err)
	rt1, addr1 := s.route(req.Context(), req, strings.ToLower(req.URL.Host), nil)
	assert.Equal(t, "10.0.0.1:443", addr1)
	rt2, addr2 := s.route(req.Context(), req, strings.ToLower(req.URL.Host), []string{addr1})
	assert.Equal(t, "10.0.0.2:443", addr2, "a v4-mapped address is dialled as v4")
	assert.NotSame(t, rt1, rt2)
	_, addr3 := s.route(req.Context(), req, strings.ToLower(req.URL.Host), []string{addr1, addr2})
	assert.Empty(t, addr3, "every address busy: the base chooses")
	again, _ := s.route(req.Context(), req, strings.ToLower(req.URL.Host), nil)
	assert.Same(t, rt1, again, "one transport, and pool, per address")
}

// A host that does not resolve is asked for again only after failedTTL,
// not by every hedge of every request; a lookup cut short by its own
// request's end is not remembered for others.
func TestFailedLookupsAreRememberedBriefly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSpread(&http.Transport{}, &Dialer{})
		lookups := 0
		s.resolve = func(ctx context.Context, _ string) ([]netip.Addr, error) {
			lookups++
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return nil, errors.New("no such host")
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		gone, err := http.NewRequestWithContext(ctx, "GET", "http://gone.test/", nil)
		require.NoError(t, err)
		rt, _ := s.route(gone.Context(), gone, "gone.test", nil)
		assert.Nil(t, rt)
		req, err := http.NewRequest("GET", "http://gone.test/", nil)
		require.NoError(t, err)
		for range 3 {
			rt, _ := s.route(req.Context(), req, strings.ToLower(req.URL.Host), nil)
			assert.Nil(t, rt)
		}
		assert.Equal(t, 2, lookups, "the cancelled lookup, then one for the three routes")
		time.Sleep(failedTTL)
		s.route(req.Context(), req, strings.ToLower(req.URL.Host), nil)
		assert.Equal(t, 3, lookups)
	})
}

// An address keeps its transport, and so its idle connections, when its
// host is looked up again; concurrent requests to a host that is not
// known yet share one lookup and one transport per address.
func TestAddressesKeepTheirTransports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSpread(&http.Transport{}, &Dialer{})
		var lookups atomic.Int64
		s.resolve = func(context.Context, string) ([]netip.Addr, error) {
			lookups.Add(1)
			time.Sleep(time.Millisecond) // a lookup takes time: others arrive meanwhile
			return []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")}, nil
		}
		req, err := http.NewRequest("GET", "https://two.test/", nil)
		require.NoError(t, err)
		route := func() http.RoundTripper {
			rt, _ := s.route(t.Context(), req, "two.test", nil)
			return rt
		}
		var wg sync.WaitGroup
		got := make([]http.RoundTripper, 10)
		for i := range got {
			wg.Go(func() { got[i] = route() })
		}
		wg.Wait()
		assert.Equal(t, int64(1), lookups.Load(), "one lookup for ten requests")
		for _, rt := range got {
			assert.Same(t, got[0], rt)
		}

		time.Sleep(resolveTTL)
		assert.Same(t, got[0], route(), "the same transport after the host is looked up again")
		assert.Equal(t, int64(2), lookups.Load())
	})
}

// A URL whose scheme implies no port is left to the base without a
// lookup: there is no port to dial its addresses on, and the base reports
// the scheme. http and https still imply theirs, in any case.
func TestRouteLeavesUnknownSchemesToTheBase(t *testing.T) {
	s := newSpread(&http.Transport{}, &Dialer{})
	lookups := 0
	s.resolve = func(context.Context, string) ([]netip.Addr, error) {
		lookups++
		return []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")}, nil
	}
	for _, u := range []string{"ftp://files.test/", "ws://socket.test/", "foo://other.test/"} {
		req, err := http.NewRequest("GET", u, nil)
		require.NoError(t, err)
		rt, addr := s.route(req.Context(), req, strings.ToLower(req.URL.Host), nil)
		assert.Nil(t, rt, "%s: got a transport, want the base's choice", u)
		assert.Empty(t, addr, "%s: got address %q, want none", u, addr)
	}
	assert.Zero(t, lookups, "got %d lookups, want none for a scheme with no known port", lookups)
	for _, tc := range []struct{ url, want string }{
		{"HTTP://one.test/", "10.0.0.1:80"},
		{"HTTPS://two.test/", "10.0.0.1:443"},
		{"ftp://three.test:21/", "10.0.0.1:21"},
	} {
		req, err := http.NewRequest("GET", tc.url, nil)
		require.NoError(t, err)
		_, addr := s.route(req.Context(), req, strings.ToLower(req.URL.Host), nil)
		assert.Equal(t, tc.want, addr, "%s: got %q, want %q", tc.url, addr, tc.want)
	}
}

// http://h/ and https://h/ are one name but two ports: what is known of
// one does not route the other to the wrong port.
func TestRouteKeepsSchemesOfOneHostApart(t *testing.T) {
	s := newSpread(&http.Transport{}, &Dialer{})
	lookups := 0
	s.resolve = func(context.Context, string) ([]netip.Addr, error) {
		lookups++
		return []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")}, nil
	}
	for _, tc := range []struct{ url, want string }{
		{"http://two.test/", "10.0.0.1:80"},
		{"https://two.test/", "10.0.0.1:443"},
		{"HTTP://two.test/", "10.0.0.1:80"},
		{"https://two.test:8443/", "10.0.0.1:8443"},
	} {
		req, err := http.NewRequest("GET", tc.url, nil)
		require.NoError(t, err)
		_, addr := s.route(req.Context(), req, strings.ToLower(req.URL.Host), nil)
		assert.Equal(t, tc.want, addr, "%s: got %q, want %q", tc.url, addr, tc.want)
	}
	assert.Equal(t, 3, lookups, "got %d lookups, want one per port", lookups)
}

// A spread that meets many more hosts than it keeps forgets those it
// stopped using, never one in use: the host it keeps routing to is not
// looked up again before its time, and keeps its transport (and so its
// idle connections).
func TestRoutingKeepsWhatItUses(t *testing.T) {
	s := newSpread(&http.Transport{}, &Dialer{})
	lookups := map[string]int{}
	s.resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
		lookups[host]++
		n := len(lookups)
		a, b := netip.AddrFrom4([4]byte{10, byte(n >> 8), byte(n), 1}), netip.AddrFrom4([4]byte{10, byte(n >> 8), byte(n), 2})
		return []netip.Addr{a, b}, nil
	}
	route := func(host string) http.RoundTripper {
		req, err := http.NewRequest("GET", "https://"+host+"/", nil)
		require.NoError(t, err)
		rt, _ := s.route(req.Context(), req, host, nil)
		require.NotNil(t, rt, "got %s left to the base", host)
		return rt
	}
	kept := route("keep.test")
	for i := range 3 * maxResolved {
		route(fmt.Sprintf("h%d.test", i))
		require.Same(t, kept, route("keep.test"), "got keep.test's transport remade after %d other hosts", i+1)
		require.LessOrEqual(t, s.hosts.Len(), maxResolved)
		require.LessOrEqual(t, s.pinned.Len(), maxPinned)
	}
	assert.Equal(t, 1, lookups["keep.test"], "got keep.test looked up again within its time")
}

// A request that joins another's lookup of its host waits for it no
// longer than its own context lasts: a resolver that hangs under a
// request with no deadline must not hold every other request to the host.
func TestRouteLeavesALookupWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, d := NewBase()
		d.LookupNetIP = func(ctx context.Context, _, _ string) ([]netip.Addr, error) {
			<-ctx.Done() // a resolver that answers no one
			return nil, ctx.Err()
		}
		req, err := http.NewRequest("GET", "https://slow.test/", nil)
		require.NoError(t, err)
		first, cancelFirst := context.WithCancel(t.Context())
		defer cancelFirst()
		go d.Route(first, req, "slow.test", nil) // starts the lookup, and waits
		synctest.Wait()

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		rt, addr := d.Route(ctx, req, "slow.test", nil)
		assert.Equal(t, time.Second, time.Since(start), "got a wait of %v, want the request's own 1s", time.Since(start))
		assert.Nil(t, rt, "got a transport, want the base's choice")
		assert.Empty(t, addr)
		cancelFirst()
		synctest.Wait()
	})
}

// ResetBackoff of a host alone ends the windows of the addresses Route
// spread its attempts over on every port its URLs named, not only on the
// ports its schemes imply.
func TestResetBackoffOfAHostCoversItsRoutedPorts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, d := NewBase()
		f := &fakeNet{outcome: refuse}
		d.Dial, d.Backoff = f.dial, exact
		d.LookupNetIP = func(context.Context, string, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")}, nil
		}
		var addrs []string
		for _, u := range []string{"https://api.test:8443/", "https://api.test/"} {
			req, err := http.NewRequest("GET", u, nil)
			require.NoError(t, err)
			_, addr := d.Route(t.Context(), req, strings.ToLower(req.URL.Host), nil)
			require.NotEmpty(t, addr, "%s: got the base's choice, want an address", u)
			failAndWindow(t, d, f, addr)
			addrs = append(addrs, addr)
		}
		d.ResetBackoff("API.test")
		for _, a := range addrs {
			assert.False(t, d.backingOff("tcp", a), "got %s still backing off after ResetBackoff of its host", a)
		}
	})
}

// New attempts go elsewhere once an address's dials have been in flight
// for stallAfter with none ending, a black hole's until they time out,
// and come back to it once one ends; an address dialed for less is kept.
func TestRouteLeavesAStalledAddress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, d := NewBase()
		const hole, live = "10.0.0.1:443", "10.0.0.2:443"
		d.Dial = func(ctx context.Context, _, addr string) (net.Conn, error) {
			if addr == hole {
				<-ctx.Done() // dropped on the floor, as a black hole does
				return nil, ctx.Err()
			}
			c, peer := net.Pipe()
			peer.Close()
			return c, nil
		}
		d.LookupNetIP = func(context.Context, string, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")}, nil
		}
		req, err := http.NewRequest("GET", "https://two.test/", nil)
		require.NoError(t, err)
		route := func() string {
			_, addr := d.Route(t.Context(), req, "two.test", nil)
			return addr
		}
		require.Equal(t, hole, route(), "the first address first")
		dialed := make(chan error, 1)
		go func() {
			c, err := d.DialContext(t.Context(), "tcp", hole)
			if c != nil {
				c.Close()
			}
			dialed <- err
		}()
		time.Sleep(stallAfter - time.Millisecond)
		assert.Equal(t, hole, route(), "a dial in flight for less than stallAfter is no sign")
		time.Sleep(time.Millisecond)
		assert.Equal(t, live, route(), "got new attempts sent to the stalled address")
		require.Error(t, <-dialed, "the black hole's dial times out")
		assert.Equal(t, hole, route(), "its dial has ended, and its window with it: tried again")
	})
}
