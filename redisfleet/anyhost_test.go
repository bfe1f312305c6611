package redisfleet_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisfleet"
	"github.com/stretchr/testify/require"
)

// TestRealHoldOnAnyHost sends holds on hosts that net/url accepts and
// that a message split on spaces would cut (an IPv6 zone with a space, as
// Windows names interfaces, and characters a message must escape)
// through each topology: every member that met the host is held.
func TestRealHoldOnAnyHost(t *testing.T) {
	var hosts []string
	for _, raw := range []string{
		"http://[fe80::1%25ethernet%202]:8080/",
		"http://[fe80::1%25eth%250]:8080/",
		"http://api.example.com:8443/",
	} {
		u, err := url.Parse(raw)
		require.NoError(t, err)
		hosts = append(hosts, u.Host)
	}
	require.Equal(t, "[fe80::1%ethernet 2]:8080", hosts[0])
	const rule = "methodConfig[0] with spaces %20"
	topologies := []struct {
		name   string
		client func(t *testing.T) func() redis.UniversalClient
	}{
		{"one server", func(t *testing.T) func() redis.UniversalClient {
			s := startRedis(t)
			return func() redis.UniversalClient {
				c := redis.NewClient(&redis.Options{Addr: s.addr})
				t.Cleanup(func() { _ = c.Close() })
				return c
			}
		}},
		{"ring", func(t *testing.T) func() redis.UniversalClient {
			shards := startRing(t, 2)
			return func() redis.UniversalClient { return ringClient(t, shards, nil) }
		}},
		{"cluster", func(t *testing.T) func() redis.UniversalClient {
			c := startCluster(t, time.Second)
			return func() redis.UniversalClient { return c.client(t, nil) }
		}},
	}
	for _, tp := range topologies {
		t.Run(tp.name, func(t *testing.T) {
			newClient := tp.client(t)
			a := clientMember(t, newClient(), redisfleet.Options{})
			b := clientMember(t, newClient(), redisfleet.Options{})
			subscribed(t, a)
			subscribed(t, b)
			for _, h := range hosts {
				b.Look(h, rule) // b meets the host; its fetch finds no hold
			}
			waitFor(t, "b's fetches", func() bool { return b.Stats().Flushes >= 2 })
			for i, h := range hosts {
				end := time.Now().Add(time.Minute + time.Duration(i)*time.Second).Truncate(time.Millisecond)
				a.Report(h, heldUntil(rule, end))
				waitFor(t, "the hold on "+h+" to reach b", func() bool { return b.Look(h, rule).HoldUntil.Equal(end) })
			}
		})
	}
}
