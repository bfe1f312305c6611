package status_test

import (
	"fmt"
	"net/http"
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
	"go.uber.org/goleak"
)

// longHost returns a distinct host name of 250 characters or so, in
// labels of 60, as long as DNS allows.
func longHost(i int) string {
	label := strings.Repeat("x", 60)
	return fmt.Sprintf("%s.%s.%s.%s.h%05d.test", label, label, label, label, i)
}

// However many hosts the Transport met, each held, the page lists 100
// of them and counts the rest, and each answer stays under 1 MiB.
func TestBounded(t *testing.T) {
	t.Parallel()
	const hosts = 10000
	cfg := policy.Default()
	cfg.MaxServerDelay = time.Second // the holds are not waited for
	tr := newScripted(cfg, rt.Step{Status: 429, Header: http.Header{"Retry-After": {"3600"}}})
	client := &http.Client{Transport: tr}
	for i := range hosts {
		get(t, client, "https://"+longHost(i)+"/v1/"+strings.Repeat("p", 300))
	}

	p := pageOf(t, tr)
	assert.Len(t, p.Hosts, 100)
	assert.Greater(t, p.MoreHosts, 0)
	assert.LessOrEqual(t, len(p.Hosts)+p.MoreHosts, hosts+1, "every host, and (other)")
	for _, h := range p.Hosts {
		assert.Len(t, h.Holds, 1, h.Host)
	}
	assert.Len(t, p.Failures, 0, "a 429 at the first attempt is no failure of the Transport's")
	for _, format := range []string{"", "?format=json"} {
		w := serve(status.Handler(tr), http.MethodGet, "/"+format)
		require.Equal(t, http.StatusOK, w.Code)
		assert.Less(t, w.Body.Len(), 1<<20, "format %q: got %d bytes", format, w.Body.Len())
		t.Logf("format %q: %d bytes", format, w.Body.Len())
	}
}

// Serving the page changes nothing the page, or Stats, can see, and
// leaves no goroutine behind: inside the bubble, one left blocked would
// fail the test when the bubble ends.
func TestChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := policy.Default()
		cfg.MaxServerDelay = time.Second
		cfg.Rules = append([]policy.Rule{{Name: []policy.Name{{Host: "search.test"}},
			Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: time.Second}}}, cfg.Rules...)
		tr := &retryhttp.Transport{Policy: cfg, Base: byHost(map[string]rt.Step{
			"held.test":   {Status: 429, Header: http.Header{"Retry-After": {"60"}}},
			"down.test":   {Status: 503},
			"search.test": {Delay: 5 * time.Millisecond},
		})}
		client := &http.Client{Transport: tr}
		for _, u := range []string{"https://held.test/", "https://down.test/", "https://search.test/", "https://ok.test/"} {
			get(t, client, u)
		}
		statsBefore := tr.Stats()
		h := status.Handler(tr)
		pages := func() []string {
			var out []string
			for _, target := range []string{"/", "/?format=json"} {
				out = append(out, serve(h, http.MethodGet, target).Body.String())
			}
			return out
		}
		before := pages()
		for _, method := range []string{"GET", "HEAD", "POST", "DELETE"} {
			for _, target := range []string{"/", "/?format=json", "/?format=nope"} {
				serve(h, method, target)
			}
		}
		assert.Equal(t, before, pages(), "the page changed by being served")
		assert.Equal(t, statsBefore, tr.Stats())
	})
}

// Reading the page makes no host record, no latency ring and no
// statistics entry: a host never hedged still keeps no latencies, and
// no host or failure appears.
func TestMakesNoState(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		cfg := policy.None()
		cfg.Hold = &policy.Hold{}
		tr := &retryhttp.Transport{Policy: cfg, Base: byHost(map[string]rt.Step{
			"a.test": {Status: 503, Header: http.Header{"Retry-After": {"60"}}},
		})}
		get(t, &http.Client{Transport: tr}, "https://a.test/")
		before := tr.Stats()
		require.Len(t, before.Hosts["a.test"].Holds, 1, "a held host, whose page reads its holds")
		assert.Equal(t, "(none)", before.Hosts["a.test"].Holds[0].Rule, "the key of requests no rule matched")
		h := status.Handler(tr)
		for range 3 {
			serve(h, http.MethodGet, "/")
			serve(h, http.MethodGet, "/?format=json")
		}
		after := tr.Stats()
		assert.Len(t, after.Hosts, len(before.Hosts))
		assert.Zero(t, after.Hosts["a.test"].LatencySamples, "a latency ring was made")
		assert.Zero(t, after.Failed)
		assert.Equal(t, before, after)
	})
}

// Serving the page starts no goroutine that outlives it, on a Transport
// that built its own base.
func TestLeavesNoGoroutine(t *testing.T) {
	srv := &rt.Server{Script: []rt.Step{{Status: 503}, {}}}
	ts := srv.Start(t)
	tr := &retryhttp.Transport{}
	defer tr.CloseIdleConnections()
	get(t, &http.Client{Transport: tr}, ts.URL+"/v1/items")
	tr.CloseIdleConnections()
	ignore := goleak.IgnoreCurrent()
	h := status.Handler(tr)
	for _, target := range []string{"/", "/?format=json"} {
		require.Equal(t, http.StatusOK, serve(h, http.MethodGet, target).Code)
	}
	goleak.VerifyNone(t, ignore)
}
