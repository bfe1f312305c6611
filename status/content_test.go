package retryhttp_test

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// byHost is a kit Server that answers each host with its own step.
func byHost(steps map[string]rt.Step) *rt.Server {
	return &rt.Server{Choose: func(_ int, req *http.Request) rt.Step { return steps[req.URL.Host] }}
}

// get sends a GET to u through client and closes what comes back.
func get(t *testing.T, client *http.Client, u string) {
	t.Helper()
	resp, err := client.Get(u)
	if err == nil {
		readAll(t, resp)
	}
}

// The page lists the held host first, then the one whose budget is
// spent, then the busiest; with each its budget, counters and recent
// failures as the Transport counted them, and the failures newest first.
func TestStatusRanksAndCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := policy.Default()
		cfg.MaxServerDelay = 10 * time.Second
		cfg.Throttle = &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}
		tr := &retryhttp.Transport{Policy: cfg, Base: byHost(map[string]rt.Step{
			"held.test":  {Status: 429, Header: http.Header{"Retry-After": {"60"}}},
			"spent.test": {Status: 503},
		})}
		client := &http.Client{Transport: tr}
		get(t, client, "https://quiet.test/")
		for range 5 {
			get(t, client, "https://busy.test/")
		}
		start := time.Now()
		for i := range 3 {
			get(t, client, "https://spent.test/v1/"+string(rune('a'+i)))
		}
		get(t, client, "https://held.test/")

		s := statusOf(t, tr)
		var order []string
		for _, h := range s.Hosts {
			order = append(order, h.Host)
		}
		assert.Equal(t, []string{"held.test", "spent.test", "busy.test", "quiet.test"}, order)
		assert.Zero(t, s.MoreHosts)
		stats := tr.Stats()
		for _, h := range s.Hosts {
			c := stats.Hosts[h.Host]
			require.NotNil(t, h.Counters, h.Host)
			assert.Equal(t, []uint64{c.Requests, c.RetryAttempts, c.RetryAttemptsFailed, c.BudgetRefusals, c.HoldsSet},
				[]uint64{h.Counters.Requests, h.Counters.Retries, h.Counters.RetriesFailed, h.Counters.Refusals.Budget,
					h.Counters.HoldsSet}, h.Host)
		}
		assert.Equal(t, stats.Total.Requests, s.Totals.Requests)

		// 10 tokens: the first request fails 3 times, the second twice and
		// is refused its third, the third once and is refused its second.
		spent := s.Hosts[1]
		require.NotNil(t, spent.Budget)
		assert.Equal(t, []any{4.0, 10.0, false}, []any{spent.Budget.Tokens, spent.Budget.Capacity, spent.Budget.AllowsRetries})
		assert.Equal(t, uint64(2), spent.Counters.Refusals.Budget)
		assert.Equal(t, 2, spent.RecentFailures, "a 503 at the first attempt is not a failure of the Transport's")
		assert.True(t, s.Hosts[2].Budget.AllowsRetries)

		// Newest first: the third request got its 503 at once.
		require.Len(t, s.Failures, 2)
		assert.Equal(t, uint64(2), s.FailuresTotal)
		for i, want := range []failureJSON{
			{Host: "spent.test", Method: "GET", Path: "/v1/b", Status: 503, Attempts: 2},
			{Host: "spent.test", Method: "GET", Path: "/v1/a", Status: 503, Attempts: 3},
		} {
			got := s.Failures[i]
			assert.False(t, got.Time.Before(start), "failure %d at %v, before %v", i, got.Time, start)
			got.Time = time.Time{}
			assert.Equal(t, want, got, "failure %d", i)
		}
	})
}

// A hedged host's latencies show as p50, p90 and p99 over the samples
// kept: 18 answers in 10 ms and 2 in 100 ms.
func TestStatusLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := &policy.Config{Rules: []policy.Rule{{
			Name:  []policy.Name{{Host: "search.test"}},
			Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: time.Second},
		}}}
		srv := &rt.Server{Choose: func(n int, _ *http.Request) rt.Step {
			if n%10 == 0 {
				return rt.Step{Delay: 100 * time.Millisecond}
			}
			return rt.Step{Delay: 10 * time.Millisecond}
		}}
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		client := &http.Client{Transport: tr}
		for range 20 {
			get(t, client, "https://search.test/q")
		}
		get(t, client, "https://plain.test/")

		s := statusOf(t, tr)
		require.Len(t, s.Hosts, 2)
		assert.Equal(t, "search.test", s.Hosts[0].Host)
		assert.Equal(t, &latencyJSON{Samples: 20, P50Ms: 10, P90Ms: 10, P99Ms: 100}, s.Hosts[0].Latency)
		assert.Nil(t, s.Hosts[1].Latency, "a host never hedged keeps no latencies")
		html := htmlOf(t, tr)
		assert.Contains(t, html, "p99 100ms")
		assert.Contains(t, html, "20 samples")
	})
}

// Nothing the request carried beyond its host, method and path reaches
// the page: not its userinfo, query, fragment or header values, not even
// when the base's error quotes the whole URL.
func TestStatusRedacts(t *testing.T) {
	t.Parallel()
	const secret = "hunter2"
	quoteURL := func(req *http.Request) (*http.Response, error) {
		return nil, &url.Error{Op: "Get", URL: req.URL.String(), Err: errors.New("connection reset by peer")}
	}
	tr, _ := newCalls(retryConfig(2), quoteURL)
	req, err := http.NewRequest(http.MethodGet, "https://alice:"+secret+"@api.test/v1/items?api_key="+secret+"#"+secret, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Cookie", "session="+secret)
	_, err = tr.RoundTrip(req)
	require.Error(t, err)
	require.Contains(t, err.Error(), secret, "the test's base must quote the URL for this test to mean anything")

	s := statusOf(t, tr)
	require.Len(t, s.Failures, 1)
	assert.Equal(t, "/v1/items", s.Failures[0].Path)
	assert.Contains(t, s.Failures[0].Error, `"https://REDACTED:REDACTED@api.test/v1/items": connection reset by peer`,
		"the error's URL cut down as RedactURLs does")
	for name, body := range map[string]string{
		"json": serveStatus(retryhttp.StatusHandler(tr), http.MethodGet, "/?format=json").Body.String(),
		"html": htmlOf(t, tr),
	} {
		for _, leak := range []string{secret, "alice", "api_key", "Bearer", "session"} {
			assert.NotContains(t, body, leak, "%s page", name)
		}
	}
}

// With its own base, the Transport dials through a Dialer, and the page
// shows each address that failed: its failures in a row, its window and
// the dial's error.
func TestStatusDialBackoff(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now: dials are refused
	tr := &retryhttp.Transport{Policy: policy.None()}
	defer tr.CloseIdleConnections()
	_, err = (&http.Client{Transport: tr}).Get("http://" + addr + "/")
	require.Error(t, err)

	s := statusOf(t, tr)
	assert.True(t, s.Dialer)
	require.Len(t, s.Hosts, 1)
	h := s.Hosts[0]
	assert.Equal(t, addr, h.Host)
	require.Len(t, h.DialBackoff, 1, "%+v", h.DialBackoff)
	d := h.DialBackoff[0]
	assert.Equal(t, []any{"tcp", addr, 1}, []any{d.Network, d.Address, d.Failures})
	assert.Contains(t, d.Error, "connection refused")
	// gRPC's first backoff is 1 s, jittered by 20%.
	assert.LessOrEqual(t, d.RemainingMs, 1200.0)
	assert.LessOrEqual(t, time.Until(d.Until), 1200*time.Millisecond)
	assert.Empty(t, s.OtherDialBackoff)

	html := htmlOf(t, tr)
	assert.Contains(t, html, "<th>Dial backoff</th>")
	assert.Contains(t, html, addr)
	assert.True(t, strings.Contains(html, "backing off") || strings.Contains(html, "window over"))
}
