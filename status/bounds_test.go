package retryhttp_test

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
func TestStatusBounded(t *testing.T) {
	t.Parallel()
	const hosts = 10000
	cfg := policy.Default()
	cfg.MaxServerDelay = time.Second // the holds are not waited for
	tr, _ := newScripted(cfg, rt.Step{Status: 429, Header: http.Header{"Retry-After": {"3600"}}})
	client := &http.Client{Transport: tr}
	for i := range hosts {
		get(t, client, "https://"+longHost(i)+"/v1/"+strings.Repeat("p", 300))
	}

	s := statusOf(t, tr)
	assert.Len(t, s.Hosts, 100)
	assert.Greater(t, s.MoreHosts, 0)
	assert.LessOrEqual(t, len(s.Hosts)+s.MoreHosts, hosts)
	for _, h := range s.Hosts {
		assert.Len(t, h.Holds, 1, h.Host)
	}
	assert.Len(t, s.Failures, 0, "a 429 at the first attempt is no failure of the Transport's")
	for _, format := range []string{"", "?format=json"} {
		w := serveStatus(retryhttp.StatusHandler(tr), http.MethodGet, "/"+format)
		require.Equal(t, http.StatusOK, w.Code)
		assert.Less(t, w.Body.Len(), 1<<20, "format %q: got %d bytes", format, w.Body.Len())
		t.Logf("format %q: %d bytes", format, w.Body.Len())
	}
}

// Serving the page changes nothing the page, or Stats, can see, and
// leaves no goroutine behind: inside the bubble, one left blocked would
// fail the test when the bubble ends.
func TestStatusChangesNothing(t *testing.T) {
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
		h := retryhttp.StatusHandler(tr)
		pages := func() []string {
			var out []string
			for _, target := range []string{"/", "/?format=json"} {
				out = append(out, serveStatus(h, http.MethodGet, target).Body.String())
			}
			return out
		}
		before := pages()
		for _, method := range []string{"GET", "HEAD", "POST", "DELETE"} {
			for _, target := range []string{"/", "/?format=json", "/?format=nope"} {
				serveStatus(h, method, target)
			}
		}
		assert.Equal(t, before, pages(), "the page changed by being served")
		assert.Equal(t, statsBefore, tr.Stats())
	})
}

// Serving the page starts no goroutine that outlives it, on a Transport
// that built its own base.
func TestStatusLeavesNoGoroutine(t *testing.T) {
	srv := &rt.Server{Script: []rt.Step{{Status: 503}, {}}}
	ts := srv.Start(t)
	tr := &retryhttp.Transport{}
	defer tr.CloseIdleConnections()
	get(t, &http.Client{Transport: tr}, ts.URL+"/v1/items")
	tr.CloseIdleConnections()
	ignore := goleak.IgnoreCurrent()
	h := retryhttp.StatusHandler(tr)
	for _, target := range []string{"/", "/?format=json"} {
		require.Equal(t, http.StatusOK, serveStatus(h, http.MethodGet, target).Code)
	}
	goleak.VerifyNone(t, ignore)
}
