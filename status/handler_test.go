package retryhttp_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The status page's JSON, as StatusHandler documents it: decoding it
// with unknown fields disallowed holds the page to its documented shape.
type statusJSON struct {
	Version              int           `json:"version"`
	Time                 time.Time     `json:"time"`
	Used                 bool          `json:"used"`
	PolicyError          string        `json:"policyError"`
	Dialer               bool          `json:"dialer"`
	Totals               countersJSON  `json:"totals"`
	Hosts                []hostJSON    `json:"hosts"`
	MoreHosts            int           `json:"moreHosts"`
	OtherDialBackoff     []dialJSON    `json:"otherDialBackoff"`
	MoreOtherDialBackoff int           `json:"moreOtherDialBackoff"`
	Failures             []failureJSON `json:"failures"`
	FailuresTotal        uint64        `json:"failuresTotal"`
}

type hostJSON struct {
	Host   string `json:"host"`
	Budget *struct {
		Tokens        float64 `json:"tokens"`
		Capacity      float64 `json:"capacity"`
		AllowsRetries bool    `json:"allowsRetries"`
	} `json:"budget"`
	HedgeBudget     float64       `json:"hedgeBudget"`
	Holds           []holdJSON    `json:"holds"`
	MoreHolds       int           `json:"moreHolds"`
	DialBackoff     []dialJSON    `json:"dialBackoff"`
	MoreDialBackoff int           `json:"moreDialBackoff"`
	Latency         *latencyJSON  `json:"latency"`
	Counters        *countersJSON `json:"counters"`
	RecentFailures  int           `json:"recentFailures"`
}

type holdJSON struct {
	Rule        string    `json:"rule"`
	Status      int       `json:"status"`
	Since       time.Time `json:"since"`
	Until       time.Time `json:"until"`
	RemainingMs float64   `json:"remainingMs"`
}

type dialJSON struct {
	Network     string    `json:"network"`
	Address     string    `json:"address"`
	Failures    int       `json:"failures"`
	Until       time.Time `json:"until"`
	RemainingMs float64   `json:"remainingMs"`
	Error       string    `json:"error"`
}

type latencyJSON struct {
	Samples int     `json:"samples"`
	P50Ms   float64 `json:"p50Ms"`
	P90Ms   float64 `json:"p90Ms"`
	P99Ms   float64 `json:"p99Ms"`
}

type countersJSON struct {
	Requests           uint64 `json:"requests"`
	Retries            uint64 `json:"retries"`
	RetriesFailed      uint64 `json:"retriesFailed"`
	TransparentRetries uint64 `json:"transparentRetries"`
	Hedges             uint64 `json:"hedges"`
	HedgesWon          uint64 `json:"hedgesWon"`
	Refusals           struct {
		Budget      uint64 `json:"budget"`
		Fleet       uint64 `json:"fleet"`
		HedgeBudget uint64 `json:"hedgeBudget"`
		Hold        uint64 `json:"hold"`
	} `json:"refusals"`
	HoldsSet   uint64  `json:"holdsSet"`
	HoldWaits  uint64  `json:"holdWaits"`
	HoldWaitMs float64 `json:"holdWaitMs"`
}

type failureJSON struct {
	Time     time.Time `json:"time"`
	Host     string    `json:"host"`
	Method   string    `json:"method"`
	Path     string    `json:"path"`
	Status   int       `json:"status"`
	Error    string    `json:"error"`
	Attempts int       `json:"attempts"`
}

// serveStatus answers method target with h, as a server would.
func serveStatus(h http.Handler, method, target string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
	return w
}

// statusOf reads tr's status page as JSON, strictly.
func statusOf(t *testing.T, tr *retryhttp.Transport) statusJSON {
	t.Helper()
	w := serveStatus(retryhttp.StatusHandler(tr), http.MethodGet, "/?format=json")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	dec := json.NewDecoder(w.Body)
	dec.DisallowUnknownFields()
	var s statusJSON
	require.NoError(t, dec.Decode(&s))
	return s
}

// htmlOf reads tr's status page as HTML.
func htmlOf(t *testing.T, tr *retryhttp.Transport) string {
	t.Helper()
	w := serveStatus(retryhttp.StatusHandler(tr), http.MethodGet, "/")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	return w.Body.String()
}

// The page answers GET and HEAD, in HTML or JSON, and nothing else. Each
// case runs in a bubble, whose clock stands still, so that the page is
// the same from one answer to the next and HEAD's length can be checked.
func TestStatusMethods(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method, target string
		code           int
		ctype          string
		body           bool
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", true},
		{"GET", "/?format=html", 200, "text/html; charset=utf-8", true},
		{"GET", "/?format=json", 200, "application/json", true},
		{"HEAD", "/", 200, "text/html; charset=utf-8", false},
		{"HEAD", "/?format=json", 200, "application/json", false},
		{"GET", "/?format=yaml", 400, "text/plain; charset=utf-8", true},
		{"POST", "/", 405, "text/plain; charset=utf-8", true},
		{"PUT", "/", 405, "text/plain; charset=utf-8", true},
		{"PATCH", "/?format=json", 405, "text/plain; charset=utf-8", true},
		{"DELETE", "/", 405, "text/plain; charset=utf-8", true},
		{"OPTIONS", "/", 405, "text/plain; charset=utf-8", true},
		{"TRACE", "/", 405, "text/plain; charset=utf-8", true},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				tr, _ := newScripted(nil, rt.Step{Status: 503})
				resp, err := (&http.Client{Transport: tr}).Get("https://api.test/")
				require.NoError(t, err)
				readAll(t, resp)
				h := retryhttp.StatusHandler(tr)
				w := serveStatus(h, tt.method, tt.target)
				assert.Equal(t, tt.code, w.Code, "got status %d, want %d", w.Code, tt.code)
				assert.Equal(t, tt.ctype, w.Header().Get("Content-Type"))
				assert.Equal(t, tt.body, w.Body.Len() > 0, "got a body of %d bytes", w.Body.Len())
				if tt.code == 405 {
					assert.Equal(t, "GET, HEAD", w.Header().Get("Allow"))
				}
				if tt.code != 200 {
					return
				}
				assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
				assert.Contains(t, w.Header().Get("Content-Security-Policy"), "default-src 'none'")
				want := serveStatus(h, http.MethodGet, tt.target).Body.Len()
				assert.Equal(t, want, atoi(w.Header().Get("Content-Length")), "got Content-Length %s, want %d",
					w.Header().Get("Content-Length"), want)
			})
		})
	}
}

// The page works wherever it is mounted: its one link is relative.
func TestStatusAnyMountPath(t *testing.T) {
	t.Parallel()
	tr, _ := newScripted(nil, rt.Step{})
	h := retryhttp.StatusHandler(tr)
	mux := http.NewServeMux()
	mux.Handle("/debug/retryhttp", h)
	mux.Handle("/ops/transports/api/", http.StripPrefix("/ops/transports/api", h))
	mux.Handle("/{$}", h)
	for _, target := range []string{"/", "/debug/retryhttp", "/ops/transports/api/", "/ops/transports/api/deeper/still"} {
		t.Run(target, func(t *testing.T) {
			html := serveStatus(mux, http.MethodGet, target)
			require.Equal(t, http.StatusOK, html.Code)
			assert.Contains(t, html.Body.String(), `<a href="?format=json">`)
			js := serveStatus(mux, http.MethodGet, target+"?format=json")
			require.Equal(t, http.StatusOK, js.Code)
			assert.Equal(t, "application/json", js.Header().Get("Content-Type"))
		})
	}
}

// A Transport never used shows an empty page, and serving it is not the
// Transport's first use: a field set afterwards is still taken.
func TestStatusNeverUsed(t *testing.T) {
	t.Parallel()
	srv := script(rt.Step{Status: 503}, rt.Step{})
	tr := &retryhttp.Transport{Base: srv}
	s := statusOf(t, tr)
	assert.Equal(t, statusJSON{Version: 1, Time: s.Time, Hosts: []hostJSON{}, OtherDialBackoff: []dialJSON{},
		Failures: []failureJSON{}}, s)
	assert.Contains(t, htmlOf(t, tr), "has not been used yet")
	assert.Equal(t, retryhttp.Stats{Rules: map[string]retryhttp.Counters{}, Hosts: map[string]retryhttp.Counters{}}, tr.Stats())

	tr.Policy = policy.None() // taken only if the page made no first use
	resp, err := (&http.Client{Transport: tr}).Get("https://api.test/")
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, 503, resp.StatusCode, "got %d: the policy set after the page was not taken", resp.StatusCode)
}

// An invalid policy, which fails every request, is shown as such.
func TestStatusShowsInvalidPolicy(t *testing.T) {
	t.Parallel()
	tr, _ := newScripted(&policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
		Retry: &policy.Retry{MaxAttempts: 0}}}}, rt.Step{})
	_, err := (&http.Client{Transport: tr}).Get("https://api.test/")
	require.Error(t, err)
	s := statusOf(t, tr)
	assert.True(t, s.Used)
	assert.Contains(t, s.PolicyError, "retryhttp: invalid policy")
	assert.Contains(t, htmlOf(t, tr), "The policy is invalid")
}

// A 429 with Retry-After: 30 holds its host; the page shows the hold,
// its rule and status, and the time left, and the request it refused.
func TestStatusShowsHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := policy.Default()
		cfg.MaxServerDelay = 10 * time.Second // the 30 s are not waited: the 429 comes back at once
		tr, _ := newScripted(cfg, rt.Step{Status: 429, Header: http.Header{"Retry-After": {"30"}}}, rt.Step{})
		client := &http.Client{Transport: tr}
		start := time.Now()
		resp, err := client.Get("https://api.test/v1/items")
		require.NoError(t, err)
		readAll(t, resp)
		require.Equal(t, 429, resp.StatusCode)

		time.Sleep(5 * time.Second)
		_, err = client.Get("https://api.test/v1/items/7")
		require.ErrorIs(t, err, retryhttp.ErrHeld)

		s := statusOf(t, tr)
		require.Len(t, s.Hosts, 1)
		h := s.Hosts[0]
		assert.Equal(t, "api.test", h.Host)
		assert.Equal(t, []holdJSON{{Rule: "methodConfig[0]", Status: 429, Since: start.UTC(),
			Until: start.Add(30 * time.Second).UTC(), RemainingMs: 25000}}, h.Holds)
		assert.Equal(t, uint64(1), h.Counters.Refusals.Hold, "hold refusals")
		assert.Equal(t, uint64(1), h.Counters.HoldsSet, "holds set")
		require.Len(t, s.Failures, 1)
		f := s.Failures[0]
		assert.Equal(t, failureJSON{Time: start.Add(5 * time.Second).UTC(), Host: "api.test", Method: "GET",
			Path: "/v1/items/7", Error: f.Error}, f)
		assert.Contains(t, f.Error, "host api.test held for another 25s after a 429")

		html := htmlOf(t, tr)
		for _, want := range []string{"api.test", "held", "<b>25s</b> left", "429 Too Many Requests", "methodConfig[0]", "/v1/items/7"} {
			assert.Contains(t, html, want)
		}
	})
}
