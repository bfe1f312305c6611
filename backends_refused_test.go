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
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/dial"
	"github.com/retryhttp/retryhttp/policy"
)

// halfDown is a host with two addresses, 127.0.0.1 and 127.0.0.2, on one
// port, of which only the second listens: the first refuses every
// connection. It counts the dials each address gets.
type halfDown struct {
	port  int
	mu    sync.Mutex
	dials map[string]int // by ip:port
	hits  int            // requests the second address served
	// backsOff reports whether the Transport's dialer backs the first
	// address off; set by transport, under mu.
	backsOff func() bool
}

func newHalfDown(t *testing.T) *halfDown {
	h := &halfDown{dials: make(map[string]int)}
	for range 5 {
		ln, err := net.Listen("tcp", "127.0.0.2:0")
		if err != nil {
			t.Skip("cannot listen on 127.0.0.2")
		}
		port := ln.Addr().(*net.TCPAddr).Port
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close() // the first address is not down on this port: another
			ln.Close()
			continue
		}
		h.port = port
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// No answer before the first address's refusal is recorded:
			// a hedge sent beside the attempt that dials it would
			// otherwise win, on a busy machine, before that dial ends,
			// and cut it off unrecorded, leaving the address to be
			// dialed again by the next request.
			h.mu.Lock()
			backsOff := h.backsOff
			h.mu.Unlock()
			for backsOff != nil && !backsOff() && r.Context().Err() == nil {
				time.Sleep(time.Millisecond)
			}
			io.Copy(io.Discard, r.Body)
			h.mu.Lock()
			h.hits++
			h.mu.Unlock()
			io.WriteString(w, "from the second")
		}))
		srv.Listener.Close()
		srv.Listener = ln
		srv.Start()
		t.Cleanup(srv.Close)
		return h
	}
	t.Skip("no port free on 127.0.0.2 and closed on 127.0.0.1")
	return nil
}

// transport returns a Transport with its own base, whose lookups of
// "down.test" give both addresses, first the one that is down, and whose
// dials of the name itself (the base's own choice) try them in that
// order, as net.Dialer does.
func (h *halfDown) transport(t *testing.T, cfg *policy.Config) *Transport {
	tr := &Transport{Policy: cfg}
	st := tr.init()
	st.dialer.LookupNetIP = func(_ context.Context, _, host string) ([]netip.Addr, error) {
		require.Equal(t, "down.test", host)
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")}, nil
	}
	st.dialer.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		h.mu.Lock()
		h.dials[addr]++
		h.mu.Unlock()
		var d net.Dialer
		if !strings.HasPrefix(addr, "down.test:") {
			return d.DialContext(ctx, network, addr)
		}
		c, err := d.DialContext(ctx, network, "127.0.0.1:"+strconv.Itoa(h.port))
		if err != nil {
			c, err = d.DialContext(ctx, network, "127.0.0.2:"+strconv.Itoa(h.port))
		}
		return c, err
	}
	// A window that outlasts the test: on a slow machine, five calls
	// could outlast the default first window of a second, and the
	// address would be tried again, rightly.
	st.dialer.Backoff = policy.Table{Steps: []time.Duration{time.Hour}}
	h.mu.Lock()
	h.backsOff = func() bool {
		for _, w := range st.dialer.Windows() {
			if w.Addr == "127.0.0.1:"+strconv.Itoa(h.port) {
				return true
			}
		}
		return false
	}
	h.mu.Unlock()
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func (h *halfDown) url() string { return "http://down.test:" + strconv.Itoa(h.port) + "/" }

// With the Transport's own base, an address that refuses connections is
// tried once: its refusal is resent at once, transparently, to the other
// address, for a POST too, spending no attempt and no token; later
// requests, and every hedge, leave it alone while it backs off. (A hedge
// that finds no other address free goes to the one that backs off, whose
// dial fails at once: it dials nothing.)
func TestAnAddressThatRefusesIsAvoided(t *testing.T) {
	hedge := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
		Hedge: &policy.Hedge{MaxAttempts: 2}}}} // hedgingDelay 0: both at once
	tests := []struct {
		name   string
		cfg    *policy.Config
		method string
	}{
		{"GET under the default policy", policy.Default(), "GET"},
		{"POST under the default policy", policy.Default(), "POST"},
		{"POST with no policy", policy.None(), "POST"},
		{"GET hedged", hedge, "GET"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHalfDown(t)
			cfg := tc.cfg
			cfg.Throttle = &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}
			tr := h.transport(t, cfg)
			for call := range 5 {
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // reached only on failure
				req, err := http.NewRequestWithContext(ctx, tc.method, h.url(), strings.NewReader("body"))
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err, "call %d", call)
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				cancel()
				require.NoError(t, err)
				assert.Equal(t, "from the second", string(body), "call %d", call)
				if cfg.Rules == nil || cfg.Rules[0].Hedge == nil {
					assert.Empty(t, resp.Header.Get(AttemptsHeader), "call %d: the first attempt answered", call)
				}
			}
			first := "127.0.0.1:" + strconv.Itoa(h.port)
			h.mu.Lock()
			assert.Equal(t, 1, h.dials[first], "dials to the address that is down")
			h.mu.Unlock()
			st := tr.Stats()
			if cfg.Rules == nil || cfg.Rules[0].Hedge == nil {
				assert.Zero(t, st.Total.ExtraAttempts, "no attempt spent on the refusal")
				assert.Equal(t, uint64(1), st.Total.TransparentRetries)
			}
			hs := st.Hosts["down.test:"+strconv.Itoa(h.port)]
			assert.Equal(t, hs.MaxTokens, hs.Tokens, "no token spent on the refusal")
			require.Len(t, st.DialBackoff, 1)
			assert.Equal(t, first, st.DialBackoff[0].Addr)
			assert.True(t, errors.Is(st.DialBackoff[0].Err, syscall.ECONNREFUSED), "got %v", st.DialBackoff[0].Err)
		})
	}
}

// A host whose every address refuses, each now inside its backoff
// window: the next calls fail at once with ErrBackoff and dial nothing,
// as for a host of one address. Left to the base, an attempt would dial
// the host's name, which has no window of its own, and reach the
// addresses that are down.
func TestEveryAddressBackingOffDialsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &Transport{Policy: policy.Default()}
		st := tr.init()
		defer tr.CloseIdleConnections()
		st.dialer.LookupNetIP = func(context.Context, string, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")}, nil
		}
		var mu sync.Mutex
		dials := map[string]int{}
		st.dialer.Dial = func(_ context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dials[addr]++
			mu.Unlock()
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		}
		st.dialer.Backoff = policy.Table{Steps: []time.Duration{time.Hour}}
		get := func() error {
			req, err := http.NewRequestWithContext(t.Context(), "GET", "http://two.test/", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}
		require.Error(t, get())
		mu.Lock()
		assert.Equal(t, map[string]int{"10.0.0.1:80": 1, "10.0.0.2:80": 1}, dials, "each address dialed once, the name never")
		mu.Unlock()
		for call := range 3 {
			start := time.Now()
			err := get()
			assert.ErrorIs(t, err, dial.ErrBackoff, "call %d", call)
			assert.Less(t, time.Since(start), time.Second, "call %d: the policy's waits, no dial's", call)
		}
		mu.Lock()
		assert.Equal(t, map[string]int{"10.0.0.1:80": 1, "10.0.0.2:80": 1}, dials, "no dial while every address backs off")
		mu.Unlock()
	})
}
