package dial

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/retryhttp/retryhttp/policy"
)

// Timed tests run in synctest bubbles: virtual time, and synctest.Test
// fails if a goroutine of the bubble outlives it (their leak check).

var errDialRefused = errors.New("connection refused")

// fakeNet is a Dial func whose outcome the test chooses; it records the
// virtual time of every call.
type fakeNet struct {
	mu      sync.Mutex
	calls   []time.Time
	outcome func(ctx context.Context) error
	// connect makes the connection when outcome allows one; nil means
	// one end of a net.Pipe.
	connect func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (f *fakeNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	f.mu.Lock()
	f.calls = append(f.calls, time.Now())
	out := f.outcome
	f.mu.Unlock()
	if err := out(ctx); err != nil {
		return nil, err
	}
	if f.connect != nil {
		return f.connect(ctx, network, addr)
	}
	c, peer := net.Pipe()
	peer.Close()
	return c, nil
}

func (f *fakeNet) set(outcome func(ctx context.Context) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.outcome = outcome
}

func (f *fakeNet) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func refuse(context.Context) error { return errDialRefused }
func accept(context.Context) error { return nil }

// hang makes every dial wait until its context ends.
var hang = dialGate(nil)

// dialGate makes every dial wait for an outcome sent by the test.
func dialGate(c chan error) func(context.Context) error {
	return func(ctx context.Context) error {
		select {
		case err := <-c:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// exact is a jitter-free policy whose windows the tests can state exactly.
var exact = policy.Exponential{Initial: time.Second, Max: time.Minute, Multiplier: 2}

// newDialer returns a Dialer whose dials end as outcome says.
func newDialer(outcome func(context.Context) error, b policy.Backoff) (*Dialer, *fakeNet) {
	f := &fakeNet{outcome: outcome}
	return &Dialer{Dial: f.dial, Backoff: b}, f
}

// try dials and closes any connection it gets.
func try(ctx context.Context, d *Dialer, network, addr string) error {
	c, err := d.DialContext(ctx, network, addr)
	if err == nil {
		c.Close()
	}
	return err
}

// window dials addr over tcp, which must be backing off, and returns how
// long is left; the refusal must make no network call and take no time.
func window(t *testing.T, d *Dialer, f *fakeNet, addr string) time.Duration {
	t.Helper()
	calls, start := f.count(), time.Now()
	err := try(t.Context(), d, "tcp", addr)
	var be *BackoffError
	require.ErrorAs(t, err, &be)
	require.ErrorIs(t, err, ErrBackoff)
	assert.Equal(t, addr, be.Addr)
	assert.Equal(t, calls, f.count(), "a refused dial reached the network")
	assert.Zero(t, time.Since(start), "a refused dial took time")
	return be.Remaining
}

// failAndWindow dials addr expecting a network failure, and returns the
// window that failure opened.
func failAndWindow(t *testing.T, d *Dialer, f *fakeNet, addr string) time.Duration {
	t.Helper()
	require.ErrorIs(t, try(t.Context(), d, "tcp", addr), errDialRefused)
	return window(t, d, f, addr)
}

func TestDialAlwaysFailing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		d, f := newDialer(refuse, nil)
		var windows []time.Duration
		for start := time.Now(); time.Since(start) < 3*time.Hour; {
			w := failAndWindow(t, d, f, "db:5432")
			base := math.Min(math.Pow(1.6, float64(len(windows))), 120) // seconds
			assert.InDelta(t, base, w.Seconds(), 0.2*base, "window %d", len(windows))
			windows = append(windows, w)
			time.Sleep(w - time.Nanosecond) // still too early
			require.Equal(t, time.Nanosecond, window(t, d, f, "db:5432"))
			time.Sleep(time.Nanosecond)
		}
		for i := 1; i < len(f.calls); i++ {
			require.Equal(t, windows[i-1], f.calls[i].Sub(f.calls[i-1]), "interval %d", i)
		}
		// 1.6^11 > 120: about 11 attempts in the first ~5 min, then one
		// every 96 to 144 s.
		n := len(f.calls)
		assert.True(t, n >= 80 && n <= 120, "got %d attempts in 3h, want 80..120", n)
	})
}

func TestDialClientAndServerStartTogether(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		up := time.Now().Add(500 * time.Millisecond)
		f := &fakeNet{outcome: func(context.Context) error {
			if time.Now().Before(up) {
				return errDialRefused
			}
			return nil
		}}
		d := &Dialer{Dial: f.dial}
		start := time.Now()
		time.Sleep(failAndWindow(t, d, f, "api:443"))
		require.NoError(t, try(t.Context(), d, "tcp", "api:443"))
		assert.InDelta(t, 1, time.Since(start).Seconds(), 0.2, "first retry")
		assert.Equal(t, 2, f.count())
		// A connection ends the backoff: the next failure waits the
		// first step again (1 s, ±20%).
		f.set(refuse)
		assert.InDelta(t, 1, failAndWindow(t, d, f, "api:443").Seconds(), 0.2, "a connection must end the backoff")
	})
}

func TestDialThousandClientsDisperse(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeNet{outcome: refuse}
		lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
		for range 1000 {
			w := failAndWindow(t, &Dialer{Dial: f.dial}, f, "api:443")
			assert.InDelta(t, 1, w.Seconds(), 0.2)
			lo, hi = min(lo, w), max(hi, w)
		}
		assert.GreaterOrEqual(t, hi-lo, 300*time.Millisecond, "clients retry in lockstep")
	})
}

func TestDialResetCutsBackoffShort(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		d, f := newDialer(refuse, exact)
		for range 5 {
			time.Sleep(failAndWindow(t, d, f, "db:5432"))
		}
		require.Equal(t, 32*time.Second, failAndWindow(t, d, f, "db:5432"))
		require.ErrorIs(t, try(t.Context(), d, "tcp4", "db:5432"), errDialRefused)
		failAndWindow(t, d, f, "other:5432")

		d.ResetBackoff("db:5432")
		f.set(accept)
		assert.NoError(t, try(t.Context(), d, "tcp", "db:5432"))
		assert.NoError(t, try(t.Context(), d, "tcp4", "db:5432"), "Reset covers every network")
		window(t, d, f, "other:5432") // and only its address
		f.set(refuse)
		assert.Equal(t, time.Second, failAndWindow(t, d, f, "db:5432"), "the counter restarts")
	})
}

func TestDialMinConnectTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		backoff          policy.Backoff
		min, cut, window time.Duration // window: after the next, instant failure
	}{
		{"default", exact, 0, 20 * time.Second, 2 * time.Second},
		{"longer backoff", policy.Exponential{Initial: 30 * time.Second, Multiplier: 2},
			5 * time.Second, 30 * time.Second, 60 * time.Second},
		{"set", exact, 3 * time.Second, 3 * time.Second, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeNet{outcome: hang}
				d := &Dialer{Dial: f.dial, Backoff: tt.backoff, MinConnectTimeout: tt.min}
				start := time.Now()
				assert.ErrorIs(t, try(t.Context(), d, "tcp", "blackhole:80"), context.DeadlineExceeded)
				assert.Equal(t, tt.cut, time.Since(start))
				f.set(refuse) // the cut attempt counted: the next backoff is step 1
				assert.Equal(t, tt.window, failAndWindow(t, d, f, "blackhole:80"))
			})
		})
	}
}

func TestDialCallerContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		d, f := newDialer(hang, exact)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		assert.ErrorIs(t, try(ctx, d, "tcp", "slow:80"), context.DeadlineExceeded)
		assert.False(t, d.backingOff("tcp", "slow:80"), "the caller's deadline says nothing about the server")

		f.set(refuse)
		require.Equal(t, time.Second, failAndWindow(t, d, f, "slow:80"))
		done, cancel := context.WithCancel(t.Context())
		cancel()
		assert.ErrorIs(t, try(done, d, "tcp", "slow:80"), context.Canceled, "a done context wins")
		assert.Equal(t, 2, f.count())
	})
}

func TestDialExactWindows(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeNet{outcome: refuse}
		d := &Dialer{Dial: f.dial, Backoff: policy.Exponential{
			Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 2}}
		ms := time.Millisecond
		for i, want := range []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1000 * ms, 1000 * ms} {
			require.Equal(t, want, failAndWindow(t, d, f, "h:1"), "window %d", i)
			time.Sleep(want)
		}
		assert.ErrorIs(t, try(t.Context(), d, "tcp", "h:1"), errDialRefused)
	})
}

// A refusal's text names the failure behind the window first, as the
// cause of the request's failure, and stays the same however much of the
// window is left, so that equal failures read and group alike.
func TestDialBackoffErrorText(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1},
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	cases := []struct {
		name string
		err  *BackoffError
		want string
	}{
		{"with its cause",
			&BackoffError{Addr: "127.0.0.1:1", Remaining: 674414725 * time.Nanosecond, Err: refused},
			"dial tcp 127.0.0.1:1: connect: connection refused (retryhttp: address in dial backoff)"},
		{"later in the same window",
			&BackoffError{Addr: "127.0.0.1:1", Remaining: 3 * time.Millisecond, Err: refused},
			"dial tcp 127.0.0.1:1: connect: connection refused (retryhttp: address in dial backoff)"},
		{"with no cause",
			&BackoffError{Addr: "h:1", Remaining: 100 * time.Millisecond},
			"retryhttp: address in dial backoff: h:1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.err.Error()
			assert.Equal(t, tc.want, got, "got %q, want %q", got, tc.want)
			assert.ErrorIs(t, tc.err, ErrBackoff)
		})
	}
}

func TestDialParallelAttempts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		outcomes := make(chan error)
		d, f := newDialer(dialGate(outcomes), exact)
		var wg sync.WaitGroup
		start := func(ctx context.Context, addr string) {
			wg.Go(func() { try(ctx, d, "tcp", addr) })
			synctest.Wait()
		}
		start(t.Context(), "h:1")
		time.Sleep(500 * time.Millisecond)
		start(t.Context(), "h:1")
		require.Equal(t, 2, f.count(), "dials in flight do not hold each other back")
		outcomes <- errDialRefused
		outcomes <- errDialRefused
		wg.Wait()
		// One round: the window lasts until the later start + 1s, and
		// the next backoff is one step on (2s), not two (4s).
		w := window(t, d, f, "h:1")
		require.Equal(t, time.Second, w)
		time.Sleep(w)
		f.set(refuse)
		require.Equal(t, 2*time.Second, failAndWindow(t, d, f, "h:1"))

		// A failure that started before a success is stale.
		f.set(dialGate(outcomes))
		start(t.Context(), "h:2")
		start(t.Context(), "h:2")
		outcomes <- nil
		synctest.Wait()
		outcomes <- errDialRefused
		wg.Wait()
		require.False(t, d.backingOff("tcp", "h:2"), "the stale failure opened no window")

		// So is an abandon: it must not drop the state of a later round.
		ctx, cancel := context.WithCancel(t.Context())
		f.set(hang)
		start(ctx, "h:3")
		f.set(dialGate(outcomes))
		start(t.Context(), "h:3")
		outcomes <- nil
		synctest.Wait()
		start(t.Context(), "h:3")
		cancel()
		synctest.Wait()
		outcomes <- errDialRefused
		wg.Wait()
		assert.Equal(t, time.Second, window(t, d, f, "h:3"))
	})
}

func TestDialTLS(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	srv.StartTLS()
	defer srv.Close()
	trusted := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	addr := srv.Listener.Addr().String()
	cfg := (&Dialer{}).tlsConfig("example.com:443")
	assert.Equal(t, "example.com", cfg.ServerName)
	assert.Equal(t, []string{"h2", "http/1.1"}, cfg.NextProtos)
	own := &tls.Config{MinVersion: tls.VersionTLS13, NextProtos: []string{"http/1.1"}}
	cfg = (&Dialer{TLSConfig: own}).tlsConfig("[::1]:443")
	assert.Equal(t, "::1", cfg.ServerName)
	assert.Equal(t, uint16(tls.VersionTLS13), cfg.MinVersion)
	assert.Equal(t, []string{"http/1.1"}, cfg.NextProtos, "a config's own protocols are kept")
	assert.Empty(t, own.ServerName, "the caller's config must not change")
	synctest.Test(t, func(t *testing.T) {
		// The zero Dialer checks with the system roots, which do not
		// trust the test server: TCP is accepted each time, TLS never.
		var zero Dialer
		for _, step := range []float64{1, 1.6} {
			_, err := zero.DialTLSContext(t.Context(), "tcp", addr)
			var verr *tls.CertificateVerificationError
			require.ErrorAs(t, err, &verr)
			_, err = zero.DialTLSContext(t.Context(), "tcp", addr)
			var be *BackoffError
			require.ErrorAs(t, err, &be, "a TCP accept must not reset")
			assert.InDelta(t, step, be.Remaining.Seconds(), 0.2*step)
			time.Sleep(be.Remaining)
		}
		// Real TCP to the server, through a fakeNet that counts dials.
		f := &fakeNet{outcome: refuse, connect: (&net.Dialer{}).DialContext}
		trustful := &Dialer{Dial: f.dial, Backoff: exact, TLSConfig: trusted}
		time.Sleep(failAndWindow(t, trustful, f, addr))
		f.set(accept)
		c, err := trustful.DialTLSContext(t.Context(), "tcp", addr)
		require.NoError(t, err)
		assert.True(t, c.(*tls.Conn).ConnectionState().HandshakeComplete)
		c.Close()
		assert.False(t, trustful.backingOff("tcp", addr), "a handshake must end the backoff")
	})
}

func TestDialBoundedState(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		d, _ := newDialer(refuse, nil)
		for i := range 10_000 {
			try(t.Context(), d, "tcp", net.JoinHostPort("10.0.0.1", strconv.Itoa(i)))
			if len(d.addrs) > DefaultMaxAddrs {
				require.Failf(t, "unbounded", "got %d entries, want %d", len(d.addrs), DefaultMaxAddrs)
			}
			time.Sleep(time.Millisecond)
		}
		assert.Len(t, d.addrs, DefaultMaxAddrs)
	})
}

func TestDialEvictsOldestIdle(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		outcomes := make(chan error)
		f := &fakeNet{outcome: dialGate(outcomes)}
		d := &Dialer{Dial: f.dial, Backoff: exact, MaxAddrs: 3}
		go try(t.Context(), d, "tcp", "busy:1") // in flight, no window yet
		synctest.Wait()
		f.set(refuse)
		failAndWindow(t, d, f, "old:1")
		time.Sleep(time.Second)
		failAndWindow(t, d, f, "new:1")
		try(t.Context(), d, "tcp", "newest:1")
		assert.False(t, d.backingOff("tcp", "old:1"), "the oldest idle address is forgotten")
		assert.True(t, d.backingOff("tcp", "new:1"), "a younger window is kept")
		outcomes <- errDialRefused // busy:1's dial, in flight, still counts
		synctest.Wait()
		assert.Equal(t, 2*time.Second, failAndWindow(t, d, f, "busy:1"),
			"an address with a dial in flight is kept: its failure counted, the next waits step 1")
	})
}

// growing is a Backoff whose every draw is a second longer than the last,
// so that each failure of a round moves its window's end on.
type growing struct{ n atomic.Int64 }

func (g *growing) Duration(int) time.Duration {
	return time.Duration(g.n.Add(1)) * time.Second
}

// TestDialConcurrentFailuresAndReset dials a failing address from many
// goroutines while another resets it: dials refused by a window read it
// while failures of the same round move it on, and each Reset starts a
// new round. It checks what every dial returns; under -race it also
// checks that no dial reads an address's state outside the lock.
func TestDialConcurrentFailuresAndReset(t *testing.T) {
	t.Parallel()
	d := &Dialer{Backoff: &growing{}, Dial: func(context.Context, string, string) (net.Conn, error) {
		runtime.Gosched() // let other dials join the round
		return nil, errDialRefused
	}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				err := try(t.Context(), d, "tcp", "h:1")
				assert.ErrorIs(t, err, errDialRefused, "a failure, or a refusal that names it")
				var be *BackoffError
				if errors.As(err, &be) {
					assert.Equal(t, "h:1", be.Addr)
					assert.Positive(t, be.Remaining)
				}
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			d.ResetBackoff("h:1")
			runtime.Gosched()
		}
	})
	wg.Wait()
}

// ResetBackoff of a host alone ends the windows of every port of it, an
// IPv6 literal included, written as a URL writes it ("[::1]", what
// retryhttp.Transport.ResetBackoff passes on) or bare ("::1"); a host
// with a port ends that address's only.
func TestDialResetHostAlone(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reset      string
		ended      []string
		keptOthers []string
	}{
		{"[::1]", []string{"[::1]:80", "[::1]:8443"}, []string{"[::2]:80", "h:80"}},
		{"::1", []string{"[::1]:80", "[::1]:8443"}, []string{"[::2]:80", "h:80"}},
		{"[::1]:80", []string{"[::1]:80"}, []string{"[::1]:8443", "h:80"}},
		{"H", []string{"h:80", "h:8443"}, []string{"[::1]:80", "hh:80"}},
		{"10.0.0.1", []string{"10.0.0.1:80"}, []string{"10.0.0.10:80"}},
	}
	for _, tt := range tests {
		t.Run(tt.reset, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d, f := newDialer(refuse, exact)
				for _, a := range append(append([]string{}, tt.ended...), tt.keptOthers...) {
					failAndWindow(t, d, f, a)
				}
				d.ResetBackoff(tt.reset)
				for _, a := range tt.ended {
					assert.False(t, d.backingOff("tcp", a), "ResetBackoff(%q): got %s still backing off", tt.reset, a)
				}
				for _, a := range tt.keptOthers {
					assert.True(t, d.backingOff("tcp", a), "ResetBackoff(%q): got %s reset too", tt.reset, a)
				}
			})
		})
	}
}

// A Dial that returns neither a connection nor an error fails the dial,
// and counts as a failed connection: no panic in the TLS handshake, no
// nil connection passed on as one.
func TestDialNoConnectionNoError(t *testing.T) {
	t.Parallel()
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprint("tls=", tls), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := &Dialer{Backoff: exact, Dial: func(context.Context, string, string) (net.Conn, error) { return nil, nil }}
				dial := d.DialContext
				if tls {
					dial = d.DialTLSContext
				}
				c, err := dial(t.Context(), "tcp", "h:443")
				assert.Nil(t, c)
				require.ErrorIs(t, err, errNoConn)
				_, err = dial(t.Context(), "tcp", "h:443")
				var be *BackoffError
				require.ErrorAs(t, err, &be, "got %v, want the address backing off", err)
				assert.Equal(t, time.Second, be.Remaining)
			})
		})
	}
}

// backingOff reports whether a dial to addr on network would be refused
// now for its backoff window.
func (d *Dialer) backingOff(network, addr string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.addrs[dialKey{network, addr}]
	return e != nil && time.Now().Before(e.until)
}
