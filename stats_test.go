package retryhttp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
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

func TestStatsCountAScriptedSequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A retry policy makes at most policy.MaxRetryAttempts, 10:
		// nine retries, the last of which succeeds.
		steps := make([]rt.Step, 10)
		for i := range 9 {
			steps[i].Status = 503
		}
		cfg := retryConfig(policy.MaxRetryAttempts, 503)
		withWaits(cfg, 100*time.Millisecond, 100*time.Millisecond)
		tr, s := newScripted(cfg, steps...)
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		require.Equal(t, 10, s.Count())

		want := retryhttp.Counters{
			Requests:            1,
			ExtraAttempts:       9,
			ExtraAttemptsFailed: 8,
			// Retries 1-4 one each, 5-9 in ">= 5"; a retry policy
			// reaches no further (TestHistogramBucket has the rest).
			Histogram: [8]uint64{1, 1, 1, 1, 5, 0, 0, 0},
		}
		st := tr.Stats()
		assert.Equal(t, want, st.Total)
		assert.Equal(t, want, st.Rules["*"])
		assert.Equal(t, want, st.Hosts["api.test"].Counters)
		assert.Equal(t, retryhttp.Counters{}, st.Rules["(none)"])
	})
}

func TestStatsCountTransparentRetriesApart(t *testing.T) {
	tr, _ := newCalls(retryConfig(3, 503), refuse, script(rt.Step{}).RoundTrip)
	resp, err := tr.RoundTrip(newRequest(t, t.Context(), "POST", "x"))
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, retryhttp.Counters{Requests: 1, TransparentRetries: 1}, tr.Stats().Total)
}

func TestStatsPerRule(t *testing.T) {
	cfg := retryConfig(3, 503)
	cfg.Rules[0].Name[0].Method = "PUT"
	tr, _ := newScripted(cfg, rt.Step{})
	for _, m := range []string{"GET", "PUT", "GET"} {
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), m, ""))
		require.NoError(t, err)
		readAll(t, resp)
	}
	st := tr.Stats()
	assert.Equal(t, uint64(1), st.Rules["PUT"].Requests)
	assert.Equal(t, uint64(2), st.Rules["(none)"].Requests)
	assert.Equal(t, uint64(3), st.Total.Requests)
	assert.Equal(t, uint64(3), st.Hosts["api.test"].Requests)
}

// Each rule has a key of its own in Stats.Rules, so that none hides
// another's counters: a rule whose patterns repeat an earlier rule's is
// known by its position too, and that name must not be one that another
// rule's patterns spell already.
func TestStatsRulesKeysAreUnique(t *testing.T) {
	rule := func(path string) policy.Rule { return policy.Rule{Name: []policy.Name{{Path: path}}} }
	cfg := &policy.Config{Rules: []policy.Rule{rule("/a"), rule("/a (#2)"), rule("/a"), rule("/a")}}
	tr, _ := newScripted(cfg, rt.Step{})
	for _, path := range []string{"/a", "/a%20(%232)", "/a%20(%232)"} {
		req, err := http.NewRequestWithContext(t.Context(), "GET", "https://api.test"+path, nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
	}
	st := tr.Stats()
	assert.Len(t, st.Rules, 5, "got %v, want four rules and (none)", st.Rules)
	assert.Equal(t, uint64(1), st.Rules["/a"].Requests)
	assert.Equal(t, uint64(2), st.Rules["/a (#2)"].Requests, "got %v", st.Rules)
	assert.Contains(t, st.Rules, "/a (#3)", "the fourth rule is known by its position")
}

func TestHooksSeeEachStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &hookLog{}
		tr, _ := newScripted(retryConfig(3, 503), rt.Step{Status: 503}, rt.Step{})
		tr.Hooks = rec.hooks("T")
		ctx := retrytrace.WithHooks(t.Context(), rec.hooks("R"))
		resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, []string{
			"T start 1 hedge=false", "R start 1 hedge=false",
			"T done 1 retryable 503 err=<nil>", "R done 1 retryable 503 err=<nil>",
			"T wait 2 backoff 100ms", "R wait 2 backoff 100ms",
			"T start 2 hedge=false", "R start 2 hedge=false",
			"T done 2 success 200 err=<nil>", "R done 2 success 200 err=<nil>",
			"T end 2 200 err=<nil>", "R end 2 200 err=<nil>",
		}, rec.lines())
	})
}

func TestHooksSeeADeadlineRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &hookLog{}
		tr, _ := newScripted(retryConfig(3, 503), rt.Step{Status: 503})
		ctx, cancel := context.WithTimeout(retrytrace.WithHooks(t.Context(), rec.hooks("R")), 50*time.Millisecond)
		defer cancel()
		resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, []string{
			"R start 1 hedge=false",
			"R done 1 retryable 503 err=<nil>",
			"R refused 2 deadline",
			"R end 1 503 err=<nil>",
		}, rec.lines())
	})
}

// A body that passes its limit only after RoundTrip has returned, while
// the attempt whose response came back early still sends it, counts as
// committed for size on its rule and host as well as in the buffer.
func TestLateCommitForSizeIsCounted(t *testing.T) {
	readRest := make(chan struct{})
	sent := make(chan error, 1)
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		head := make([]byte, 10)
		if _, err := io.ReadFull(req.Body, head); err != nil {
			return nil, err
		}
		go func() { // the rest of the upload goes on after the answer
			<-readRest
			_, err := io.Copy(io.Discard, req.Body)
			req.Body.Close()
			sent <- err
		}()
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
	})
	tr := &retryhttp.Transport{Base: base, Policy: retryConfig(3, 503), Buffer: retryhttp.BufferLimits{PerRequest: 1 << 10}}
	req, err := http.NewRequestWithContext(t.Context(), "POST", "https://api.test/upload",
		io.NopCloser(strings.NewReader(strings.Repeat("x", 4<<10))))
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Zero(t, tr.Stats().Total.CommittedForSize, "not past the limit yet")

	close(readRest)
	require.NoError(t, <-sent)
	st := tr.Stats()
	assert.Equal(t, uint64(1), st.Buffer.CommittedForSize)
	assert.Equal(t, uint64(1), st.Total.CommittedForSize)
	assert.Equal(t, uint64(1), st.Hosts["api.test"].CommittedForSize)
}
