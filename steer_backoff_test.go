package retryhttp_test

import (
	"context"
	"math"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// recordedBackoff is a caller's own Backoff that waits what wait says and
// records each n it is asked about.
type recordedBackoff struct {
	wait func(n int) time.Duration
	mu   sync.Mutex
	ns   []int
}

func (b *recordedBackoff) Duration(n int) time.Duration {
	b.mu.Lock()
	b.ns = append(b.ns, n)
	b.mu.Unlock()
	return b.wait(n)
}

func (b *recordedBackoff) asked() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.ns...)
}

// ruleWith is a config of one retry rule for every request, of five
// attempts on a 503, whose waits b gives.
func ruleWith(b policy.Backoff) *policy.Config {
	return &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
		Retry: &policy.Retry{MaxAttempts: 5, RetryableStatusCodes: []int{503}, Backoff: b}}}}
}

// jsonRule is ruleWith's config read from JSON, its backoff in the JSON
// form given.
func jsonRule(t *testing.T, backoff string) *policy.Config {
	t.Helper()
	c, err := policy.ParseConfig([]byte(`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 5, ` +
		`"backoff": ` + backoff + `, "retryableStatusCodes": [503]}}]}`))
	require.NoError(t, err)
	return c
}

// Each of the package's backoffs, in Go and in its JSON form, and a
// caller's own, drives the waits between the attempts of a request: the
// wait before retry n is within what Duration(n) documents, the caller's
// own is asked about n = 0, 1, 2, 3 in turn and its waits are kept
// exactly, and a Retry without Backoff waits the Exponential of its four
// numeric fields, jittered by DefaultJitter when Jitter is zero.
func TestEachBackoffDrivesTheRetryWaits(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	steps := []time.Duration{s, 2 * s, 5 * s}
	table := func(n int) (time.Duration, time.Duration) {
		step := steps[min(n, len(steps)-1)]
		return step / 2, step * 3 / 2
	}
	fullJitter := func(n int) (time.Duration, time.Duration) { return 0, min(100*ms<<n, s) }
	google := func(n int) (time.Duration, time.Duration) { return min(s<<n, 5*s), min(s<<n+s, 5*s) }
	exact := func(n int) (time.Duration, time.Duration) { d := min(s<<n, 4*s); return d, d }
	jittered := func(n int) (time.Duration, time.Duration) { d := min(s<<n, 4*s); return d * 4 / 5, d * 6 / 5 }
	own := &recordedBackoff{wait: func(n int) time.Duration { return time.Duration(n+1) * 300 * ms }}
	ownWaits := func(n int) (time.Duration, time.Duration) { d := time.Duration(n+1) * 300 * ms; return d, d }
	negative := &recordedBackoff{wait: func(int) time.Duration { return -time.Hour }}
	none := func(int) (time.Duration, time.Duration) { return 0, 0 }
	numeric := ruleWith(nil)
	numeric.Rules[0].Retry.InitialBackoff, numeric.Rules[0].Retry.MaxBackoff = s, 4*s
	numeric.Rules[0].Retry.BackoffMultiplier = 2
	tests := []struct {
		name   string
		cfg    *policy.Config
		bounds func(n int) (lo, hi time.Duration)
	}{
		{"Table", ruleWith(policy.Table{Steps: steps}), table},
		{"Table in JSON", jsonRule(t, `{"table": {"steps": ["1s", "2s", "5s"]}}`), table},
		{"FullJitter", ruleWith(policy.FullJitter{Initial: 100 * ms, Max: s, Multiplier: 2}), fullJitter},
		{"FullJitter in JSON", jsonRule(t, `{"fullJitter": {"initial": "100ms", "max": "1s", "multiplier": 2}}`), fullJitter},
		{"GoogleAPI", ruleWith(policy.GoogleAPI{Max: 5 * s}), google},
		{"GoogleAPI in JSON", jsonRule(t, `{"googleApi": {"max": "5s"}}`), google},
		{"Exponential", ruleWith(policy.Exponential{Initial: s, Max: 4 * s, Multiplier: 2}), exact},
		{"Exponential in JSON", jsonRule(t, `{"exponential": {"initial": "1s", "max": "4s", "multiplier": 2, "jitter": 0}}`), exact},
		{"the four numeric fields", numeric, jittered},
		{"the caller's own", ruleWith(own), ownWaits},
		{"the caller's own, negative", ruleWith(negative), none},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, srv := newScripted(tt.cfg, rt.Step{Status: 503})
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				readAll(t, resp)
				assert.Equal(t, 503, resp.StatusCode)
				at := arrivals(srv)
				require.Len(t, at, 5)
				for n := range 4 {
					lo, hi := tt.bounds(n)
					wait := at[n+1] - at[n]
					assert.GreaterOrEqual(t, wait, lo, "wait before retry %d: got %v, want at least %v", n, wait, lo)
					assert.LessOrEqual(t, wait, hi, "wait before retry %d: got %v, want at most %v", n, wait, hi)
				}
			})
		})
	}
	// Asked about n = 0..3 for the four retries, and perhaps about 4
	// after the last attempt, whose answer is then handed back.
	asked := own.asked()
	require.GreaterOrEqual(t, len(asked), 4)
	assert.Equal(t, []int{0, 1, 2, 3}, asked[:4], "the caller's own is asked about each retry in turn")
	assert.LessOrEqual(t, len(asked), 5, "got %v", asked)
}

// Verdict.After's values: comparable with ==, the wait kept to the
// microsecond and rounded up, a wait of 0 or less the same as 0, a later
// After replacing an earlier one, and a value that is no verdict asking
// for the policy's decision with the wait.
func TestVerdictAfterValues(t *testing.T) {
	us := time.Microsecond
	tests := []struct {
		name string
		a, b retryhttp.Verdict
		same bool
	}{
		{"the same wait", retryhttp.Retryable.After(time.Second), retryhttp.Retryable.After(time.Second), true},
		{"another verdict", retryhttp.Retryable.After(time.Second), retryhttp.RetryableUnprocessed.After(time.Second), false},
		{"a wait is not no wait", retryhttp.Retryable.After(time.Second), retryhttp.Retryable, false},
		{"a wait of 0 is not no wait", retryhttp.Final.After(0), retryhttp.Final, false},
		{"another microsecond", retryhttp.Retryable.After(time.Second), retryhttp.Retryable.After(time.Second + us), false},
		{"rounded up to the microsecond", retryhttp.Retryable.After(time.Second + 1), retryhttp.Retryable.After(time.Second + us), true},
		{"within one microsecond", retryhttp.Retryable.After(time.Second + 1), retryhttp.Retryable.After(time.Second + 999), true},
		{"negative is 0", retryhttp.UsePolicy.After(-time.Hour), retryhttp.UsePolicy.After(0), true},
		{"the most negative is 0", retryhttp.Throttled.After(math.MinInt64), retryhttp.Throttled.After(0), true},
		{"a later After replaces the wait", retryhttp.Retryable.After(time.Minute).After(time.Second), retryhttp.Retryable.After(time.Second), true},
		{"no verdict is UsePolicy", retryhttp.Verdict(42).After(time.Second), retryhttp.UsePolicy.After(time.Second), true},
		{"a negative value is UsePolicy", retryhttp.Verdict(-7).After(time.Second), retryhttp.UsePolicy.After(time.Second), true},
		{"the largest wait", retryhttp.Retryable.After(math.MaxInt64), retryhttp.Retryable.After(math.MaxInt64 - us), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.same, tt.a == tt.b, "%v == %v: got %v, want %v", tt.a, tt.b, tt.a == tt.b, tt.same)
		})
	}
	for v, want := range map[retryhttp.Verdict]string{
		retryhttp.RetryableUnprocessed.After(time.Minute): "RetryableUnprocessed.After(1m0s)",
		retryhttp.Retryable.After(1):                      "Retryable.After(1µs)",
		retryhttp.Final.After(-time.Second):               "Final.After(0s)",
		retryhttp.UsePolicy.After(math.MaxInt64):          "UsePolicy.After(" + time.Duration(math.MaxInt64).String() + ")",
	} {
		assert.Equal(t, want, v.String())
	}
}

// The wait a verdict asks for replaces the server's delay headers and the
// backoff before the next attempt, and is read as a server delay: jittered
// up only, by at most a tenth and at most a second; not waited for, the
// response going back at once, when it is over maxServerDelay or would
// end past the deadline. A wait of 0 or less is at once. Final, and an
// outcome that is not retried, ignore it. Holds are off here, so that
// only the wait is seen (TestVerdictWaitSetsTheHold has them on).
func TestVerdictWaitSetsTheNextAttempt(t *testing.T) {
	const s = time.Second
	retryAfter := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	tests := []struct {
		name     string
		method   string
		status   int
		header   http.Header
		verdict  retryhttp.Verdict
		maxDelay time.Duration // the policy's maxServerDelay; 0: the default, 60 s
		deadline time.Duration // 0: none
		attempts int
		wait     time.Duration // the least wait before the retry, when there is one
	}{
		{"in place of Retry-After", "GET", 503, retryAfter("30"), retryhttp.Retryable.After(2 * s), 0, 0, 2, 2 * s},
		{"in place of a shorter Retry-After", "GET", 503, retryAfter("1"), retryhttp.Retryable.After(20 * s), 0, 0, 2, 20 * s},
		{"in place of the backoff", "GET", 503, nil, retryhttp.UsePolicy.After(5 * s), 0, 0, 2, 5 * s},
		{"on a status the rule does not list", "GET", 403, nil, retryhttp.Retryable.After(3 * s), 0, 0, 2, 3 * s},
		{"unprocessed, for a POST", "POST", 403, nil, retryhttp.RetryableUnprocessed.After(3 * s), 0, 0, 2, 3 * s},
		{"jittered by at most a second", "GET", 503, nil, retryhttp.Retryable.After(50 * s), 0, 0, 2, 50 * s},
		{"0 is at once", "GET", 503, retryAfter("30"), retryhttp.Retryable.After(0), 0, 0, 2, 0},
		{"negative is at once", "GET", 503, nil, retryhttp.Retryable.After(-time.Hour), 0, 0, 2, 0},
		{"within a longer maxServerDelay", "GET", 503, nil, retryhttp.Retryable.After(5 * time.Minute), 10 * time.Minute, 0, 2, 5 * time.Minute},
		{"over maxServerDelay", "GET", 503, nil, retryhttp.Retryable.After(61 * s), 0, 0, 1, 0},
		{"the largest Duration", "GET", 503, nil, retryhttp.Retryable.After(math.MaxInt64), 0, 0, 1, 0},
		{"past the deadline", "GET", 503, nil, retryhttp.Retryable.After(6 * s), 0, 5 * s, 1, 0},
		{"Final ignores it", "GET", 503, nil, retryhttp.Final.After(s), 0, 0, 1, 0},
		{"an outcome not retried ignores it", "GET", 404, nil, retryhttp.UsePolicy.After(s), 0, 0, 1, 0},
		{"a POST that may have been acted on ignores it", "POST", 503, nil, retryhttp.Retryable.After(s), 0, 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := retryConfig(3, 503)
				cfg.MaxServerDelay = tt.maxDelay
				cfg.Hold = &policy.Hold{Off: true}
				tr, srv := newScripted(cfg, rt.Step{Status: tt.status, Header: tt.header}, rt.Step{Body: "ok"})
				tr.Classify = func(attempt int, _ *http.Response, _ error) retryhttp.Verdict {
					if attempt == 1 {
						return tt.verdict
					}
					return retryhttp.UsePolicy
				}
				ctx := t.Context()
				if tt.deadline > 0 {
					var cancel func()
					ctx, cancel = context.WithTimeout(ctx, tt.deadline)
					defer cancel()
				}
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, ctx, tt.method, "payload"))
				require.NoError(t, err)
				readAll(t, resp)
				at := arrivals(srv)
				require.Len(t, at, tt.attempts)
				if tt.attempts == 1 {
					assert.Equal(t, tt.status, resp.StatusCode)
					assert.Zero(t, time.Since(start), "the response goes back at once")
					return
				}
				assert.Equal(t, 200, resp.StatusCode)
				within(t, at[1], tt.wait, min(tt.wait/10, s), "the wait before the retry")
			})
		})
	}
}

// Under a hedging rule, a verdict's wait holds the next hedge back as a
// pushback does; without one, a non-fatal answer sends it at once.
func TestVerdictWaitHoldsTheNextHedgeBack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		verdict retryhttp.Verdict
		at      time.Duration
	}{
		{"no wait", retryhttp.Retryable, 0},
		{"a wait", retryhttp.Retryable.After(2 * time.Second), 2 * time.Second},
		{"an unprocessed wait", retryhttp.RetryableUnprocessed.After(3 * time.Second), 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
					Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: time.Hour, NonFatalStatusCodes: []int{503}}}}}
				tr, srv := newScripted(cfg, rt.Step{Status: 503}, rt.Step{Body: "ok"})
				tr.Classify = func(attempt int, _ *http.Response, _ error) retryhttp.Verdict {
					if attempt == 1 {
						return tc.verdict
					}
					return retryhttp.UsePolicy
				}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				assert.Equal(t, "ok", readAll(t, resp))
				at := arrivals(srv)
				require.Len(t, at, 2)
				within(t, at[1], tc.at, tc.at/10, "the second hedge")
			})
		})
	}
}

// With holds on, a verdict's wait stands in place of the server's delay
// for the hold the answer sets as well: a 429 or 503 whose Retry-After
// says 30 s, under a verdict asking for 2 s, holds the host 2 s, and the
// retry (held by it) goes at 2 s, not 30 s. A wait of 0 holds nothing.
// Without a wait of its own, a verdict leaves the server's delay to set
// the hold.
func TestVerdictWaitSetsTheHold(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name    string
		status  int
		verdict retryhttp.Verdict
		retry   time.Duration // when the retry arrives, at least
		hold    time.Duration // the hold set, 0: none
	}{
		{"a 429, shorter", 429, retryhttp.RetryableUnprocessed.After(2 * s), 2 * s, 2 * s},
		{"a 503, shorter", 503, retryhttp.Retryable.After(2 * s), 2 * s, 2 * s},
		{"a 429, longer", 429, retryhttp.RetryableUnprocessed.After(45 * s), 45 * s, 45 * s},
		{"a 429, at once", 429, retryhttp.Throttled.After(0), 0, 0},
		{"a 429, no wait of its own", 429, retryhttp.RetryableUnprocessed, 30 * s, 30 * s},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, srv := newScripted(retryConfig(3, 429, 503),
					rt.Step{Status: tt.status, Header: http.Header{"Retry-After": {"30"}}}, rt.Step{Body: "ok"})
				tr.Classify = func(attempt int, _ *http.Response, _ error) retryhttp.Verdict {
					if attempt == 1 {
						return tt.verdict
					}
					return retryhttp.UsePolicy
				}
				var hold time.Duration
				// Read when the retry's wait starts: the answer has been
				// learnt by then.
				tr.Hooks = &retrytrace.Hooks{Wait: func(retrytrace.WaitInfo) {
					for _, h := range tr.Stats().Hosts["api.test"].Holds {
						hold = h.Until.Sub(h.Since)
					}
				}}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.NoError(t, err)
				assert.Equal(t, "ok", readAll(t, resp))
				at := arrivals(srv)
				require.Len(t, at, 2)
				within(t, at[1], tt.retry, tt.retry/10+time.Millisecond, "the retry")
				assert.Equal(t, tt.hold, hold, "the hold the first answer set")
			})
		})
	}
}
