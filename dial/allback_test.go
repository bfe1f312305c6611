package dial_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/dial"
)

// A host with two addresses, both refusing: once each has failed and is
// inside its backoff window, the attempts Route sends fail at once with
// ErrBackoff and touch the network no more. Had Route left them to the
// base, as it leaves a host it cannot choose for, the base would dial
// the host's name, a key with no window of its own, and the addresses
// that are down would be dialed again.
func TestAllAddressesBackingOffTouchNoNetwork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base, d := dial.NewBase()
		var dials atomic.Int64
		d.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		}
		d.LookupNetIP = func(context.Context, string, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")}, nil
		}
		defer base.CloseIdleConnections()
		send := func() error {
			req, err := http.NewRequest("GET", "http://two.test/", nil)
			require.NoError(t, err)
			rt, _ := d.Route(t.Context(), req, "two.test", nil)
			if rt == nil {
				rt = base // as the Transport does when Route leaves the choice
			}
			resp, err := rt.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}
		require.Error(t, send())
		require.Error(t, send())
		require.Equal(t, int64(2), dials.Load(), "each address dialed once")
		for i := range 3 {
			err := send()
			assert.True(t, errors.Is(err, dial.ErrBackoff), "request %d: got %v, want ErrBackoff", i, err)
		}
		assert.Equal(t, int64(2), dials.Load(), "dials reached the network while every address was in its window")
	})
}
