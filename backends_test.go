package retryhttp

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/policy"
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
	st.dialer.LookupNetIP = func(_ context.Context, network, host string) ([]netip.Addr, error) {
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
