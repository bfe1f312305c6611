package redisfleet_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/require"
)

// refusalWatch tells when the store has answered a SUBSCRIBE with an
// error, on the connections of a client dialed through its dial.
type refusalWatch struct{ refused atomic.Bool }

// dial dials addr, a connection that w watches.
func (w *refusalWatch) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &refusalConn{Conn: c, w: w}, nil
}

// refusalConn is a connection that a refusalWatch watches: once it has
// sent a SUBSCRIBE, an error reply read on it is the SUBSCRIBE's.
type refusalConn struct {
	net.Conn
	w          *refusalWatch
	subscribed atomic.Bool
}

func (c *refusalConn) Write(b []byte) (int, error) {
	if bytes.Contains(bytes.ToLower(b), []byte("subscribe")) {
		c.subscribed.Store(true)
	}
	return c.Conn.Write(b)
}

func (c *refusalConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && b[0] == '-' && c.subscribed.Load() {
		c.w.refused.Store(true)
	}
	return n, err
}

// TestRealRefusedSubscriptionIsMadeAgain has the store refuse the
// listener's SUBSCRIBE with an error reply, which go-redis takes for an
// answer on a live connection: it neither redials nor subscribes again.
// Once the store accepts, the member must subscribe, and holds reach it.
func TestRealRefusedSubscriptionIsMadeAgain(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		password string // the store's, which the test's own client gives
		// refuse makes the store refuse the member's commands, accept
		// takes them again; a is the test's own client.
		refuse, accept func(t *testing.T, s *redisServer, a *redis.Client)
	}{
		{
			name: "busy with a script",
			args: []string{"--lua-time-limit", "50"},
			refuse: func(t *testing.T, s *redisServer, a *redis.Client) {
				c, err := net.Dial("tcp", s.addr)
				require.NoError(t, err)
				t.Cleanup(func() { _ = c.Close() })
				_, err = c.Write([]byte("EVAL \"while true do end\" 0\r\n"))
				require.NoError(t, err)
				t.Cleanup(func() { _ = a.ScriptKill(context.Background()).Err() })
				waitFor(t, "the store busy", func() bool {
					err := a.Ping(t.Context()).Err()
					return err != nil && strings.HasPrefix(err.Error(), "BUSY")
				})
			},
			accept: func(t *testing.T, _ *redisServer, a *redis.Client) {
				require.NoError(t, a.ScriptKill(t.Context()).Err())
			},
		},
		{
			name:     "asking for a password",
			args:     []string{"--requirepass", "store's"},
			password: "store's",
			refuse:   func(*testing.T, *redisServer, *redis.Client) {},
			accept: func(t *testing.T, _ *redisServer, a *redis.Client) {
				require.NoError(t, a.ConfigSet(t.Context(), "requirepass", "").Err())
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startRedisWith(t, "", tt.args...)
			a := redis.NewClient(&redis.Options{Addr: s.addr, Password: tt.password, MaxRetries: -1})
			t.Cleanup(func() { _ = a.Close() })
			tt.refuse(t, s, a)
			var w refusalWatch
			c := redis.NewClient(&redis.Options{Addr: s.addr, Dialer: w.dial, MaxRetries: -1})
			t.Cleanup(func() { _ = c.Close() })
			f := clientMember(t, c, redisfleet.Options{})
			f.Look(host, "r")
			waitFor(t, "the store to refuse the subscription", w.refused.Load)

			tt.accept(t, s, a)
			subscribed(t, f)
			other := newMember(t, s.addr, redisfleet.Options{})
			end := time.Now().Add(time.Minute).Truncate(time.Millisecond)
			other.Report(host, heldUntil("r", end))
			waitFor(t, "the hold to reach the member", func() bool { return f.Look(host, "r").HoldUntil.Equal(end) })
		})
	}
}
