package retryhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
	"github.com/retryhttp/retryhttp/status"
)

// The whole public surface of one Transport at once, as a busy service
// uses it: callers under retry and hedging rules, with and without
// bodies, steering each call and giving up at any point, while the
// policy is swapped, hosts are reset, and the statistics, the status page
// and the log hooks are read. Nothing may race, panic, leak a goroutine,
// lose or double a Close, or let the counters disagree.

const (
	chaosHosts    = 4
	chaosPerBody  = 2 << 10 // the per-request buffer limit
	chaosRequests = 300
)

// tallyBody is a response body of the base that counts its Close calls.
type tallyBody struct {
	io.ReadCloser
	closes atomic.Int32
}

func (b *tallyBody) Close() error {
	b.closes.Add(1)
	return b.ReadCloser.Close()
}

// countingBase keeps every response body its base hands out, to check
// that each is closed exactly once: by the Transport when it discards the
// response, through the caller's Close when it hands it back.
type countingBase struct {
	base   http.RoundTripper
	mu     sync.Mutex // guards bodies: attempts end concurrently
	bodies []*tallyBody
	calls  atomic.Int64
}

func (b *countingBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if b.calls.Add(1)%23 == 0 {
		return refuse(req) // a dial refused: resent transparently
	}
	resp, err := b.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	cb := &tallyBody{ReadCloser: resp.Body}
	resp.Body = cb
	b.mu.Lock()
	b.bodies = append(b.bodies, cb)
	b.mu.Unlock()
	return resp, nil
}

// chaosStep answers attempt n with one of the troubles a busy service
// meets, in proportions that leave most requests answered.
func chaosStep(n int, _ *http.Request) rt.Step {
	hdr := func(k, v string) http.Header { return http.Header{k: {v}} }
	ms := time.Millisecond
	switch k := (n * 7919) % 100; {
	case k < 35:
		return rt.Step{Body: "ok", Delay: time.Duration(k) * ms}
	case k < 42:
		return rt.Step{Status: 429, Header: hdr("Retry-After", "1")}
	case k < 49:
		return rt.Step{Status: 503, Header: hdr("X-Retry-Pushback-Ms", "50")}
	case k < 53:
		return rt.Step{Body: "spent", Header: hdr("RateLimit", `"default";r=0;t=1`)}
	case k < 57:
		h := hdr("RateLimit", `"default";r=3;t=2`)
		h.Set("RateLimit-Policy", `"default";q=20;w=1`)
		return rt.Step{Body: "quota", Header: h}
	case k < 65:
		return rt.Step{Body: "slow", Delay: time.Duration(300+10*k) * ms}
	case k < 71:
		return rt.Step{Fault: rt.Reset}
	case k < 75:
		return rt.Step{Fault: rt.Hang}
	case k < 80:
		return rt.Step{Body: "cut short here", Fault: rt.ResetMidBody, After: 4}
	case k < 84:
		return rt.Step{Body: "trickled", Trickle: rt.Rate{Bytes: 2, Every: 20 * ms}}
	case k < 90:
		return rt.Step{Status: 503}
	case k < 95:
		return rt.Step{Status: 500, Body: "throttle"}
	}
	return rt.Step{Status: 502, Delay: 40 * ms}
}

// chaosClassify reads a body to decide, as an SDK's classifier does.
func chaosClassify(_ int, resp *http.Response, _ error) retryhttp.Verdict {
	if resp == nil || resp.StatusCode != 500 {
		return retryhttp.UsePolicy
	}
	if b, _ := retryhttp.PeekBody(resp, 16); string(b) == "throttle" {
		return retryhttp.Throttled
	}
	return retryhttp.UsePolicy
}

var (
	chaosRetry = policy.Rule{Name: []policy.Name{{}}, Retry: &policy.Retry{MaxAttempts: 4,
		RetryableStatusCodes: []int{429, 502, 503}, PerAttemptTimeout: 500 * time.Millisecond,
		Backoff: policy.Exponential{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, Multiplier: 2}}}
	chaosHedge = policy.Rule{Name: []policy.Name{{}}, Hedge: &policy.Hedge{MaxAttempts: 3,
		HedgingDelay: 60 * time.Millisecond, NonFatalStatusCodes: []int{502, 503, 504}}}
	chaosBadRule = policy.Rule{Retry: &policy.Retry{MaxAttempts: 1}}
)

// chaosPolicies are the configs SetPolicy swaps between.
func chaosPolicies() []*policy.Config {
	hedgeGET := chaosHedge
	hedgeGET.Name = []policy.Name{{Method: "GET"}}
	return []*policy.Config{
		policy.Default(),
		policy.None(),
		{Rules: []policy.Rule{hedgeGET, chaosRetry}},
		{Rules: []policy.Rule{chaosRetry}, Pace: &policy.Pace{},
			Admission: &policy.Admission{MaxConcurrency: 4, MaxWait: 100 * time.Millisecond}},
	}
}

// chaosRun is one run's shared state.
type chaosRun struct {
	t       *testing.T
	tr      *retryhttp.Transport
	hosts   []string   // URL hosts the callers send to, and ResetBackoff names
	scheme  string     // of the callers' URLs
	mu      sync.Mutex // guards callers
	callers []*callerBody
	calls   atomic.Int64 // RoundTrip calls made
	invalid atomic.Int64 // calls refused for an invalid per-call rule
	ok, bad atomic.Int64 // responses and errors handed back
}

func (c *chaosRun) keep(cb *callerBody) {
	c.mu.Lock()
	c.callers = append(c.callers, cb)
	c.mu.Unlock()
}

// request builds caller i's request: a GET, a POST whose body has
// GetBody, one without, or one larger than the per-request buffer.
func (c *chaosRun) request(ctx context.Context, i int, rng *rand.Rand) *http.Request {
	url := c.scheme + "://" + c.hosts[i%len(c.hosts)] + "/" + []string{"a", "b"}[rng.IntN(2)]
	size := 100 + rng.IntN(chaosPerBody-100)
	kind := max(0, rng.IntN(6)-2) // half GETs
	if kind == 3 {
		size = chaosPerBody * 3
	}
	data := bodyBytes(size, uint64(i))
	var req *http.Request
	var err error
	switch kind {
	case 0:
		req, err = http.NewRequestWithContext(ctx, "GET", url, nil)
	case 1:
		req, err = http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(data))
		if err == nil {
			cb := &callerBody{r: req.Body, c: req.Body}
			req.Body = cb
			c.keep(cb)
		}
	default:
		req, err = http.NewRequestWithContext(ctx, "POST", url, nil)
		if err == nil {
			cb := &callerBody{r: bytes.NewReader(data)}
			req.Body, req.ContentLength = cb, int64(len(data))
			if rng.IntN(2) == 0 {
				req.ContentLength = -1
			}
			c.keep(cb)
		}
	}
	require.NoError(c.t, err)
	if rng.IntN(2) == 0 {
		req.Header.Set("Idempotency-Key", strconv.Itoa(i))
	}
	return req
}

// steer applies a per-call choice to ctx: a rule of its own, no retries,
// waiting for ready, an invalid rule, or nothing.
func steer(ctx context.Context, rng *rand.Rand) context.Context {
	switch rng.IntN(8) {
	case 0:
		return retryhttp.WithPolicy(ctx, &chaosRetry)
	case 1:
		return retryhttp.WithPolicy(ctx, &chaosHedge)
	case 2:
		return retryhttp.WithoutRetries(ctx)
	case 3:
		return retryhttp.WithWaitForReady(ctx)
	case 4:
		return retryhttp.WithoutRetries(retryhttp.WithPolicy(ctx, &chaosHedge))
	case 5:
		if rng.IntN(4) == 0 {
			return retryhttp.WithPolicy(ctx, &chaosBadRule)
		}
	}
	return ctx
}

// call is caller i: it sends one request and gives up at a random point:
// before sending, while waiting, once the headers came, or mid-body.
func (c *chaosRun) call(i int, rng *rand.Rand) {
	ctx, cancel := context.WithTimeout(steer(c.t.Context(), rng), time.Duration(200+rng.IntN(2000))*time.Millisecond)
	defer cancel()
	point := rng.IntN(5)
	switch point {
	case 0:
		cancel()
	case 1:
		defer time.AfterFunc(time.Duration(rng.IntN(1500))*time.Millisecond, cancel).Stop()
	}
	req := c.request(ctx, i, rng)
	c.calls.Add(1)
	resp, err := c.tr.RoundTrip(req)
	if err != nil {
		assert.Nil(c.t, resp, "a response with an error")
		if errors.Is(err, policy.ErrInvalid) {
			c.invalid.Add(1)
			return
		}
		var e *retryhttp.Error
		assert.True(c.t, errors.As(err, &e), "got %T %v, want a *retryhttp.Error", err, err)
		c.bad.Add(1)
		return
	}
	c.ok.Add(1)
	if !assert.NotNil(c.t, resp) || !assert.Same(c.t, req, resp.Request) {
		return
	}
	switch point {
	case 3:
		cancel()
	case 4:
		var b [3]byte
		_, _ = io.ReadFull(resp.Body, b[:])
		cancel()
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	assert.NoError(c.t, resp.Body.Close())
}

// disturbing starts three goroutines that disturb the Transport, their
// randomness drawn from seed, and returns the function that stops them
// and waits for them.
func (c *chaosRun) disturbing(seed uint64) (stop func()) {
	done := make(chan struct{})
	var others sync.WaitGroup
	for g := range 3 {
		rng := rand.New(rand.NewPCG(seed, uint64(1000+g)))
		others.Go(func() { c.disturb(done, rng) })
	}
	return func() {
		close(done)
		others.Wait()
	}
}

// disturb does what a service's other goroutines do to the Transport
// until done closes: swap its policy, reset hosts, read its statistics
// and its status page, close idle connections.
func (c *chaosRun) disturb(done <-chan struct{}, rng *rand.Rand) {
	cfgs := chaosPolicies()
	page := status.Handler(c.tr)
	for n := 0; ; n++ {
		select {
		case <-done:
			return
		case <-time.After(time.Duration(1+rng.IntN(40)) * time.Millisecond):
		}
		switch n % 5 {
		case 0:
			assert.NoError(c.t, c.tr.SetPolicy(cfgs[rng.IntN(len(cfgs))]))
		case 1:
			host := "" // every host
			if rng.IntN(3) > 0 {
				host = strings.ToUpper(c.hosts[rng.IntN(len(c.hosts))])
			}
			c.tr.ResetBackoff(host)
		case 2:
			_ = c.tr.Stats()
		case 3:
			c.tr.CloseIdleConnections()
		case 4:
			c.readPage(page, rng.IntN(2) == 0)
		}
	}
}

func (c *chaosRun) readPage(page http.Handler, asJSON bool) {
	target := "/debug/retryhttp"
	if asJSON {
		target += "?format=json"
	}
	w := httptest.NewRecorder()
	page.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
	assert.Equal(c.t, http.StatusOK, w.Code)
	if asJSON {
		var v map[string]any
		assert.NoError(c.t, json.Unmarshal(w.Body.Bytes(), &v), "status page JSON")
	}
}

// chaosTransport is the Transport under test: every public field set.
func chaosTransport(base http.RoundTripper) *retryhttp.Transport {
	logger := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return &retryhttp.Transport{
		Base:     base,
		Policy:   policy.Default(),
		Hooks:    retrytrace.LogHooks(logger),
		Buffer:   retryhttp.BufferLimits{PerRequest: chaosPerBody, Total: 16 * chaosPerBody},
		Classify: chaosClassify,
		Prepare:  func(int, *http.Request) error { return nil },
	}
}

func TestChaosOneTransportUnderLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &countingBase{base: &rt.Server{Choose: chaosStep}}
		c := &chaosRun{t: t, tr: chaosTransport(base), scheme: "https"}
		for h := range chaosHosts {
			c.hosts = append(c.hosts, "h"+strconv.Itoa(h)+".test")
		}
		seed := rand.Uint64()
		t.Logf("seed %d", seed)

		stop := c.disturbing(seed)
		var callers sync.WaitGroup
		for i := range chaosRequests {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			callers.Go(func() {
				time.Sleep(time.Duration(rng.IntN(3000)) * time.Millisecond)
				c.call(i, rng)
			})
		}
		callers.Wait()
		stop()
		// Discarded answers are drained within 100 ms; let them end.
		time.Sleep(time.Second)
		synctest.Wait()
		c.check(base)
	})
}

// check asserts what must hold once every caller has returned.
func (c *chaosRun) check(base *countingBase) {
	t := c.t
	t.Logf("%d calls: %d answered, %d failed, %d invalid; base sent %d attempts",
		c.calls.Load(), c.ok.Load(), c.bad.Load(), c.invalid.Load(), base.calls.Load())
	for i, cb := range c.callers {
		assert.Equal(t, int32(1), cb.closes.Load(), "caller body %d: closes", i)
	}
	for i, b := range base.bodies {
		assert.Equal(t, int32(1), b.closes.Load(), "response body %d: closes", i)
	}
	st := c.tr.Stats()
	t.Logf("total %+v", st.Total)
	// A call refused for its invalid rule never became a request.
	assert.Equal(t, uint64(c.calls.Load()-c.invalid.Load()), st.Total.Requests, "Requests counts RoundTrip calls")
	checkCounters(t, "total", st.Total)
	var requests uint64
	for h, hs := range st.Hosts {
		requests += hs.Requests
		checkCounters(t, "host "+h, hs.Counters)
		assert.Zero(t, hs.InFlight, "host %s: attempts left in flight", h)
	}
	assert.Equal(t, st.Total.Requests, requests, "the hosts' requests add up to the total")
	for r, rc := range st.Rules {
		checkCounters(t, "rule "+r, rc)
	}
	assert.Zero(t, st.Buffer.Buffered, "buffer room kept")
	assert.LessOrEqual(t, base.calls.Load(), int64(st.Total.Requests+st.Total.ExtraAttempts+st.Total.TransparentRetries),
		"the base sent more attempts than were counted")
}

func checkCounters(t *testing.T, name string, c retryhttp.Counters) {
	t.Helper()
	var sum uint64
	for _, n := range c.Histogram {
		sum += n
	}
	assert.Equal(t, c.ExtraAttempts, sum, "%s: ExtraAttempts is the sum of the Histogram %v", name, c.Histogram)
	assert.LessOrEqual(t, c.ExtraAttemptsFailed, c.ExtraAttempts, "%s: failed extra attempts", name)
	assert.LessOrEqual(t, c.Hedges, c.ExtraAttempts, "%s: hedges", name)
	assert.LessOrEqual(t, c.HedgesWon, c.Hedges, "%s: hedges won", name)
}
