package retryhttp

import (
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp/dial"
	"github.com/retryhttp/retryhttp/internal/holdlist"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// decision is one row of a decision table: a request's state (its plan,
// method, the attempts sent, a deadline, a spent budget, a waiting for
// ready), an attempt's result and outcome, and the step that follows.
type decision struct {
	name     string
	plan     string // "retry" (3 attempts, 100 ms doubling), "hedge" (3 attempts), "none"
	method   string // "" is GET
	sent     int    // attempts sent, r.n among them; 0 means r.n
	deadline time.Duration
	spent    bool          // the host's budget is spent
	ready    bool          // the request waits for ready
	used     bool          // the transparent resend is used already
	backoff  int           // the retry policy's counter
	held     time.Duration // a hold on the host in force, ending this long after now; 0: none
	r        result
	out      outcome
	want     step
}

// decisionFacts returns the facts row d describes, read at now: its
// deadline is d.deadline after now, and nothing in them reads a clock.
func decisionFacts(t *testing.T, now time.Time, d decision) facts {
	t.Helper()
	method := d.method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequest(method, "https://api.test/", nil)
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
	f := facts{now: now, ready: d.ready, plan: newPlan(rule, req), sent: d.sent, backoff: d.backoff,
		spare: !d.used, replayable: true, maxServerDelay: time.Minute, host: hostFacts{budget: !d.spent},
		attempt: attemptFactsOf(&d.r, d.out)}
	if d.deadline > 0 {
		f.deadline = now.Add(d.deadline)
	}
	if d.held > 0 {
		f.host.hold = hold{Hold: holdlist.Hold{Rule: "r", Until: now.Add(d.held), Status: 429}, since: now}
		f.host.holding = holdHeld
	}
	if f.sent == 0 {
		f.sent = d.r.n
	}
	if f.plan.retry != nil {
		f.schedule = f.plan.retry.Schedule().Duration(d.backoff)
	}
	return f
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
	now := time.Now()
	dialWindow := &dial.BackoffError{Addr: "10.0.0.1:443", Remaining: 3 * time.Second, Err: syscall.ECONNREFUSED}
	tests := []decision{
		{name: "a success is delivered", plan: "retry", r: result{n: 1, resp: answer(200)}, out: outDone,
			want: step{kind: stepDeliver, attempt: 1}},
		{name: "a fatal error fails", plan: "retry", r: result{n: 1, err: syscall.EINVAL}, out: outFatal,
			want: step{kind: stepFail, attempt: 1}},
		{name: "never sent: resent at once", plan: "retry", r: result{n: 1, err: syscall.ECONNREFUSED}, out: outNeverSent,
			want: step{kind: stepResend, attempt: 1}},
		{name: "never sent, resend used: the backoff", plan: "retry", used: true, r: result{n: 1, err: syscall.ECONNREFUSED}, out: outNeverSent,
			want: step{kind: stepNext, attempt: 2, wait: 100 * time.Millisecond, reason: retrytrace.WaitBackoff, backoff: 1}},
		{name: "never sent under no rule: resent", plan: "none", r: result{n: 1, err: syscall.ECONNREFUSED}, out: outNeverSent,
			want: step{kind: stepResend, attempt: 1}},
		{name: "never sent under no rule, resend used: no more", plan: "none", used: true, r: result{n: 1, err: syscall.ECONNREFUSED}, out: outNeverSent,
			want: step{kind: stepNoMore, attempt: 2}},
		{name: "a listed status waits the backoff", plan: "retry", r: result{n: 1, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: 100 * time.Millisecond, reason: retrytrace.WaitBackoff, backoff: 1}},
		{name: "the last attempt: no more", plan: "retry", r: result{n: 3, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 4}},
		{name: "pushback sets the wait and restarts the backoff", plan: "retry",
			r: result{n: 1, resp: answer(503), serverDelay: serverDelay{Kind: delayPushback, Wait: 250 * time.Millisecond}}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: 250 * time.Millisecond, reason: retrytrace.WaitPushback}},
		{name: "a negative pushback forbids the retry", plan: "retry",
			r: result{n: 1, resp: answer(503), serverDelay: serverDelay{Kind: delayStop}}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 2, refusal: retrytrace.RefusedNoRetry}},
		{name: "Retry-After sets the wait", plan: "retry",
			r: result{n: 1, resp: answer(503), serverDelay: serverDelay{Kind: delayRetryAfter, Wait: 5 * time.Second}}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: 5 * time.Second, reason: retrytrace.WaitRetryAfter, backoff: 1}},
		{name: "a delay over maxServerDelay is not waited", plan: "retry",
			r: result{n: 1, resp: answer(503), serverDelay: serverDelay{Kind: delayRetryAfter, Wait: 2 * time.Minute}}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 2, refusal: retrytrace.RefusedDelayTooLong}},
		{name: "a delay past the deadline is not waited", plan: "retry", deadline: 4 * time.Second,
			r: result{n: 1, resp: answer(503), serverDelay: serverDelay{Kind: delayRetryAfter, Wait: 5 * time.Second}}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 2, refusal: retrytrace.RefusedDeadline}},
		{name: "a wait ending at the deadline is not started", plan: "retry", deadline: 100 * time.Millisecond,
			r: result{n: 1, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 2, refusal: retrytrace.RefusedDeadline}},
		{name: "a 429's Retry-After of zero is a signal: the retry goes at once", plan: "retry",
			r: result{n: 1, resp: answer(429), serverDelay: serverDelay{Kind: delayRetryAfter}}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, reason: retrytrace.WaitRetryAfter, backoff: 1}},
		{name: "a 429 with no delay signal waits a second", plan: "retry", r: result{n: 1, resp: answer(429)}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: time.Second, reason: retrytrace.WaitRateLimited, backoff: 1}},
		{name: "a 429's floor gives way to a backoff as long", plan: "retry", backoff: 4, r: result{n: 1, resp: answer(429)}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: time.Second, reason: retrytrace.WaitBackoff, backoff: 5}},
		{name: "a POST is not retried after a 503", plan: "retry", method: "POST", r: result{n: 1, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 2}},
		{name: "a POST is retried after a 429", plan: "retry", method: "POST", r: result{n: 1, resp: answer(429)}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: time.Second, reason: retrytrace.WaitRateLimited, backoff: 1}},
		{name: "a POST is retried after a pushback", plan: "retry", method: "POST",
			r: result{n: 1, resp: answer(503), serverDelay: serverDelay{Kind: delayPushback}}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, reason: retrytrace.WaitPushback}},
		{name: "a POST is retried when the verdict says unprocessed", plan: "retry", method: "POST",
			r: result{n: 1, resp: answer(503), verdict: RetryableUnprocessed}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: 100 * time.Millisecond, reason: retrytrace.WaitBackoff, backoff: 1}},
		{name: "a verdict's wait comes first", plan: "retry",
			r: result{n: 1, resp: answer(403), verdict: RetryableUnprocessed.After(time.Minute),
				serverDelay: serverDelay{Kind: delayRetryAfter, Wait: time.Second}}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: time.Minute, reason: retrytrace.WaitClassify, backoff: 1}},
		{name: "a verdict's wait of 0 is at once", plan: "retry",
			r: result{n: 1, resp: answer(403), verdict: Retryable.After(-time.Second)}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, reason: retrytrace.WaitClassify, backoff: 1}},
		{name: "a verdict's wait over maxServerDelay is not waited", plan: "retry",
			r: result{n: 1, resp: answer(403), verdict: Retryable.After(time.Hour)}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 2, refusal: retrytrace.RefusedDelayTooLong}},
		{name: "a hold within the deadline: the backoff, then the gate", plan: "retry", held: 5 * time.Second, deadline: 10 * time.Second,
			r: result{n: 1, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: 100 * time.Millisecond, reason: retrytrace.WaitBackoff, backoff: 1}},
		{name: "a hold past the deadline refuses before the wait", plan: "retry", held: 30 * time.Second, deadline: 10 * time.Second,
			r: result{n: 1, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 2, refusal: retrytrace.RefusedHeld, wait: 30 * time.Second,
				hold: hold{Hold: holdlist.Hold{Rule: "r", Until: now.Add(30 * time.Second), Status: 429}, since: now}}},
		{name: "a hold past maxServerDelay refuses before the wait", plan: "hedge", held: 2 * time.Minute,
			r: result{n: 1, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 2, refusal: retrytrace.RefusedHeld, wait: 2 * time.Minute,
				hold: hold{Hold: holdlist.Hold{Rule: "r", Until: now.Add(2 * time.Minute), Status: 429}, since: now}}},
		{name: "a spent budget refuses before the wait", plan: "retry", spent: true, r: result{n: 1, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 2, refusal: retrytrace.RefusedBudget}},
		{name: "a dial window is waited out for ready", plan: "retry", ready: true, used: true,
			r: result{n: 1, err: dialWindow, class: outNeverSent}, out: outNeverSent,
			want: step{kind: stepReady, attempt: 1, wait: 3 * time.Second, reason: retrytrace.WaitDialBackoff}},
		{name: "a dial window past the deadline is not waited", plan: "retry", ready: true, deadline: 2 * time.Second,
			r: result{n: 1, err: dialWindow}, out: outNeverSent,
			want: step{kind: stepNoMore, attempt: 1, refusal: retrytrace.RefusedDeadline}},
		{name: "a resend's dial window is waited out for ready with no retry to follow", plan: "none", ready: true, used: true,
			r: result{n: 1, resend: true, err: dialWindow}, out: outNeverSent,
			want: step{kind: stepReady, attempt: 1, wait: 3 * time.Second, reason: retrytrace.WaitDialBackoff}},
		{name: "a last resend's dial window is waited out for ready", plan: "retry", ready: true, used: true,
			r: result{n: 3, resend: true, err: dialWindow}, out: outNeverSent,
			want: step{kind: stepReady, attempt: 3, wait: 3 * time.Second, reason: retrytrace.WaitDialBackoff}},
		{name: "a resend's dial window holds the next attempt back for ready", plan: "retry", ready: true, used: true,
			r: result{n: 1, resend: true, err: dialWindow}, out: outNeverSent,
			want: step{kind: stepNext, attempt: 2, wait: 3 * time.Second, reason: retrytrace.WaitDialBackoff, backoff: 1}},
		{name: "a resend's dial window fails fast otherwise", plan: "none", used: true,
			r: result{n: 1, resend: true, err: dialWindow}, out: outNeverSent,
			want: step{kind: stepNoMore, attempt: 2}},
		{name: "a dial window fails fast otherwise", plan: "retry", used: true, r: result{n: 1, err: dialWindow}, out: outNeverSent,
			want: step{kind: stepNext, attempt: 2, wait: 100 * time.Millisecond, reason: retrytrace.WaitBackoff, backoff: 1}},
		{name: "no body: no more", plan: "retry", r: result{n: 1, err: errBodyCommitted}, out: outNoBody,
			want: step{kind: stepNoMore, attempt: 2}},
		{name: "a non-fatal status sends the next hedge at once", plan: "hedge", r: result{n: 1, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, reason: retrytrace.WaitHedgeDelay}},
		{name: "a pushback holds the next hedge back", plan: "hedge",
			r: result{n: 1, resp: answer(503), serverDelay: serverDelay{Kind: delayPushback, Wait: 300 * time.Millisecond}}, out: outRetryStatus,
			want: step{kind: stepNext, attempt: 2, wait: 300 * time.Millisecond, reason: retrytrace.WaitPushback}},
		{name: "a dial window holds the next hedge back for ready", plan: "hedge", ready: true, used: true,
			r: result{n: 1, err: dialWindow}, out: outNeverSent,
			want: step{kind: stepNext, attempt: 2, wait: 3 * time.Second, reason: retrytrace.WaitDialBackoff}},
		{name: "every hedge sent: no more", plan: "hedge", sent: 3, r: result{n: 2, resp: answer(503)}, out: outRetryStatus,
			want: step{kind: stepNoMore, attempt: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := decisionFacts(t, now, tt)
			got := decide(&f, 0)
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
		f := decisionFacts(t, time.Now(), decision{plan: "retry", r: r, out: outRetryStatus})
		got := decide(&f, tc.rnd)
		assert.Equal(t, tc.want, got.wait, "rnd %v", tc.rnd)
	}
}

// TestGate reads whether an attempt may go from the facts before it, with
// no HTTP: a hold holds it back (its release point drawn by rnd) or
// refuses it, the budgets and the body gate a further attempt, and a
// hedge budget is earned by first attempts and spent by hedges.
func TestGate(t *testing.T) {
	now := time.Now()
	held := hold{Hold: holdlist.Hold{Rule: "r", Until: now.Add(9 * time.Second), Status: 429}, since: now.Add(-time.Second)}
	open := hostFacts{budget: true}
	wake := make(chan struct{})
	capped := hold{Hold: holdlist.Hold{Rule: "r", Until: now.Add(-time.Second), Status: 503, Capped: true}, since: now.Add(-time.Minute)}
	probing := capped
	probing.wake, probing.lapse = wake, now.Add(time.Minute)
	lapsing := probing // taken under a longer maxServerDelay
	lapsing.lapse = now.Add(2 * time.Minute)
	long := hold{Hold: holdlist.Hold{Until: now.Add(2 * time.Minute), Status: 503}}
	tests := []struct {
		name     string
		n        int
		again    bool // the resend of attempt n
		host     hostFacts
		deadline time.Duration // 0: none
		noBody   bool          // the body can no longer be replayed
		probing  bool          // attempt n is the capped hold's probe, out already
		want     step
	}{
		{name: "a first attempt goes", n: 1, host: open, want: step{kind: stepSend, attempt: 1}},
		{name: "a first attempt goes whatever the budgets", n: 1, host: hostFacts{fleetSpent: true},
			want: step{kind: stepSend, attempt: 1}},
		{name: "a retry goes", n: 2, host: open, want: step{kind: stepSend, attempt: 2}},
		{name: "a spent budget refuses a retry", n: 2, host: hostFacts{},
			want: step{kind: stepNoMore, attempt: 2, refusal: retrytrace.RefusedBudget}},
		{name: "a spent fleet refuses a retry", n: 2, host: hostFacts{budget: true, fleetSpent: true},
			want: step{kind: stepNoMore, attempt: 2, refusal: retrytrace.RefusedFleet}},
		{name: "a body not replayable refuses a retry", n: 2, host: open, noBody: true,
			want: step{kind: stepNoMore, attempt: 2, refusal: retrytrace.RefusedBuffer}},
		{name: "a hold holds a first attempt back to its release point", n: 1, host: hostFacts{hold: held, holding: holdHeld},
			want: step{kind: stepWait, attempt: 1, wait: 9*time.Second + 500*time.Millisecond, reason: retrytrace.WaitHold}},
		{name: "a hold past the deadline refuses", n: 1, host: hostFacts{hold: held, holding: holdHeld}, deadline: 9 * time.Second,
			want: step{kind: stepNoMore, attempt: 1, refusal: retrytrace.RefusedHeld, hold: held, wait: 9 * time.Second}},
		{name: "a hold over maxServerDelay refuses", n: 2, deadline: time.Hour,
			host: hostFacts{hold: long, holding: holdHeld, budget: true},
			want: step{kind: stepNoMore, attempt: 2, refusal: retrytrace.RefusedHeld, hold: long, wait: 2 * time.Minute}},
		{name: "a capped first attempt earns", n: 1, host: hostFacts{capped: true},
			want: step{kind: stepSend, attempt: 1, hedges: hedgeEarn}},
		{name: "a capped hedge spends", n: 2, host: hostFacts{budget: true, capped: true, hedgeLeft: true},
			want: step{kind: stepSend, attempt: 2, hedges: hedgeSpend}},
		{name: "an empty hedge budget refuses a hedge", n: 3, host: hostFacts{budget: true, capped: true},
			want: step{kind: stepNoMore, attempt: 3, refusal: retrytrace.RefusedHedgeBudget}},
		{name: "a spent budget refuses before the hedge budget", n: 2, host: hostFacts{capped: true, hedgeLeft: true},
			want: step{kind: stepNoMore, attempt: 2, refusal: retrytrace.RefusedBudget}},
		{name: "a hold that ends before the deadline is waited out, within it", n: 1, deadline: 9*time.Second + 100*time.Millisecond,
			host: hostFacts{hold: held, holding: holdHeld},
			want: step{kind: stepWait, attempt: 1, wait: 9*time.Second + 50*time.Millisecond - 1, reason: retrytrace.WaitHold}},
		{name: "a resend waits out a hold", n: 1, again: true, host: hostFacts{hold: held, holding: holdHeld},
			want: step{kind: stepWait, attempt: 1, wait: 9*time.Second + 500*time.Millisecond, reason: retrytrace.WaitHold}},
		{name: "a resend is not gated by the budgets", n: 2, again: true, host: hostFacts{},
			want: step{kind: stepSend, attempt: 2}},
		{name: "after a capped hold, one goes first", n: 1, host: hostFacts{hold: capped, holding: holdProbe},
			want: step{kind: stepSend, attempt: 1, probe: true, hold: capped}},
		{name: "the others wait for its answer", n: 1, host: hostFacts{hold: probing, holding: holdProbing},
			want: step{kind: stepWait, attempt: 1, wait: time.Minute, reason: retrytrace.WaitHold, wake: wake}},
		{name: "one that cannot wait for its answer within its deadline is refused", n: 1, deadline: time.Minute,
			host: hostFacts{hold: probing, holding: holdProbing},
			want: step{kind: stepNoMore, attempt: 1, refusal: retrytrace.RefusedHeld, hold: probing, wait: time.Minute}},
		{name: "one that cannot wait for its answer within maxServerDelay is refused", n: 2, deadline: time.Hour,
			host: hostFacts{hold: lapsing, holding: holdProbing, budget: true},
			want: step{kind: stepNoMore, attempt: 2, refusal: retrytrace.RefusedHeld, hold: lapsing, wait: 2 * time.Minute}},
		{name: "the probe's own resend goes on", n: 1, again: true, probing: true, host: hostFacts{hold: probing, holding: holdProbing},
			want: step{kind: stepSend, attempt: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := facts{now: now, replayable: !tt.noBody, maxServerDelay: time.Minute, host: tt.host, probing: tt.probing}
			if tt.deadline > 0 {
				f.deadline = now.Add(tt.deadline)
			}
			assert.Equal(t, tt.want, gate(&f, tt.n, tt.again, 0.5))
		})
	}
}
