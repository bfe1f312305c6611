package status

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/dial"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadedStats returns the Stats of a Transport holding n hosts, each
// with the most the page bounds: a long name, holds on more rules than
// it lists, a spent budget and 10 addresses in dial backoff, all their
// texts long (texts of escaping characters, when nasty); 50 addresses
// no host claims, and a full list of failures, whose texts the
// Transport cut to 256 bytes.
func loadedStats(n int, nasty bool, now time.Time) retryhttp.Stats {
	text := func(i int) string { return fmt.Sprintf("%s-%d", strings.Repeat("x", 300), i) }
	if nasty {
		text = func(i int) string { return fmt.Sprintf("%s-%d", strings.Repeat(`"<&>'`, 100), i) }
	}
	var holds [maxHolds + 2]retryhttp.Hold // shared by every host, to keep the test's memory small
	for i := range holds {
		holds[i] = retryhttp.Hold{Rule: text(i), Status: 429, Since: now, Until: now.Add(time.Hour)}
	}
	var errs [10]error
	for i := range errs {
		errs[i] = errors.New(text(i))
	}
	s := retryhttp.Stats{Rules: map[string]retryhttp.Counters{"*": {}}, Hosts: make(map[string]retryhttp.HostStats, n),
		DialBackoff: []dial.Window{}}
	for i := range n {
		name := longName(i)
		s.Hosts[name] = retryhttp.HostStats{Counters: retryhttp.Counters{Requests: 1}, Tokens: 0, MaxTokens: 10,
			Holds: holds[:]}
		// As many addresses as a host may have: its name's, for http and
		// https, and those its attempts were routed to.
		addrs := []string{name + ":80", name + ":443"}
		for p := range maxWindows {
			addrs = append(addrs, fmt.Sprintf("10.%d.%d.%d:443", i>>8, i&255, p))
		}
		for p, addr := range addrs {
			w := dial.Window{Network: "tcp", Addr: addr, Failures: 3, Until: now.Add(time.Minute), Err: errs[p]}
			if p >= 2 {
				w.Hosts = []string{name}
			}
			s.DialBackoff = append(s.DialBackoff, w)
		}
	}
	for i := range 50 {
		s.DialBackoff = append(s.DialBackoff, dial.Window{Network: "tcp", Addr: fmt.Sprintf("proxy-%d.test:3128", i),
			Failures: 1, Until: now.Add(time.Second), Err: errors.New(text(i))})
	}
	for i := range maxFailures {
		s.Failures = append(s.Failures, retryhttp.Failure{Time: now, Host: clip(longName(i)), Method: "GET",
			Path: clip("/" + text(i)), Err: clip(text(i)), Attempts: 3})
	}
	s.Failed = 2 * maxFailures
	return s
}

// longName is a host name of 253 characters, distinct for each i.
func longName(i int) string {
	return fmt.Sprintf("h%06d.%s", i, strings.Repeat("a", 245))
}

// Whatever the Transport holds, an answer lists at most 100 hosts and
// counts the rest, and stays under 1 MiB; the bounds on each host keep
// a page of 100 under it unless its texts escape to several times their
// length, and then fewer hosts are listed.
func TestBoundedWorstCase(t *testing.T) {
	t.Parallel()
	const hosts = 10000
	now := time.Now()
	for _, nasty := range []bool{false, true} {
		s := loadedStats(hosts, nasty, now)
		for name, render := range map[string]func(*bytes.Buffer, *page) error{"html": renderHTML, "json": renderJSON} {
			t.Run(fmt.Sprintf("%s nasty=%v", name, nasty), func(t *testing.T) {
				p := read(s, now)
				require.Len(t, p.Hosts, maxHosts)
				body, err := fit(p, render, maxBody)
				require.NoError(t, err)
				assert.Less(t, len(body), maxBody)
				assert.Equal(t, hosts, len(p.Hosts)+p.MoreHosts, "listed and counted")
				assert.NotEmpty(t, p.Hosts)
				if !nasty {
					assert.Len(t, p.Hosts, maxHosts, "no host dropped to fit")
				}
				for _, h := range p.Hosts {
					assert.Len(t, h.Holds, maxHolds)
					assert.Equal(t, 2, h.MoreHolds)
					assert.Len(t, h.DialBackoff, maxWindows)
					assert.Equal(t, 10-maxWindows, h.MoreDialBackoff)
				}
				assert.Len(t, p.OtherDialBackoff, maxWindows)
				assert.Equal(t, 50-maxWindows, p.MoreOtherDialBackoff)
				assert.Len(t, p.Failures, maxFailures)
				t.Logf("%d bytes, %d hosts listed", len(body), len(p.Hosts))
			})
		}
	}
}

// A host claims the addresses net/http dials for it (its own with a
// port, else the ports of http and https) and those its attempts were
// routed to; every other address is left for the page's other list.
func TestClaims(t *testing.T) {
	t.Parallel()
	var ws []dial.Window
	for _, a := range []string{"plain.test:80", "plain.test:443", "plain.test:8080", "port.test:8443", "port.test:443",
		"10.0.0.1:443", "[2001:db8::1]:443", "multi.test:443", "proxy.test:3128", "[::1]:80", "UPPER.test:443"} {
		w := dial.Window{Network: "tcp", Addr: a}
		if strings.HasPrefix(a, "10.") || strings.HasPrefix(a, "[2001:") {
			w.Hosts = []string{"multi.test"}
		}
		ws = append(ws, w)
	}
	c := newClaims(ws)
	tests := []struct {
		host string
		want []string
	}{
		{"plain.test", []string{"plain.test:80", "plain.test:443"}},
		{"port.test:8443", []string{"port.test:8443"}},
		{"multi.test", []string{"multi.test:443", "10.0.0.1:443", "[2001:db8::1]:443"}},
		{"[::1]", []string{"[::1]:80"}},
		{"upper.test", []string{"UPPER.test:443"}},
		{"plain.test", nil}, // claimed once only
		{"unknown.test", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, w := range c.claim(tt.host) {
			got = append(got, w.Addr)
		}
		assert.Equal(t, tt.want, got, "host %s", tt.host)
	}
	var rest []string
	for _, w := range c.unclaimed() {
		rest = append(rest, w.Addr)
	}
	assert.ElementsMatch(t, []string{"plain.test:8080", "port.test:443", "proxy.test:3128"}, rest)
}

// Hosts are ranked held first, then with their budget spent, then by
// dial windows open, recent failures, failed extra attempts, budget
// used, requests, and name.
func TestRankOrder(t *testing.T) {
	t.Parallel()
	ranks := []rank{
		{name: "z-quiet"},
		{name: "a-quiet"},
		{name: "busy", requests: 100},
		{name: "used", used: 1000},
		{name: "failed-extra-attempts", failed: 1, used: 100},
		{name: "recent", failures: 1},
		{name: "dialing-more", windows: 2},
		{name: "dialing", windows: 1, failures: 5},
		{name: "spent", spent: true},
		{name: "held", held: true},
		{name: "held-spent", held: true, spent: true},
	}
	shuffled := slices.Clone(ranks)
	for i := range shuffled {
		j := (i * 7) % len(shuffled)
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	}
	slices.SortFunc(shuffled, rank.compare)
	var got []string
	for _, r := range shuffled {
		got = append(got, r.name)
	}
	assert.Equal(t, []string{"held-spent", "held", "spent", "dialing-more", "dialing", "recent", "failed-extra-attempts",
		"used", "busy", "a-quiet", "z-quiet"}, got)
}

// A budget refuses extra attempts unless it holds more than half its
// capacity, as the Transport's does; no throttle refuses none.
func TestSpent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tokens, maxTokens float64
		want              bool
	}{
		{0, 0, false},
		{10, 10, false},
		{5.001, 10, false},
		{5, 10, true},
		{4, 10, true},
		{0, 10, true},
		{0.501, 1, false},
		{0.5, 1, true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, spent(fixedOf(tt.tokens), fixedOf(tt.maxTokens)), "%v of %v", tt.tokens, tt.maxTokens)
	}
}

// hostileStats returns Stats whose every text is 100 KB of kind and
// whose every list is as long as the page lists, or longer: more hosts
// than it lists, each with more holds and dial windows than it lists,
// more addresses that no host claims, and the failures Stats keeps.
func hostileStats(kind string, now time.Time) retryhttp.Stats {
	big := strings.Repeat(kind, (100<<10)/len(kind))
	err := errors.New(big)
	holds := make([]retryhttp.Hold, maxHolds+2)
	for i := range holds {
		holds[i] = retryhttp.Hold{Rule: big, Status: 429, Since: now, Until: now.Add(time.Hour)}
	}
	s := retryhttp.Stats{Rules: map[string]retryhttp.Counters{big: {}}, Hosts: map[string]retryhttp.HostStats{},
		DialBackoff: []dial.Window{}, PolicyErr: err, Failed: 1 << 40}
	for i := range maxHosts + 1 {
		name := fmt.Sprintf("%d%s", i, big)
		s.Hosts[name] = retryhttp.HostStats{Counters: retryhttp.Counters{Requests: 1}, MaxTokens: 10, Holds: holds}
		// One window claimed by its address, the rest routed from it.
		s.DialBackoff = append(s.DialBackoff, dial.Window{Network: big, Addr: name + ":443", Failures: 3,
			Until: now.Add(time.Minute), Err: err})
		for range maxWindows + 1 {
			s.DialBackoff = append(s.DialBackoff, dial.Window{Network: big, Addr: big, Failures: 3,
				Until: now.Add(time.Minute), Err: err, Hosts: []string{name}})
		}
	}
	for range 2 * maxWindows {
		s.DialBackoff = append(s.DialBackoff, dial.Window{Network: big, Addr: big, Failures: 1,
			Until: now.Add(time.Second), Err: err})
	}
	for range maxFailures {
		s.Failures = append(s.Failures, retryhttp.Failure{Time: now, Host: big, Method: big, Path: big, Err: big,
			Attempts: 3})
	}
	return s
}

// Every answer stays under 1 MiB whatever the Transport holds: with
// every text 100 KB long, of characters that escape to several times
// their length in HTML or JSON, of bytes that are no UTF-8, or of a
// pattern that is slow to redact, and every list as long as it gets.
func TestBoundedHostile(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for name, kind := range map[string]string{"plain": "x", "escaping": `"<&>'`, "invalid UTF-8": "\xff",
		"slow to redact": "a:"} {
		s := hostileStats(kind, now)
		for format, render := range map[string]func(*bytes.Buffer, *page) error{"html": renderHTML, "json": renderJSON} {
			t.Run(name+" "+format, func(t *testing.T) {
				t.Parallel()
				w := httptest.NewRecorder()
				handler{stats: func() retryhttp.Stats { return s }}.ServeHTTP(w,
					httptest.NewRequest(http.MethodGet, "/?format="+format, nil))
				require.Equal(t, http.StatusOK, w.Code, "%.300s", w.Body.String())
				assert.Less(t, w.Body.Len(), maxBody)

				p := read(s, now)
				body, err := fit(p, render, maxBody)
				require.NoError(t, err)
				assert.Less(t, len(body), maxBody)
				assert.NotEmpty(t, p.Hosts, "every host dropped to fit")
				assert.Len(t, p.Failures, maxFailures, "a failure dropped to fit")
				t.Logf("%d bytes, %d hosts listed", len(body), len(p.Hosts))
			})
		}
	}
}

// When a page of no host is still too long, fit lists fewer failures,
// then fewer addresses that no host claims, never dropping one list
// before the one it goes after; a limit that no page meets is an error.
func TestFitOrder(t *testing.T) {
	t.Parallel()
	now := time.Now()
	s := loadedStats(3, true, now)
	size := func(p *page) int {
		var buf bytes.Buffer
		require.NoError(t, renderJSON(&buf, p))
		return buf.Len()
	}
	bare := read(s, now)
	for bare.shrink() {
	}
	least, most := size(bare), size(read(s, now))
	for limit := least + 1; limit <= most; limit += (most - least) / 50 {
		p := read(s, now)
		body, err := fit(p, renderJSON, limit)
		require.NoError(t, err, "limit %d", limit)
		assert.Less(t, len(body), limit)
		if len(p.Failures) < maxFailures {
			assert.Empty(t, p.Hosts, "limit %d: a failure dropped before every host", limit)
		}
		if len(p.OtherDialBackoff) < maxWindows {
			assert.Empty(t, p.Failures, "limit %d: an address dropped before every failure", limit)
		}
		assert.Equal(t, 3, len(p.Hosts)+p.MoreHosts, "limit %d: hosts listed and counted", limit)
		assert.Equal(t, 50, len(p.OtherDialBackoff)+p.MoreOtherDialBackoff, "limit %d: addresses listed and counted", limit)
	}
	_, err := fit(read(s, now), renderJSON, least)
	assert.ErrorContains(t, err, "does not fit")
}

// A budget's figures are floats, which a Transport reading them while
// its policy changed, or a Stats made by hand, may leave NaN or
// infinite; encoding/json refuses those, which would fail the whole
// answer. The page shows finite numbers for them, in JSON and in HTML.
func TestNumbersAlwaysEncode(t *testing.T) {
	t.Parallel()
	inf, nan := math.Inf(1), math.NaN()
	tests := []struct {
		name                           string
		tokens, maxTokens, hedgeTokens float64
		want                           [3]float64
	}{
		{"no throttle, removed while read", inf, 0, 0, [3]float64{1e12, 0, 0}},
		{"all infinite", inf, inf, -inf, [3]float64{1e12, 1e12, -1e12}},
		{"not numbers", nan, nan, nan, [3]float64{0, 0, 0}},
		{"beyond the range", 1e300, -1e300, 5e-324, [3]float64{1e12, -1e12, 0}},
		{"rounded to a thousandth", 4.5, 10.0004, 0.0006, [3]float64{4.5, 10, 0.001}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := retryhttp.Stats{Rules: map[string]retryhttp.Counters{"*": {}}, Hosts: map[string]retryhttp.HostStats{
				"api.test": {Tokens: tt.tokens, MaxTokens: tt.maxTokens, HedgeTokens: tt.hedgeTokens}}}
			h := handler{stats: func() retryhttp.Stats { return s }}
			for _, format := range []string{"html", "json"} {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/?format="+format, nil))
				require.Equal(t, http.StatusOK, w.Code, "%s: %s", format, w.Body.String())
				if format == "json" {
					var p struct {
						Hosts []struct{ Tokens, MaxTokens, HedgeTokens float64 }
					}
					require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p))
					require.Len(t, p.Hosts, 1)
					got := p.Hosts[0]
					assert.Equal(t, tt.want, [3]float64{got.Tokens, got.MaxTokens, got.HedgeTokens})
				}
			}
		})
	}
}

// Every error text the page shows goes through the redaction the logs
// use, whoever made it: the policy's error, a failure's (which the
// Transport redacts too) and a dial window's.
func TestRedactsEveryError(t *testing.T) {
	t.Parallel()
	const secret = "hunter2"
	quoted := func(what string) error {
		return fmt.Errorf(`%s "https://alice:%s@api.test/v1?api_key=%s#%s": connection reset by peer`, what, secret, secret, secret)
	}
	now := time.Now()
	s := retryhttp.Stats{
		Rules:     map[string]retryhttp.Counters{"*": {}},
		Hosts:     map[string]retryhttp.HostStats{"api.test": {}},
		PolicyErr: quoted("retryhttp: invalid policy: a rule names"),
		Failures: []retryhttp.Failure{{Time: now, Host: "api.test", Method: "GET", Path: "/v1",
			Err: quoted("Get").Error(), Attempts: 1}},
		Failed:      1,
		DialBackoff: []dial.Window{{Network: "tcp", Addr: "api.test:443", Failures: 1, Until: now.Add(time.Second), Err: quoted("dial")}},
	}
	h := handler{stats: func() retryhttp.Stats { return s }}
	for _, format := range []string{"html", "json"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/?format="+format, nil))
		require.Equal(t, http.StatusOK, w.Code)
		body := w.Body.String()
		for _, leak := range []string{secret, "alice", "api_key"} {
			assert.False(t, strings.Contains(body, leak), "the %s page shows %q", format, leak)
		}
	}
	p := read(s, now)
	want := `"https://REDACTED:REDACTED@api.test/v1": connection reset by peer`
	assert.Equal(t, []string{"retryhttp: invalid policy: a rule names " + want, "Get " + want, "dial " + want},
		[]string{p.PolicyErr, p.Failures[0].Err, p.Hosts[0].DialBackoff[0].Err})
}

// A time outside the years RFC 3339 writes, which encoding/json
// refuses, is shown as the nearest it writes: no Transport makes one (a
// hold lasts a century at most), but the page holds nothing the encoder
// refuses, whatever Stats holds.
func TestTimesAlwaysEncode(t *testing.T) {
	t.Parallel()
	far, early := time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC)
	s := retryhttp.Stats{Rules: map[string]retryhttp.Counters{"*": {}},
		Hosts: map[string]retryhttp.HostStats{"api.test": {Holds: []retryhttp.Hold{{Rule: "*", Status: 429,
			Since: early, Until: far}}}},
		Failures:    []retryhttp.Failure{{Time: early, Host: "api.test", Method: "GET", Path: "/", Status: 503}},
		DialBackoff: []dial.Window{{Network: "tcp", Addr: "api.test:443", Until: far}},
	}
	w := httptest.NewRecorder()
	handler{stats: func() retryhttp.Stats { return s }}.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/?format=json", nil))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var p struct {
		Hosts []struct {
			Holds       []struct{ Since, Until time.Time }
			DialBackoff []struct{ Until time.Time }
		}
		Failures []struct{ Time time.Time }
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p))
	last, first := time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	h := p.Hosts[0]
	assert.Equal(t, []time.Time{first, last, last, first},
		[]time.Time{h.Holds[0].Since, h.Holds[0].Until, h.DialBackoff[0].Until, p.Failures[0].Time})
}
