package retryhttp

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadedState returns a used Transport's state holding n hosts, each
// with the most the page bounds: a long name, holds on more rules than it lists, a
// spent budget and 10 addresses in dial backoff, all their texts long
// (texts of escaping characters, when nasty), and a full failure ring.
func loadedState(t *testing.T, n int, nasty bool) (*Transport, time.Time) {
	t.Helper()
	tr := &Transport{}
	st := tr.init()
	st.hosts = newHostTable(&policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, n)
	st.dialer.MaxAddrs = 20 * n
	now := time.Now()
	text := func(i int) string { return fmt.Sprintf("%s-%d", strings.Repeat("x", 300), i) }
	if nasty {
		text = func(i int) string { return fmt.Sprintf("%s-%d", strings.Repeat(`"<&>'`, 100), i) }
	}
	var texts [maxStatusHolds + 2]string // shared by every host, to keep the test's memory small
	var errs [10]error
	for i := range texts {
		texts[i] = text(i)
	}
	for i := range errs {
		errs[i] = errors.New(texts[i])
	}
	st.dialer.mu.Lock()
	st.dialer.addrs = make(map[dialKey]*dialEntry)
	for i := range n {
		name := longName(i)
		h := st.hosts.get(name)
		h.bucket.tokens.Store(0) // spent
		for _, rule := range texts {
			h.holds.set(rule, now, time.Hour, 429)
		}
		// As many addresses as a host may have: its name's, for http and
		// https, and those spread sent its attempts to.
		addrs := []string{name + ":80", name + ":443"}
		for p := range maxAddrs {
			addrs = append(addrs, fmt.Sprintf("10.%d.%d.%d:443", i>>8, i&255, p))
		}
		st.spread.hosts[hostKey{name, "443"}] = &hostEntry{addrs: addrs[2:]}
		for p, addr := range addrs {
			st.dialer.addrs[dialKey{"tcp", addr}] = &dialEntry{failures: 3, until: now.Add(time.Minute), err: errs[p]}
		}
	}
	for i := range 50 { // addresses no host claims
		st.dialer.addrs[dialKey{"tcp", fmt.Sprintf("proxy-%d.test:3128", i)}] = &dialEntry{failures: 1, until: now.Add(time.Second), err: errors.New(text(i))}
	}
	st.dialer.mu.Unlock()
	for i := range 2 * maxFailures {
		st.failures.add(failure{at: now, host: clip(longName(i)), method: "GET", path: clip("/" + text(i)), err: clip(text(i)), attempts: 3})
	}
	return tr, now
}

// longName is a host name of 253 characters, distinct for each i.
func longName(i int) string {
	return fmt.Sprintf("h%06d.%s", i, strings.Repeat("a", 245))
}

// Whatever the Transport holds, an answer lists at most 100 hosts and
// counts the rest, and stays under 1 MiB; the bounds on each host keep
// a page of 100 under it unless its texts escape to several times their
// length, and then fewer hosts are listed.
func TestStatusBoundedWorstCase(t *testing.T) {
	t.Parallel()
	const hosts = 10000
	for _, nasty := range []bool{false, true} {
		tr, now := loadedState(t, hosts, nasty)
		for name, render := range map[string]func(*bytes.Buffer, *statusPage) error{"html": renderHTML, "json": renderJSON} {
			t.Run(fmt.Sprintf("%s nasty=%v", name, nasty), func(t *testing.T) {
				p := tr.status(now)
				require.Len(t, p.Hosts, maxStatusHosts)
				body, err := fit(p, render)
				require.NoError(t, err)
				assert.Less(t, len(body), maxStatusBody)
				assert.Equal(t, hosts, len(p.Hosts)+p.MoreHosts, "listed and counted")
				assert.NotEmpty(t, p.Hosts)
				if !nasty {
					assert.Len(t, p.Hosts, maxStatusHosts, "no host dropped to fit")
				}
				for _, h := range p.Hosts {
					assert.Len(t, h.Holds, maxStatusHolds)
					assert.Equal(t, 2, h.MoreHolds)
					assert.Len(t, h.Dials, maxStatusDials)
					assert.Equal(t, 10-maxStatusDials, h.MoreDials)
				}
				assert.Len(t, p.OtherDials, maxStatusDials)
				assert.Equal(t, 50-maxStatusDials, p.MoreDials)
				assert.Len(t, p.Failures, maxFailures)
				t.Logf("%d bytes, %d hosts listed", len(body), len(p.Hosts))
			})
		}
	}
}

// Reading the page makes no host record, no latency ring and no
// statistics entry.
func TestStatusMakesNoState(t *testing.T) {
	t.Parallel()
	tr := &Transport{}
	st := tr.init()
	a, b := st.hosts.get("a.test"), st.hosts.get("b.test")
	b.latency().add(time.Millisecond)
	a.holds.set("none", time.Now(), time.Minute, 503)
	for range 3 {
		tr.status(time.Now())
	}
	assert.Nil(t, a.latencies.Load(), "a latency ring was made")
	assert.Len(t, st.hosts.hosts, 2)
	assert.Len(t, st.hosts.stats.snapshot(), 2)
	_, n := st.failures.recent()
	assert.Zero(t, n)
}

// A host claims the addresses net/http dials for it (its own with a
// port, else the ports of http and https) and those spread sent its
// attempts to; every other address is left for the page's other list.
func TestDialIndexClaims(t *testing.T) {
	t.Parallel()
	ix := &dialIndex{byAddr: map[string][]dialState{}, claimed: map[string]bool{},
		spread: map[string][]string{"multi.test": {"10.0.0.1:443", "[2001:db8::1]:443"}}}
	for _, a := range []string{"plain.test:80", "plain.test:443", "plain.test:8080", "port.test:8443", "port.test:443",
		"10.0.0.1:443", "[2001:db8::1]:443", "multi.test:443", "proxy.test:3128", "[::1]:80"} {
		ix.byAddr[a] = []dialState{{dialKey: dialKey{"tcp", a}}}
	}
	tests := []struct {
		host string
		want []string
	}{
		{"plain.test", []string{"plain.test:80", "plain.test:443"}},
		{"port.test:8443", []string{"port.test:8443"}},
		{"multi.test", []string{"multi.test:443", "10.0.0.1:443", "[2001:db8::1]:443"}},
		{"[::1]", []string{"[::1]:80"}},
		{"plain.test", nil}, // claimed once only
		{"unknown.test", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, d := range ix.claim(tt.host) {
			got = append(got, d.addr)
		}
		assert.Equal(t, tt.want, got, "host %s", tt.host)
	}
	var rest []string
	for _, d := range ix.unclaimed() {
		rest = append(rest, d.addr)
	}
	assert.ElementsMatch(t, []string{"plain.test:8080", "port.test:443", "proxy.test:3128"}, rest)
}

// Hosts are ranked held first, then with their budget spent, then by
// dial windows open, recent failures, failed retries, budget used,
// requests, and name.
func TestHostRankOrder(t *testing.T) {
	t.Parallel()
	h := func(name string) *host { return &host{name: name} }
	ranks := []hostRank{
		{h: h("z-quiet")},
		{h: h("a-quiet")},
		{h: h("busy"), requests: 100},
		{h: h("used"), used: 1000},
		{h: h("failed-retries"), failed: 1, used: 100},
		{h: h("recent"), failures: 1},
		{h: h("dialing-more"), windows: 2},
		{h: h("dialing"), windows: 1, failures: 5},
		{h: h("spent"), spent: true},
		{h: h("held"), held: true},
		{h: h("held-spent"), held: true, spent: true},
	}
	shuffled := append([]hostRank(nil), ranks...)
	for i := range shuffled {
		j := (i * 7) % len(shuffled)
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	}
	slices.SortFunc(shuffled, hostRank.compare)
	var got []string
	for _, r := range shuffled {
		got = append(got, r.h.name)
	}
	assert.Equal(t, []string{"held-spent", "held", "spent", "dialing-more", "dialing", "recent", "failed-retries", "used",
		"busy", "a-quiet", "z-quiet"}, got)
}
