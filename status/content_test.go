package status_test

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
	"github.com/retryhttp/retryhttp/status"
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
func TestRanksAndCounts(t *testing.T) {
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

		p := pageOf(t, tr)
		var order []string
		for _, h := range p.Hosts {
			order = append(order, h.Host)
		}
		assert.Equal(t, []string{"held.test", "spent.test", "busy.test", "quiet.test"}, order)
		assert.Zero(t, p.MoreHosts)
		stats := tr.Stats()
		for _, h := range p.Hosts {
			c := stats.Hosts[h.Host]
			assert.Equal(t, []uint64{c.Requests, c.ExtraAttempts, c.ExtraAttemptsFailed, c.BudgetRefusals, c.HoldsSet},
				[]uint64{h.Requests, h.ExtraAttempts, h.ExtraAttemptsFailed, h.BudgetRefusals, h.HoldsSet}, h.Host)
		}
		assert.Equal(t, stats.Total.Requests, p.Total.Requests)

		// 10 tokens: the first request fails 3 times, the second twice and
		// is refused its third, the third once and is refused its second.
		spent := p.Hosts[1]
		assert.Equal(t, []float64{4, 10}, []float64{spent.Tokens, spent.MaxTokens})
		assert.LessOrEqual(t, 2*spent.Tokens, spent.MaxTokens, "the budget refuses extra attempts")
		assert.Equal(t, uint64(2), spent.BudgetRefusals)
		assert.Equal(t, 2, spent.RecentFailures, "a 503 at the first attempt is not a failure of the Transport's")
		assert.Greater(t, 2*p.Hosts[2].Tokens, p.Hosts[2].MaxTokens, "the busy host's budget allows extra attempts")
		assert.Contains(t, htmlOf(t, tr), "extra attempts refused")

		// Newest first: the third request got its 503 at once.
		require.Len(t, p.Failures, 2)
		assert.Equal(t, uint64(2), p.Failed)
		for i, want := range []failureJSON{
			{Host: "spent.test", Method: "GET", Path: "/v1/b", Status: 503, Attempts: 2},
			{Host: "spent.test", Method: "GET", Path: "/v1/a", Status: 503, Attempts: 3},
		} {
			got := p.Failures[i]
			assert.False(t, got.Time.Before(start), "failure %d at %v, before %v", i, got.Time, start)
			got.Time = time.Time{}
			assert.Equal(t, want, got, "failure %d", i)
		}
	})
}

// A hedged host's latencies show as p50, p90 and p99 over the samples
// kept: 18 answers in 10 ms and 2 in 100 ms.
func TestLatency(t *testing.T) {
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

		p := pageOf(t, tr)
		require.Len(t, p.Hosts, 2)
		assert.Equal(t, "search.test", p.Hosts[0].Host)
		h := p.Hosts[0]
		assert.Equal(t, []float64{20, 10, 10, 100}, []float64{float64(h.LatencySamples), h.LatencyP50Ms, h.LatencyP90Ms, h.LatencyP99Ms})
		assert.Zero(t, p.Hosts[1].LatencySamples, "a host never hedged keeps no latencies")
		html := htmlOf(t, tr)
		assert.Contains(t, html, "p99 100ms")
		assert.Contains(t, html, "20 latency samples")
	})
}

// Nothing the request carried beyond its host, method and path reaches
// the page: not its userinfo, query, fragment or header values, not even
// when the base's error quotes the whole URL.
func TestRedacts(t *testing.T) {
	t.Parallel()
	const secret = "hunter2"
	quoteURL := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return nil, &url.Error{Op: "Get", URL: req.URL.String(), Err: errors.New("connection reset by peer")}
	})
	cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
		Retry: &policy.Retry{MaxAttempts: 2, Backoff: policy.Exponential{Initial: time.Millisecond, Max: time.Millisecond, Multiplier: 1}}}}}
	tr := &retryhttp.Transport{Base: quoteURL, Policy: cfg}
	req, err := http.NewRequest(http.MethodGet, "https://alice:"+secret+"@api.test/v1/items?api_key="+secret+"#"+secret, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Cookie", "session="+secret)
	_, err = tr.RoundTrip(req)
	require.Error(t, err)
	require.Contains(t, err.Error(), secret, "the test's base must quote the URL for this test to mean anything")

	p := pageOf(t, tr)
	require.Len(t, p.Failures, 1)
	assert.Equal(t, "/v1/items", p.Failures[0].Path)
	assert.Contains(t, p.Failures[0].Err, `"https://REDACTED:REDACTED@api.test/v1/items": connection reset by peer`,
		"the error's URL cut down as the logs cut it")
	for name, body := range map[string]string{
		"json": serve(status.Handler(tr), http.MethodGet, "/?format=json").Body.String(),
		"html": htmlOf(t, tr),
	} {
		for _, leak := range []string{secret, "alice", "api_key", "Bearer", "session"} {
			assert.NotContains(t, body, leak, "%s page", name)
		}
	}
}

// roundTripFunc is a base made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// With its own base, the Transport dials through a Dialer, and the page
// shows each address that failed: its failures in a row, its window and
// the dial's error.
func TestDialBackoff(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now: dials are refused
	tr := &retryhttp.Transport{Policy: policy.None()}
	defer tr.CloseIdleConnections()
	_, err = (&http.Client{Transport: tr}).Get("http://" + addr + "/")
	require.Error(t, err)

	p := pageOf(t, tr)
	assert.True(t, p.Dialer)
	require.Len(t, p.Hosts, 1)
	h := p.Hosts[0]
	assert.Equal(t, addr, h.Host)
	require.Len(t, h.DialBackoff, 1, "%+v", h.DialBackoff)
	d := h.DialBackoff[0]
	assert.Equal(t, []any{"tcp", addr, 1}, []any{d.Network, d.Addr, d.Failures})
	assert.Contains(t, d.Err, "connection refused")
	// gRPC's first backoff is 1 s, jittered by 20%.
	assert.LessOrEqual(t, d.RemainingMs, 1200.0)
	assert.LessOrEqual(t, time.Until(d.Until), 1200*time.Millisecond)
	assert.Empty(t, p.OtherDialBackoff)

	html := htmlOf(t, tr)
	assert.Contains(t, html, "<th class=\"dial\">Dial backoff</th>")
	assert.Contains(t, html, addr)
	assert.True(t, strings.Contains(html, "backing off") || strings.Contains(html, "window over"))
}
