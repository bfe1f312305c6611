package status_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/internal/memfleet"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/status"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The page's JSON, as Handler documents it: decoding it with unknown
// fields disallowed holds the page to its documented shape.
type pageJSON struct {
	Version              int           `json:"version"`
	Time                 time.Time     `json:"time"`
	Used                 bool          `json:"used"`
	Dialer               bool          `json:"dialer"`
	PolicyErr            string        `json:"policyErr"`
	Total                countersJSON  `json:"total"`
	Buffer               bufferJSON    `json:"buffer"`
	Hosts                []hostJSON    `json:"hosts"`
	MoreHosts            int           `json:"moreHosts"`
	OtherDialBackoff     []windowJSON  `json:"otherDialBackoff"`
	MoreOtherDialBackoff int           `json:"moreOtherDialBackoff"`
	Failures             []failureJSON `json:"failures"`
	Failed               uint64        `json:"failed"`
}

type countersJSON struct {
	Requests            uint64  `json:"requests"`
	ExtraAttempts       uint64  `json:"extraAttempts"`
	ExtraAttemptsFailed uint64  `json:"extraAttemptsFailed"`
	TransparentRetries  uint64  `json:"transparentRetries"`
	Hedges              uint64  `json:"hedges"`
	HedgesWon           uint64  `json:"hedgesWon"`
	HedgesCancelled     uint64  `json:"hedgesCancelled"`
	BudgetRefusals      uint64  `json:"budgetRefusals"`
	FleetRefusals       uint64  `json:"fleetRefusals"`
	HedgeBudgetRefusals uint64  `json:"hedgeBudgetRefusals"`
	HoldsSet            uint64  `json:"holdsSet"`
	HoldWaits           uint64  `json:"holdWaits"`
	HoldWaitTimeMs      float64 `json:"holdWaitTimeMs"`
	HoldRefusals        uint64  `json:"holdRefusals"`
	PaceWaits           uint64  `json:"paceWaits"`
	PaceWaitTimeMs      float64 `json:"paceWaitTimeMs"`
	PaceRefusals        uint64  `json:"paceRefusals"`
	AdmissionWaits      uint64  `json:"admissionWaits"`
	AdmissionWaitTimeMs float64 `json:"admissionWaitTimeMs"`
	Shed                uint64  `json:"shed"`
	CommittedForSize    uint64  `json:"committedForSize"`
}

type bufferJSON struct {
	Buffered         int64  `json:"buffered"`
	HighWater        int64  `json:"highWater"`
	CommittedForSize uint64 `json:"committedForSize"`
}

type hostJSON struct {
	Host string `json:"host"`
	countersJSON
	Tokens           float64      `json:"tokens"`
	MaxTokens        float64      `json:"maxTokens"`
	HedgeTokens      float64      `json:"hedgeTokens"`
	Holds            []holdJSON   `json:"holds"`
	MoreHolds        int          `json:"moreHolds"`
	PaceRate         float64      `json:"paceRate"`
	ConcurrencyLimit int          `json:"concurrencyLimit"`
	InFlight         int          `json:"inFlight"`
	LatencySamples   int          `json:"latencySamples"`
	LatencyP50Ms     float64      `json:"latencyP50Ms"`
	LatencyP90Ms     float64      `json:"latencyP90Ms"`
	LatencyP99Ms     float64      `json:"latencyP99Ms"`
	DialBackoff      []windowJSON `json:"dialBackoff"`
	MoreDialBackoff  int          `json:"moreDialBackoff"`
	RecentFailures   int          `json:"recentFailures"`
}

type holdJSON struct {
	Rule        string    `json:"rule"`
	Status      int       `json:"status"`
	Since       time.Time `json:"since"`
	Until       time.Time `json:"until"`
	RemainingMs float64   `json:"remainingMs"`
	Fleet       bool      `json:"fleet"`
}

type windowJSON struct {
	Network     string    `json:"network"`
	Addr        string    `json:"addr"`
	Failures    int       `json:"failures"`
	Until       time.Time `json:"until"`
	RemainingMs float64   `json:"remainingMs"`
	Err         string    `json:"err"`
}

type failureJSON struct {
	Time     time.Time `json:"time"`
	Host     string    `json:"host"`
	Method   string    `json:"method"`
	Path     string    `json:"path"`
	Status   int       `json:"status"`
	Err      string    `json:"err"`
	Attempts int       `json:"attempts"`
}

// script is a kit Server playing steps in order, in memory.
func script(steps ...rt.Step) *rt.Server { return &rt.Server{Script: steps} }

// newScripted returns a Transport whose base is a kit Server playing
// steps in memory.
func newScripted(cfg *policy.Config, steps ...rt.Step) *retryhttp.Transport {
	return &retryhttp.Transport{Base: script(steps...), Policy: cfg}
}

// readAll reads resp's body and closes it.
func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return string(b)
}

// serve answers method target with h, as a server would.
func serve(h http.Handler, method, target string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
	return w
}

// pageOf reads tr's page as JSON, strictly.
func pageOf(t *testing.T, tr *retryhttp.Transport) pageJSON {
	t.Helper()
	w := serve(status.Handler(tr), http.MethodGet, "/?format=json")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	dec := json.NewDecoder(w.Body)
	dec.DisallowUnknownFields()
	var p pageJSON
	require.NoError(t, dec.Decode(&p))
	return p
}

// htmlOf reads tr's page as HTML.
func htmlOf(t *testing.T, tr *retryhttp.Transport) string {
	t.Helper()
	w := serve(status.Handler(tr), http.MethodGet, "/")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	return w.Body.String()
}

// The page answers GET and HEAD, in HTML or JSON, and nothing else. Each
// case runs in a bubble, whose clock stands still, so that the page is
// the same from one answer to the next and HEAD's length can be checked.
func TestMethods(t *testing.T) {
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
				tr := newScripted(nil, rt.Step{Status: 503})
				resp, err := (&http.Client{Transport: tr}).Get("https://api.test/")
				require.NoError(t, err)
				readAll(t, resp)
				h := status.Handler(tr)
				w := serve(h, tt.method, tt.target)
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
				want := serve(h, http.MethodGet, tt.target).Body.Len()
				got, err := strconv.Atoi(w.Header().Get("Content-Length"))
				require.NoError(t, err)
				assert.Equal(t, want, got, "got Content-Length %d, want %d", got, want)
			})
		})
	}
}

// The page works wherever it is mounted: its one link is relative.
func TestAnyMountPath(t *testing.T) {
	t.Parallel()
	h := status.Handler(newScripted(nil, rt.Step{}))
	mux := http.NewServeMux()
	mux.Handle("/debug/retryhttp", h)
	mux.Handle("/ops/transports/api/", http.StripPrefix("/ops/transports/api", h))
	mux.Handle("/{$}", h)
	for _, target := range []string{"/", "/debug/retryhttp", "/ops/transports/api/", "/ops/transports/api/deeper/still"} {
		t.Run(target, func(t *testing.T) {
			html := serve(mux, http.MethodGet, target)
			require.Equal(t, http.StatusOK, html.Code)
			assert.Contains(t, html.Body.String(), `<a href="?format=json">`)
			js := serve(mux, http.MethodGet, target+"?format=json")
			require.Equal(t, http.StatusOK, js.Code)
			assert.Equal(t, "application/json", js.Header().Get("Content-Type"))
		})
	}
}

// A Transport never used shows an empty page, and serving it is not the
// Transport's first use: a field set afterwards is still taken.
func TestNeverUsed(t *testing.T) {
	t.Parallel()
	tr := &retryhttp.Transport{Base: script(rt.Step{Status: 503}, rt.Step{})}
	p := pageOf(t, tr)
	assert.Equal(t, pageJSON{Version: 1, Time: p.Time, Hosts: []hostJSON{}, OtherDialBackoff: []windowJSON{},
		Failures: []failureJSON{}}, p)
	assert.Contains(t, htmlOf(t, tr), "has not been used yet")
	assert.Equal(t, retryhttp.Stats{Rules: map[string]retryhttp.Counters{}, Hosts: map[string]retryhttp.HostStats{}}, tr.Stats())

	tr.Policy = policy.None() // taken only if the page made no first use
	resp, err := (&http.Client{Transport: tr}).Get("https://api.test/")
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, 503, resp.StatusCode, "got %d: the policy set after the page was not taken", resp.StatusCode)
}

// An invalid policy, which fails every request, is shown as such.
func TestShowsInvalidPolicy(t *testing.T) {
	t.Parallel()
	tr := newScripted(&policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
		Retry: &policy.Retry{MaxAttempts: 0}}}}, rt.Step{})
	_, err := (&http.Client{Transport: tr}).Get("https://api.test/")
	require.Error(t, err)
	p := pageOf(t, tr)
	assert.True(t, p.Used)
	assert.Contains(t, p.PolicyErr, "retryhttp: invalid policy")
	assert.Contains(t, htmlOf(t, tr), "The policy is invalid")
}

// A 429 with Retry-After: 30 holds its host; the page shows the hold,
// its rule (the key of policy.Default's one rule, named [{}]) and
// status, and the time left, and the request it refused.
func TestShowsHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newScripted(policy.Default(), rt.Step{Status: 429, Header: http.Header{"Retry-After": {"30"}}}, rt.Step{})
		// Each request gives itself 10 s: the 30 s are not waited, and
		// the 429 comes back at once.
		client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		start := time.Now()
		resp, err := client.Get("https://api.test/v1/items")
		require.NoError(t, err)
		readAll(t, resp)
		require.Equal(t, 429, resp.StatusCode)

		time.Sleep(5 * time.Second)
		_, err = client.Get("https://api.test/v1/items/7")
		require.ErrorIs(t, err, retryhttp.ErrHeld)

		p := pageOf(t, tr)
		require.Len(t, p.Hosts, 1)
		h := p.Hosts[0]
		assert.Equal(t, "api.test", h.Host)
		assert.Equal(t, []holdJSON{{Rule: "*", Status: 429, Since: start.UTC(),
			Until: start.Add(30 * time.Second).UTC(), RemainingMs: 25000}}, h.Holds)
		assert.Equal(t, uint64(1), h.HoldRefusals, "hold refusals")
		assert.Equal(t, uint64(1), h.HoldsSet, "holds set")
		require.Len(t, p.Failures, 1)
		f := p.Failures[0]
		assert.Equal(t, failureJSON{Time: start.Add(5 * time.Second).UTC(), Host: "api.test", Method: "GET",
			Path: "/v1/items/7", Err: f.Err}, f)
		assert.Contains(t, f.Err, "host api.test held for another 25s after a 429")

		html := htmlOf(t, tr)
		for _, want := range []string{"api.test", "held", "<b>25s</b> left", "429 Too Many Requests",
			`rule <span class="mono">*</span>`, "/v1/items/7"} {
			assert.Contains(t, html, want)
		}
	})
}

// A hold that another member of the fleet met shows once a request here
// met it, marked as the fleet's: it is why this member sends nothing.
func TestShowsFleetHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fleet := memfleet.New()
		a := &retryhttp.Transport{Base: script(rt.Step{Status: 429, Header: http.Header{"Retry-After": {"30"}}}), Fleet: fleet}
		b := &retryhttp.Transport{Base: script(rt.Step{}), Fleet: fleet}
		start := time.Now()
		resp, err := (&http.Client{Transport: a, Timeout: 10 * time.Second}).Get("https://api.test/v1/items")
		require.NoError(t, err)
		readAll(t, resp)
		assert.False(t, pageOf(t, a).Hosts[0].Holds[0].Fleet, "its own hold")

		_, err = (&http.Client{Transport: b, Timeout: 10 * time.Second}).Get("https://api.test/v1/items")
		require.ErrorIs(t, err, retryhttp.ErrHeld)
		p := pageOf(t, b)
		require.Len(t, p.Hosts, 1)
		assert.Equal(t, []holdJSON{{Rule: "*", Status: 429, Since: start.UTC(),
			Until: start.Add(30 * time.Second).UTC(), RemainingMs: 30000, Fleet: true}}, p.Hosts[0].Holds)
		assert.Contains(t, htmlOf(t, b), "by the fleet")
		assert.NotContains(t, htmlOf(t, a), "by the fleet")
	})
}
