package retryhttp

import (
	"context"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp/policy"
)

// t0 is the time the decision tables are read at.
var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// decision is one row of a decision table: a request's state (its plan,
// method, the attempts sent, a deadline, a spent budget, a waiting for
// ready), an attempt's result and outcome, and the step that follows.
type decision struct {
	name     string
	plan     string // "retry" (3 attempts, 100 ms doubling), "hedge" (3 attempts), "none"
	method   string // "" is GET
	sent     int    // attempts sent, r.n among them; 0 means r.n
	deadline time.Duration
	spent    bool // the host's budget is spent
	ready    bool // the request waits for ready
	used     bool // the transparent resend is used already
	backoff  int  // the retry policy's counter
	r        result
	out      outcome
	want     step
}

// decisionCall returns a call in the state row d describes.
func decisionCall(t *testing.T, d decision) *call {
	t.Helper()
	cfg := &policy.Config{Throttle: &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}, MaxServerDelay: time.Minute}
	st := &state{hosts: newHostTable(cfg.Throttle, 0), pool: newBufferPool(BufferLimits{})}
	ctx := context.Background()
	if d.deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, t0.Add(d.deadline))
		t.Cleanup(cancel)
	}
	if d.ready {
		ctx = WithWaitForReady(ctx)
	}
	method := d.method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, "https://api.test/", nil)
	if err != nil {
		t.Fatal(err)
	}
	var rule *policy.Rule
	switch d.plan {
	case "retry":
		rule = &policy.Rule{Retry: &policy.Retry{MaxAttempts: 3, RetryableStatusCodes: []int{429, 503},
			Backoff: policy.Exponential{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 2}}}
	case "hedge":
		rule = &policy.Rule{Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 50 * time.Millisecond, NonFatalStatusCodes: []int{503}}}
	}
	c := &call{st: st, pol: newActive(cfg), req: req, ctx: ctx, opts: optionsOf(ctx), host: st.hosts.get("api.test"),
		plan: newPlan(rule, req), spare: !d.used, sent: d.sent, backoff: d.backoff}
	if c.sent == 0 {
		c.sent = d.r.n
	}
	c.body = &c.own
	c.body.init(req, st.pool)
	if d.spent {
		for range 5 {
			c.host.bucket.Failure()
		}
	}
	return c
}

// answer is a response with status and header, for a row's result.
func answer(status int, header ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody}
}

// TestDecide reads what follows an attempt from its result, its outcome
// and the time, with no HTTP: every row is a pure step.
func TestDecide(t *testing.T) {
	dialWindow := &DialBackoffError{Addr: "10.0.0.1:443", Remaining: 3 * time.Second, Err: syscall.ECONNREFUSED}
	tests := []decision{
		{name: "a success is delivered", plan: "retry", r: result{n: 1, resp: answer(200)}, out: outDone,
			want: step{kind: stepDeliver, attempt: 1}},
		{name: "a fatal error fails", plan: "retry", r: result{n: 1, err: syscall.EINVAL}, out: outFatal,
			want: step{kind: stepFail, attempt: 1}},
		{name: "never sent: resent at once", plan: "retry", r: result{n: 1, err: syscall.ECONNREFUSED}, out: outNeverSent,
			want: step{kind: stepResend, attempt: 1}},
		{name: "never sent, resend used: the backoff", plan: "retry", used: true, r: result{n: 1, err: syscall.ECONNREFUSED}, out: outNeverSent,
			want: step{kind: stepNext, attempt: 2, wait: 100 * time.Millisecond, reason: WaitBackoff, backoff: 1}},
		{name: "never sent under no rule: resent", plan: "none", r: result{n: 1, err: syscall.ECONNREFUSED}, out: outNeverSent,
			want: step{kind: stepResend, attempt: 1}},
		{name: "never sent under no rule, resend used: no more", plan: "none", used: true, r: result{n: 1, err: syscall.ECONNREFUSED}, out: outNeverSent,
			want: step{kind: stepNoMore, attempt: 2}},
		{name: "a listed status waits the backoff", plan: "retry", r: result{n: 1, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: 100 * time.Millisecond, reason: WaitBackoff, backoff: 1}},
		{name: "the last attempt: no more", plan: "retry", r: result{n: 3, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 4}},
		{name: "pushback sets the wait and restarts the backoff", plan: "retry",
			r: result{n: 1, resp: answer(503), serverDelay: serverDelay{Kind: delayPushback, Wait: 250 * time.Millisecond}}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: 250 * time.Millisecond, reason: WaitPushback}},
		{name: "a negative pushback forbids the retry", plan: "retry",
			r: result{n: 1, resp: answer(503), serverDelay: serverDelay{Kind: delayStop}}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 2, refusal: RefusedServerDelay}},
		{name: "Retry-After sets the wait", plan: "retry",
			r: result{n: 1, resp: answer(503), serverDelay: serverDelay{Kind: delayRetryAfter, Wait: 5 * time.Second}}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: 5 * time.Second, reason: WaitRetryAfter, backoff: 1}},
		{name: "a delay over maxServerDelay is not waited", plan: "retry",
			r: result{n: 1, resp: answer(503), serverDelay: serverDelay{Kind: delayRetryAfter, Wait: 2 * time.Minute}}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 2, refusal: RefusedServerDelay}},
		{name: "a delay past the deadline is not waited", plan: "retry", deadline: 4 * time.Second,
			r: result{n: 1, resp: answer(503), serverDelay: serverDelay{Kind: delayRetryAfter, Wait: 5 * time.Second}}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 2, refusal: RefusedDeadline}},
		{name: "a wait ending at the deadline is not started", plan: "retry", deadline: 100 * time.Millisecond,
			r: result{n: 1, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 2, refusal: RefusedDeadline}},
		{name: "a 429 with no delay signal waits a second", plan: "retry", r: result{n: 1, resp: answer(429)}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: time.Second, reason: WaitRateLimited, backoff: 1}},
		{name: "a 429's floor gives way to a backoff as long", plan: "retry", backoff: 4, r: result{n: 1, resp: answer(429)}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: time.Second, reason: WaitBackoff, backoff: 5}},
		{name: "a POST is not retried after a 503", plan: "retry", method: "POST", r: result{n: 1, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 2}},
		{name: "a POST is retried after a 429", plan: "retry", method: "POST", r: result{n: 1, resp: answer(429)}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: time.Second, reason: WaitRateLimited, backoff: 1}},
		{name: "a POST is retried after a pushback", plan: "retry", method: "POST",
			r: result{n: 1, resp: answer(503), serverDelay: serverDelay{Kind: delayPushback}}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, reason: WaitPushback}},
		{name: "a POST is retried when the verdict says unprocessed", plan: "retry", method: "POST",
			r: result{n: 1, resp: answer(503), verdict: RetryableUnprocessed}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: 100 * time.Millisecond, reason: WaitBackoff, backoff: 1}},
		{name: "a verdict's wait comes first", plan: "retry",
			r: result{n: 1, resp: answer(403), verdict: RetryableUnprocessed.After(time.Minute),
				serverDelay: serverDelay{Kind: delayRetryAfter, Wait: time.Second}}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: time.Minute, reason: WaitClassify, backoff: 1}},
		{name: "a verdict's wait of 0 is at once", plan: "retry",
			r: result{n: 1, resp: answer(403), verdict: Retryable.After(-time.Second)}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, reason: WaitClassify, backoff: 1}},
		{name: "a verdict's wait over maxServerDelay is not waited", plan: "retry",
			r: result{n: 1, resp: answer(403), verdict: Retryable.After(time.Hour)}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 2, refusal: RefusedServerDelay}},
		{name: "a spent budget refuses before the wait", plan: "retry", spent: true, r: result{n: 1, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 2, refusal: RefusedBudget}},
		{name: "a dial window is waited out for ready", plan: "retry", ready: true, used: true,
			r: result{n: 1, err: dialWindow, class: outNeverSent}, out: outNeverSent,
			want: step{kind: stepReady, attempt: 1, wait: 3 * time.Second, reason: WaitDialBackoff}},
		{name: "a dial window past the deadline is not waited", plan: "retry", ready: true, deadline: 2 * time.Second,
			r: result{n: 1, err: dialWindow}, out: outNeverSent,
			want: step{kind: stepNoMore, attempt: 1, refusal: RefusedDeadline}},
		{name: "a dial window fails fast otherwise", plan: "retry", used: true, r: result{n: 1, err: dialWindow}, out: outNeverSent,
			want: step{kind: stepNext, attempt: 2, wait: 100 * time.Millisecond, reason: WaitBackoff, backoff: 1}},
		{name: "no body: no more", plan: "retry", r: result{n: 1, err: errBodyCommitted}, out: outNoBody,
			want: step{kind: stepNoMore, attempt: 2}},
		{name: "a non-fatal status sends the next hedge at once", plan: "hedge", r: result{n: 1, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, reason: WaitHedgeDelay}},
		{name: "a pushback holds the next hedge back", plan: "hedge",
			r: result{n: 1, resp: answer(503), serverDelay: serverDelay{Kind: delayPushback, Wait: 300 * time.Millisecond}}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: 300 * time.Millisecond, reason: WaitPushback}},
		{name: "a dial window holds the next hedge back for ready", plan: "hedge", ready: true, used: true,
			r: result{n: 1, err: dialWindow}, out: outNeverSent,
			want: step{kind: stepNext, attempt: 2, wait: 3 * time.Second, reason: WaitDialBackoff}},
		{name: "every hedge sent: no more", plan: "hedge", sent: 3, r: result{n: 2, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := decisionCall(t, tt)
			got := c.decide(&tt.r, tt.out, t0, 0)
			assert.Equal(t, tt.want, got)
		})
	}
}

// A server's delay is jittered up only, by at most a tenth and at most a
// second, rnd choosing where.
func TestDecideJittersServerDelaysUp(t *testing.T) {
	r := result{n: 1, resp: answer(503), serverDelay: serverDelay{Kind: delayRetryAfter, Wait: 5 * time.Second}}
	for _, tc := range []struct {
		rnd  float64
		want time.Duration
	}{{0, 5 * time.Second}, {0.5, 5250 * time.Millisecond}, {0.999, 5*time.Second + 499500*time.Microsecond}} {
		c := decisionCall(t, decision{plan: "retry", r: r})
		got := c.decide(&r, outRetryStatus, t0, tc.rnd)
		assert.Equal(t, tc.want, got.wait, "rnd %v", tc.rnd)
	}
}
