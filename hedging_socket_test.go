package retryhttp_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// These tests cross a real loopback socket, where what the server sees is
// the proof: cancellations, request bodies. They wait on channels and on
// the kit Server only; waitFor's bound turns a hang into a failure and is
// never reached when the code is right, however slow the machine.

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting until %s", what)
	}
}

// randomBytes returns n bytes from a seeded generator.
func randomBytes(n int) []byte {
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// socketTransport hedges every request through a plain net/http
// transport, whose idle connections the test closes at its end.
func socketTransport(t *testing.T, maxAttempts int, hooks *retrytrace.Hooks) *retryhttp.Transport {
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	return &retryhttp.Transport{Base: base, Policy: hedgeConfig(maxAttempts, 0, 503), Hooks: hooks}
}

func TestHedgeWinsAndTheServerSeesTheLoserCancelled(t *testing.T) {
	want := randomBytes(256 << 10)
	firstArrived, loserDone := make(chan struct{}), make(chan struct{})
	srv := &rt.Server{Choose: func(_ int, r *http.Request) rt.Step {
		if r.Header.Get(retryhttp.AttemptsHeader) == "" {
			context.AfterFunc(r.Context(), func() { close(loserDone) })
			close(firstArrived)
			return rt.Step{Fault: rt.Hang} // only the client going away ends it
		}
		<-firstArrived // so that attempt 1 is surely the one left behind
		return rt.Step{Body: string(want)}
	}}
	ts := srv.Start(t)
	tr := socketTransport(t, 2, nil)

	req, err := http.NewRequestWithContext(t.Context(), "GET", ts.URL, nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	waitFor(t, loserDone, "the server sees the loser cancelled")
	assert.Equal(t, "1", resp.Header.Get(retryhttp.AttemptsHeader), "the hedge won")
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "the winner's body outlives RoundTrip")
	require.NoError(t, resp.Body.Close())
	assert.True(t, bytes.Equal(want, got), "the winner's body arrives intact (%d of %d bytes)", len(got), len(want))
	st := tr.Stats().Total
	assertHedges(t, st, 1, 1, 1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // reached only on failure
	defer cancel()
	require.NoError(t, srv.Wait(ctx), "the server finishes with both attempts")
	for _, a := range srv.Attempts() {
		loser := a.Header.Get(retryhttp.AttemptsHeader) == ""
		assert.Equal(t, loser, a.Cancelled, "attempt %d: cancelled", a.N)
	}
}

func TestConcurrentHedgesSendTheSameBody(t *testing.T) {
	body := randomBytes(300 << 10)
	for _, tc := range []struct {
		name string
		body func() io.Reader
	}{
		// Without GetBody the hedges share one buffer, read at their own
		// pace; HalfReader keeps each read short, so that they interleave.
		{"streamed", func() io.Reader { return iotest.HalfReader(bytes.NewReader(body)) }},
		{"GetBody", func() io.Reader { return bytes.NewReader(body) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu      sync.Mutex
				arrived int
				all     = make(chan struct{}) // closed once 3 are in flight
				handled = make(chan struct{}, 2)
			)
			// The server reads each body whole before it chooses.
			srv := &rt.Server{Choose: func(_ int, r *http.Request) rt.Step {
				mu.Lock()
				if arrived++; arrived == 3 {
					close(all)
				}
				mu.Unlock()
				<-all
				if r.Header.Get(retryhttp.AttemptsHeader) != "2" {
					return rt.Step{Status: http.StatusServiceUnavailable}
				}
				// Answer last, once both 503s are taken in, so that
				// the counts below do not hang on a race.
				<-handled
				<-handled
				return rt.Step{Body: "ok"}
			}}
			ts := srv.Start(t)
			hooks := &retrytrace.Hooks{AttemptDone: func(d retrytrace.AttemptDoneInfo) {
				if d.Outcome == retrytrace.OutcomeRetryable {
					handled <- struct{}{}
				}
			}}
			tr := socketTransport(t, 3, hooks)
			req, err := http.NewRequestWithContext(t.Context(), "PUT", ts.URL, tc.body())
			require.NoError(t, err)
			require.Equal(t, tc.name == "GetBody", req.GetBody != nil)

			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			assert.Equal(t, "ok", readAll(t, resp))
			want := sha256.Sum256(body)
			digests := map[string][sha256.Size]byte{}
			for _, a := range srv.Attempts() {
				assert.NoError(t, a.BodyErr, "attempt %d", a.N)
				digests[a.Header.Get(retryhttp.AttemptsHeader)] = a.BodySHA256
			}
			assert.Equal(t, map[string][sha256.Size]byte{"": want, "1": want, "2": want}, digests)
			st := tr.Stats().Total
			assertHedges(t, st, 2, 1, 0)
			assert.Equal(t, uint64(1), st.ExtraAttemptsFailed)
		})
	}
}

func TestBodyOutgrowingItsBufferLeavesOneAttempt(t *testing.T) {
	const limit = 8 << 10
	body := randomBytes(64 << 10)
	srv := script(rt.Step{Body: "ok"})
	ts := srv.Start(t)

	// The body comes through a pipe that the test fills only once every
	// attempt has started, so that all three are in flight on it.
	started := make(chan struct{}, 3)
	hooks := &retrytrace.Hooks{AttemptStart: func(retrytrace.AttemptStartInfo) { started <- struct{}{} }}
	tr := socketTransport(t, 3, hooks)
	tr.Buffer = retryhttp.BufferLimits{PerRequest: limit}
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(t.Context(), "PUT", ts.URL, pr)
	require.NoError(t, err)
	go func() {
		for range 3 {
			<-started
		}
		for chunk := range slices.Chunk(body, 4<<10) {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		pw.Close()
	}()

	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, "ok", readAll(t, resp))
	ts.Close() // waits for every handler: the records are final
	full, sum := 0, sha256.Sum256(body)
	for _, a := range srv.Attempts() {
		if a.BodyErr == nil && a.BodySize == int64(len(body)) && a.BodySHA256 == sum {
			full++ // the others' senders were cut off mid-body
		}
	}
	assert.Equal(t, 1, full, "exactly one attempt sends the whole body")
	st := tr.Stats()
	assert.Equal(t, uint64(2), st.Total.Hedges)
	assert.Equal(t, uint64(2), st.Total.HedgesCancelled, "the attempts left behind the buffer are cut off")
	won := uint64(0)
	if resp.Header.Get(retryhttp.AttemptsHeader) != "" {
		won = 1 // the attempt that kept the lead was a hedge
	}
	assert.Equal(t, won, st.Total.HedgesWon)
	assert.Equal(t, uint64(1), st.Total.CommittedForSize)
	assert.Equal(t, int64(0), st.Buffer.Buffered, "the buffer's room is back")
}
