package retryhttp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// backendSet is one port served on several loopback addresses, as a name
// with several A records would be.
type backendSet struct {
	port  int
	addrs []netip.Addr
	mu    sync.Mutex
	hits  map[string]int // by local address
}

// newBackends serves handler on 127.0.0.1, 127.0.0.2, ... with one port.
// Linux routes all of 127/8 to loopback; elsewhere the test is skipped.
func newBackends(t *testing.T, n int, handler func(b *backendSet, w http.ResponseWriter, r *http.Request)) *backendSet {
	b := &backendSet{hits: make(map[string]int)}
	for attempt := 0; attempt < 5 && len(b.addrs) < n; attempt++ {
		var lns []net.Listener
		ok := true
		for i := range n {
			addr := "127.0.0." + strconv.Itoa(i+1) + ":" + strconv.Itoa(b.port)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				ok = false
				break
			}
			if i == 0 {
				b.port = ln.Addr().(*net.TCPAddr).Port
			}
			lns = append(lns, ln)
		}
		if !ok {
			for _, ln := range lns {
				ln.Close()
			}
			b.port = 0
			continue
		}
		for i, ln := range lns {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				local := r.Context().Value(http.LocalAddrContextKey).(net.Addr).String()
				b.mu.Lock()
				b.hits[local]++
				b.mu.Unlock()
				handler(b, w, r)
			}))
			srv.Listener.Close()
			srv.Listener = ln
			srv.Start()
			t.Cleanup(srv.Close)
			b.addrs = append(b.addrs, netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 1)}))
		}
	}
	if len(b.addrs) < n {
		t.Skip("cannot listen on several loopback addresses with one port")
	}
	return b
}

// transportFor returns a Transport with its own base, its name lookups
// answered with b's addresses for "backends.test".
func transportFor(t *testing.T, b *backendSet, cfg *policy.Config) *Transport {
	tr := &Transport{Policy: cfg}
	st := tr.init()
	st.spread.resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
		require.Equal(t, "backends.test", host)
		return append([]netip.Addr(nil), b.addrs...), nil
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// Three hedges sent at once reach three backends, not one, and the
// attempts on the other two are cancelled when the third answers.
func TestHedgesReachDistinctBackends(t *testing.T) {
	var arrived sync.WaitGroup
	arrived.Add(3)
	cancelled := make(chan struct{}, 3)
	b := newBackends(t, 3, func(b *backendSet, w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		arrived.Wait() // every copy is in flight at once
		if r.Context().Value(http.LocalAddrContextKey).(net.Addr).String() == "127.0.0.3:"+strconv.Itoa(b.port) {
			io.WriteString(w, "from the third")
			return
		}
		select {
		case <-r.Context().Done():
			cancelled <- struct{}{}
		case <-time.After(10 * time.Second):
			// Only when every copy reached one backend, so that the
			// test fails instead of hanging.
			t.Error("a losing attempt was not cancelled")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
		Hedge: &policy.Hedge{MaxAttempts: 3}}}} // hedgingDelay 0: all at once
	tr := transportFor(t, b, cfg)
	req, err := http.NewRequestWithContext(t.Context(), "GET", "http://backends.test:"+strconv.Itoa(b.port)+"/", nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, "from the third", string(body))
	b.mu.Lock()
	port := strconv.Itoa(b.port)
	assert.Equal(t, map[string]int{"127.0.0.1:" + port: 1, "127.0.0.2:" + port: 1, "127.0.0.3:" + port: 1}, b.hits)
	b.mu.Unlock()
	for range 2 { // the losers were cancelled on their servers
		select {
		case <-cancelled:
		case <-time.After(15 * time.Second): // reached only on failure
			t.Fatal("the losers were not cancelled")
		}
	}
}

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

// With the Transport's own base, a retry after a 5xx or a network error
// goes to another address of the host, as Envoy's previous_hosts does;
// after a 429 it may go back to the same one.
func TestRetriesAvoidTheAddressThatFailed(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(w http.ResponseWriter)
		want map[int]int // hits by last octet
	}{
		{"503", func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) }, map[int]int{1: 1, 2: 1}},
		{"reset", func(w http.ResponseWriter) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}, map[int]int{1: 1, 2: 1}},
		{"429", func(w http.ResponseWriter) { w.WriteHeader(http.StatusTooManyRequests) }, map[int]int{1: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackends(t, 2, func(b *backendSet, w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.Context().Value(http.LocalAddrContextKey).(net.Addr).String(), "127.0.0.1:") {
					tc.fail(w)
					return
				}
				io.WriteString(w, "from the second")
			})
			cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}}, Retry: &policy.Retry{
				MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
				BackoffMultiplier: 1, RetryableStatusCodes: []int{429, 503},
			}}}}
			tr := transportFor(t, b, cfg)
			req, err := http.NewRequestWithContext(t.Context(), "GET", "http://backends.test:"+strconv.Itoa(b.port)+"/", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			b.mu.Lock()
			defer b.mu.Unlock()
			got := map[int]int{}
			for addr, n := range b.hits {
				got[int(netip.MustParseAddrPort(addr).Addr().As4()[3])] += n
			}
			assert.Equal(t, tc.want, got, "hits by backend")
		})
	}
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
