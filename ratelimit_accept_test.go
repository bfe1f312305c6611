package retryhttp_test

import (
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// A 429 with no usable delay signal is retried after at least a second,
// jittered up by at most a tenth, or after the rule's backoff when that
// is longer, under every retry rule and for any method; a delay signal
// the server sends, even of 0, is obeyed instead. Pacing is off, so that
// only the wait is seen.
func TestA429WithoutADelayWaitsASecondOrTheBackoff(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	short := retryConfig(3, 429)                                                // 100 ms, doubling
	long := withWaits(retryConfig(3, 429), 3*s, 10*s)                           // 3 s, no jitter
	own := ruleWith(backoffFunc(func(int) time.Duration { return -time.Hour })) // a caller's own, negative
	own.Rules[0].Retry.RetryableStatusCodes = []int{429}
	parsed, err := policy.ParseConfig([]byte(`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3,
		"backoff": {"table": {"steps": ["10ms"]}}, "retryableStatusCodes": [429]}}], "pace": {"off": true}}`))
	require.NoError(t, err)
	tests := []struct {
		name   string
		cfg    *policy.Config
		method string
		header http.Header
		lo, hi time.Duration // the wait before the retry
	}{
		{"the default policy", nil, "GET", nil, s, 1100 * ms},
		{"a shorter backoff", short, "GET", nil, s, 1100 * ms},
		{"a longer backoff", long, "GET", nil, 3 * s, 3 * s},
		{"a caller's own backoff of less than 0", own, "GET", nil, s, 1100 * ms},
		{"a JSON rule", parsed, "GET", nil, s, 1100 * ms},
		{"a POST", short, "POST", nil, s, 1100 * ms},
		{"Retry-After: 0", short, "GET", hdr("Retry-After", "0"), 0, 0},
		{"X-Retry-Pushback-Ms: 0", short, "GET", hdr("X-Retry-Pushback-Ms", "0"), 0, 0},
		{"Retry-After-Ms shorter than a second", short, "GET", hdr("Retry-After-Ms", "200"), 200 * ms, 220 * ms},
		{"a Retry-After that does not parse", short, "GET", hdr("Retry-After", "soon"), s, 1100 * ms},
		{"a Retry-After with a fraction", short, "GET", hdr("Retry-After", "0.5"), s, 1100 * ms},
		{"a RateLimit with quota left", short, "GET", hdr("RateLimit", `"default";r=5;t=30`), s, 1100 * ms},
		{"a malformed RateLimit", short, "GET", hdr("RateLimit", `"default";r=0;t=30;`), s, 1100 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := tt.cfg
				if cfg == nil {
					cfg = policy.Default()
				}
				cfg.Pace = &policy.Pace{Off: true}
				tr, srv := newScripted(cfg, rt.Step{Status: 429, Header: tt.header}, rt.Step{Body: "ok"})
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), tt.method, "payload"))
				require.NoError(t, err)
				assert.Equal(t, "ok", readAll(t, resp))
				at := arrivals(srv)
				require.Len(t, at, 2)
				assert.GreaterOrEqual(t, at[1], tt.lo, "got a wait of %v, want at least %v", at[1], tt.lo)
				assert.LessOrEqual(t, at[1], tt.hi, "got a wait of %v, want at most %v", at[1], tt.hi)
			})
		})
	}
	// The floor is jittered: over many requests, not all retry together.
	synctest.Test(t, func(t *testing.T) {
		cfg := policy.Default()
		cfg.Pace = &policy.Pace{Off: true}
		var least, most time.Duration = time.Hour, 0
		for range 200 {
			tr, srv := newScripted(cfg, rt.Step{Status: 429}, rt.Step{Body: "ok"})
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
			require.NoError(t, err)
			readAll(t, resp)
			at := arrivals(srv)
			require.Len(t, at, 2)
			least, most = min(least, at[1]), max(most, at[1])
		}
		assert.Less(t, least, 1020*ms, "got the least wait %v", least)
		assert.Greater(t, most, 1080*ms, "got the longest wait %v", most)
	})
}

// backoffFunc is a caller's own Backoff.
type backoffFunc func(n int) time.Duration

func (f backoffFunc) Duration(n int) time.Duration { return f(n) }

// Each format of serverDelayHeaders, read from JSON, sets the wait before
// the retry of a 503 as Retry-After does, times read against the
// response's Date: a value invalid in its format leaves the wait to the
// backoff, a time past is a retry at once, and a delay over
// maxServerDelay, or too large to represent, is not waited for.
func TestServerDelayHeadersEveryFormat(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	cfg, err := policy.ParseConfig([]byte(`{
		"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2,
			"backoff": {"exponential": {"initial": "100ms", "max": "100ms", "multiplier": 1, "jitter": 0}},
			"retryableStatusCodes": [503]}}],
		"serverDelayHeaders": [
			{"name": "x-reset-seconds", "format": "seconds"},
			{"name": "x-reset-ms", "format": "milliseconds"},
			{"name": "x-reset-unix", "format": "unixSeconds"},
			{"name": "x-reset-date", "format": "httpDate"},
			{"name": "x-reset-in", "format": "duration"},
			{"name": "x-reset-at", "format": "rfc3339"}
		],
		"hold": {"off": true}, "pace": {"off": true}
	}`))
	require.NoError(t, err)
	// Each value is written at the time of the response, the server's
	// clock skew apart from the client's.
	unix := func(d time.Duration) func(time.Time) string {
		return func(now time.Time) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	}
	date := func(d time.Duration) func(time.Time) string {
		return func(now time.Time) string { return now.Add(d).UTC().Format(http.TimeFormat) }
	}
	rfc3339 := func(d time.Duration) func(time.Time) string {
		return func(now time.Time) string { return now.Add(d).Format(time.RFC3339Nano) }
	}
	fixed := func(v string) func(time.Time) string { return func(time.Time) string { return v } }
	const backoff, once = 100 * ms, time.Duration(-1)
	tests := []struct {
		name   string
		header string
		value  func(now time.Time) string
		skew   time.Duration // of the server's Date
		wait   time.Duration // backoff: no delay read; once: not waited, one attempt
	}{
		{"seconds", "X-Reset-Seconds", fixed("7"), 0, 7 * s},
		{"seconds with a fraction and whitespace", "X-Reset-Seconds", fixed(" 1.25\t"), 0, 1250 * ms},
		{"seconds, 20 digits", "X-Reset-Seconds", fixed("99999999999999999999"), 0, once},
		{"seconds over maxServerDelay", "X-Reset-Seconds", fixed("61"), 0, once},
		{"seconds negative", "X-Reset-Seconds", fixed("-1"), 0, backoff},
		{"seconds as an exponent", "X-Reset-Seconds", fixed("1e1"), 0, backoff},
		{"seconds with a trailing point", "X-Reset-Seconds", fixed("7."), 0, backoff},
		{"milliseconds", "X-Reset-Ms", fixed("250"), 0, 250 * ms},
		{"milliseconds with a fraction", "X-Reset-Ms", fixed("250.5"), 0, 250*ms + 500*time.Microsecond},
		{"milliseconds, 20 digits", "X-Reset-Ms", fixed("99999999999999999999"), 0, once},
		{"unixSeconds", "X-Reset-Unix", unix(30 * s), 0, 30 * s},
		{"unixSeconds against a Date an hour ahead", "X-Reset-Unix", unix(30 * s), time.Hour, 30 * s},
		{"unixSeconds past", "X-Reset-Unix", unix(-time.Hour), 0, 0},
		{"unixSeconds 0", "X-Reset-Unix", fixed("0"), 0, 0},
		{"unixSeconds negative", "X-Reset-Unix", fixed("-5"), 0, backoff},
		{"unixSeconds, 20 digits", "X-Reset-Unix", fixed("99999999999999999999"), 0, once},
		{"httpDate", "X-Reset-Date", date(20 * s), 0, 20 * s},
		{"httpDate against a Date an hour behind", "X-Reset-Date", date(20 * s), -time.Hour, 20 * s},
		{"httpDate before the epoch", "X-Reset-Date", fixed("Mon, 01 Jan 1900 00:00:00 GMT"), 0, 0},
		{"httpDate in 9999", "X-Reset-Date", fixed("Fri, 31 Dec 9999 23:59:59 GMT"), 0, once},
		{"httpDate garbage", "X-Reset-Date", fixed("tomorrow"), 0, backoff},
		{"duration", "X-Reset-In", fixed("6s"), 0, 6 * s},
		{"duration in parts", "X-Reset-In", fixed("1m0.5s"), 0, once},
		{"duration of milliseconds", "X-Reset-In", fixed("20ms"), 0, 20 * ms},
		{"duration past the largest", "X-Reset-In", fixed("99999999999h"), 0, once},
		{"duration negative", "X-Reset-In", fixed("-1s"), 0, backoff},
		{"duration without a unit", "X-Reset-In", fixed("5"), 0, backoff},
		{"rfc3339", "X-Reset-At", rfc3339(15 * s), 0, 15 * s},
		{"rfc3339 with a fraction", "X-Reset-At", rfc3339(1500 * ms), 0, 1500 * ms},
		{"rfc3339 against a Date an hour ahead", "X-Reset-At", rfc3339(15 * s), time.Hour, 15 * s},
		{"rfc3339 in year 1", "X-Reset-At", fixed("0001-01-01T00:00:00Z"), 0, 0},
		{"rfc3339 in 9999", "X-Reset-At", fixed("9999-12-31T23:59:59Z"), 0, once},
		{"rfc3339 past 9999", "X-Reset-At", fixed("10000-01-01T00:00:00Z"), 0, backoff},
		{"rfc3339 without a zone", "X-Reset-At", fixed("2000-01-01T00:00:15"), 0, backoff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(n int, _ *http.Request) rt.Step {
					if n > 1 {
						return rt.Step{Body: "ok"}
					}
					server := time.Now().Add(tt.skew)
					return rt.Step{Status: 503, Header: http.Header{
						tt.header: {tt.value(server)},
						"Date":    {server.UTC().Format(http.TimeFormat)},
					}}
				}}
				tr := &retryhttp.Transport{Base: srv, Policy: cfg}
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				body := readAll(t, resp)
				at := arrivals(srv)
				if tt.wait == once {
					assert.Equal(t, 503, resp.StatusCode)
					assert.Len(t, at, 1)
					assert.Zero(t, time.Since(start), "the response goes back at once")
					return
				}
				assert.Equal(t, "ok", body)
				require.Len(t, at, 2)
				spread := min(tt.wait/10, s) // a server's delay is jittered up only
				if tt.wait == backoff {
					spread = 0
				}
				within(t, at[1], tt.wait, spread, "the wait before the retry")
			})
		})
	}
}

// Which responses hold their host: a 429 or 503 with a server delay, and
// rate-limit fields that say the quota is spent, on any status, a 200
// included; not another status with a delay, not a delay of 0, and not a
// count left that only may mean spent. The next call to the host waits
// for the hold.
func TestWhichResponsesHoldTheHost(t *testing.T) {
	const s = time.Second
	cfg := func() *policy.Config {
		c := retryConfig(2, 429, 502, 503)
		c.DelayHeaders = []policy.DelayHeader{{Name: "X-Ratelimit-Reset", Format: policy.DelaySeconds, Remaining: "X-Ratelimit-Remaining"}}
		c.Pace = &policy.Pace{Off: true}
		return c
	}
	quota := func(left, reset string) http.Header {
		return http.Header{"X-Ratelimit-Remaining": {left}, "X-Ratelimit-Reset": {reset}}
	}
	tests := []struct {
		name   string
		status int
		header http.Header
		held   time.Duration // when the next call is sent, at the least
	}{
		{"429 with Retry-After", 429, http.Header{"Retry-After": {"10"}}, 10 * s},
		{"503 with Retry-After", 503, http.Header{"Retry-After": {"10"}}, 10 * s},
		{"503 with a pushback", 503, http.Header{"X-Retry-Pushback-Ms": {"4000"}}, 4 * s},
		{"429 with Retry-After-Ms", 429, http.Header{"Retry-After-Ms": {"2500"}}, 2500 * time.Millisecond},
		{"200 with a spent RateLimit", 200, http.Header{"Ratelimit": {`"default";r=0;t=20`}}, 20 * s},
		{"200 with a spent RateLimit among others", 200, http.Header{"Ratelimit": {`"a";r=9;t=1, "b";r=0;t=5;x=?1`}}, 5 * s},
		{"200 with none left", 200, quota("0", "15"), 15 * s},
		{"404 with none left", 404, quota(" 0 ", "15"), 15 * s},
		{"200 with one left", 200, quota("1", "15"), 0},
		{"200 with 00 left", 200, quota("00", "15"), 0},
		{"200 with -1 left", 200, quota("-1", "15"), 0},
		{"200 with Retry-After", 200, http.Header{"Retry-After": {"10"}}, 0},
		{"200 with a RateLimit whose r is a decimal", 200, http.Header{"Ratelimit": {`"default";r=0.0;t=20`}}, 0},
		{"200 with a RateLimit whose t is negative", 200, http.Header{"Ratelimit": {`"default";r=0;t=-20`}}, 0},
		{"200 with a RateLimit inner list", 200, http.Header{"Ratelimit": {`("default");r=0;t=20`}}, 0},
		{"429 with Retry-After: 0", 429, http.Header{"Retry-After": {"0"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(n int, _ *http.Request) rt.Step {
					if n > 1 {
						return rt.Step{Body: "ok"}
					}
					return rt.Step{Status: tt.status, Header: tt.header}
				}}
				tr := &retryhttp.Transport{Base: srv, Policy: cfg()}
				// The first call meets the response, and hands it back
				// without waiting: it may not be retried.
				resp, err := tr.RoundTrip(newRequest(t, retryhttp.WithoutRetries(t.Context()), "GET", ""))
				require.NoError(t, err)
				readAll(t, resp)
				require.Equal(t, tt.status, resp.StatusCode)
				resp, err = tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				assert.Equal(t, "ok", readAll(t, resp))
				at := arrivals(srv)
				require.Len(t, at, 2)
				within(t, at[1], tt.held, min(tt.held/10, s), "the next call")
			})
		})
	}
}

// A retry that cannot wait out a hold another request set hands back its
// own last response, with no error, at once: its backoff is not waited
// for, as a wait past the deadline is not; ErrHeld comes only to a
// request with nothing to return, which sent nothing.
func TestARetryUnderAHoldItCannotWaitOutHandsBackItsResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			switch req.URL.Path {
			case "/slow":
				return rt.Step{Status: 500, Body: "slow failure", Delay: time.Second}
			case "/limited":
				return rt.Step{Status: 429, Header: http.Header{"Retry-After": {"30"}}}
			}
			return rt.Step{Body: "ok"}
		}}
		cfg := retryConfig(3, 429, 500)
		cfg.Pace = &policy.Pace{Off: true}
		tr := &retryhttp.Transport{Base: srv, Policy: cfg}
		start := time.Now()
		slow := make(chan struct{})
		go func() {
			defer close(slow)
			status, err := getWithin(t, tr, t.Context(), "/slow", 10*time.Second)
			assert.NoError(t, err, "a retry held past its deadline hands back the last response")
			assert.Equal(t, 500, status)
		}()
		synctest.Wait() // /slow is sent, and is being answered
		// The host is held for 30 s while /slow is still being answered.
		status, err := getWithin(t, tr, t.Context(), "/limited", 5*time.Second)
		require.NoError(t, err)
		assert.Equal(t, 429, status)
		<-slow
		// The hold is met when /slow's answer is: its backoff (100 ms)
		// is not started.
		assert.Equal(t, time.Second, time.Since(start), "/slow comes back with its answer, not after its backoff or at its deadline")

		_, err = getWithin(t, tr, t.Context(), "/new", 5*time.Second)
		require.ErrorIs(t, err, retryhttp.ErrHeld, "nothing to return")
		var rerr *retryhttp.Error
		require.ErrorAs(t, err, &rerr)
		assert.Zero(t, rerr.Attempts)
		assert.Len(t, arrivals(srv), 2, "only /slow and /limited were sent")
	})
}
