package retryhttp_test

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// Request bodies through the public API, over real loopback sockets, so
// that net/http itself reads, frames and closes every attempt's body.

// testPerRequest is a small per-request limit, so that bodies around it
// stay cheap.
const testPerRequest = 64 << 10

// bodySizes are 0, 1, and the sizes on either side of each boundary a
// body of unknown length crosses in its buffer: chunks of 4 KiB, 8 KiB,
// 16 KiB... start at 4 KiB*(2^k-1), and the per-request limit.
func bodySizes() []int {
	sizes := []int{0, 1}
	for _, edge := range []int{4 << 10, 12 << 10, 28 << 10, 60 << 10, testPerRequest} {
		sizes = append(sizes, edge-1, edge, edge+1)
	}
	return sizes
}

// bodyBytes returns n bytes that differ from one offset to the next and
// from one seed to the next, so that a byte sent at the wrong offset, or
// from another request, shows in the digest.
func bodyBytes(n int, seed uint64) []byte {
	p := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(n), byte(n >> 8), byte(n >> 16)}).Read(p)
	return p
}

// bodyPolicy retries every request on 503, POST included, with waits of a
// microsecond: these tests are about bytes, not time.
func bodyPolicy(maxAttempts int) *policy.Config {
	cfg := retryConfig(maxAttempts, 503)
	withWaits(cfg, time.Microsecond, time.Microsecond)
	return cfg
}

func TestBodyReplayIsByteExact(t *testing.T) {
	t.Parallel()
	for _, k := range bodyKinds {
		for _, size := range bodySizes() {
			t.Run(fmt.Sprintf("%s/%d", k.name, size), func(t *testing.T) {
				t.Parallel()
				t.Run("503 twice", func(t *testing.T) { testReplay(t, k, size, false) })
				t.Run("reset mid-body", func(t *testing.T) { testReplay(t, k, size, true) })
			})
		}
	}
}

// testReplay sends a POST with an Idempotency-Key whose first attempts
// fail: two 503s, or a connection reset after half the body and then a
// 503. A body that can be kept is sent whole by every attempt; one that
// cannot is sent once.
func testReplay(t *testing.T, k bodyKind, size int, reset bool) {
	data := bodyBytes(size, 1)
	var s *uploadServer
	if reset {
		s = cuttingServer(t, 1, int64(size/2), rt.Step{Status: 503}, rt.Step{})
	} else {
		s = newUploadServer(t, rt.Step{Status: 503}, rt.Step{Status: 503}, rt.Step{})
	}
	tr := &retryhttp.Transport{Base: freshBase(t), Policy: bodyPolicy(3),
		Buffer: retryhttp.BufferLimits{PerRequest: testPerRequest}}
	req, cb := k.request(t, s.url, data)
	req.Header.Set("Idempotency-Key", "k-1")

	resp, err := tr.RoundTrip(req)
	replayed := k.getBody || size <= testPerRequest
	st := tr.Stats()
	switch {
	case replayed:
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "2", resp.Header.Get(retryhttp.AttemptsHeader))
		assert.Equal(t, int32(3), s.hits.Load(), "attempts")
		if reset {
			checkUploads(t, s, k, data, 1, 2)
		} else {
			checkUploads(t, s, k, data, 0, 3)
		}
	case reset && err == nil && !k.known:
		// The reset came before the first attempt had read past the
		// limit: the second read the rest, outgrew its buffer as it
		// did, and was the one sent whole.
		readAll(t, resp)
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, "1", resp.Header.Get(retryhttp.AttemptsHeader))
		assert.Equal(t, int32(2), s.hits.Load(), "attempts")
		checkUploads(t, s, k, data, 1, 1)
	case reset:
		// Cut under its only attempt: the error comes back.
		assert.Nil(t, resp)
		var rerr *retryhttp.Error
		require.ErrorAs(t, err, &rerr)
		assert.Equal(t, 1, rerr.Attempts)
		assert.Equal(t, int32(1), s.hits.Load(), "attempts")
	default:
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, 503, resp.StatusCode)
		assert.NotContains(t, resp.Header, retryhttp.AttemptsHeader)
		checkUploads(t, s, k, data, 0, 1)
	}
	assert.Equal(t, int32(1), cb.closes.Load(), "the caller's body is closed once")

	var committed uint64
	if !replayed {
		committed = 1
	}
	assert.Equal(t, committed, st.Buffer.CommittedForSize)
	assert.Equal(t, committed, st.Total.CommittedForSize)
	wantRoomBack(t, tr, "room held after the request ended")
	switch {
	case k.getBody:
		assert.Zero(t, st.Buffer.HighWater, "a GetBody body takes no room")
	case replayed && k.known:
		assert.Equal(t, int64(size), st.Buffer.HighWater, "a declared length takes its room in one piece")
	case replayed:
		assert.GreaterOrEqual(t, st.Buffer.HighWater, int64(size))
	}
	assert.LessOrEqual(t, st.Buffer.HighWater, int64(testPerRequest))
}

// POST without an idempotency key is replayed when the policy says so.
func TestBodyReplayForRetryNonIdempotent(t *testing.T) {
	t.Parallel()
	for _, k := range bodyKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			data := bodyBytes(testPerRequest, 2)
			s := newUploadServer(t, rt.Step{Status: 503}, rt.Step{Status: 201})
			cfg := bodyPolicy(2)
			cfg.Rules[0].Retry.RetryNonIdempotent = true
			tr := &retryhttp.Transport{Base: freshBase(t), Policy: cfg,
				Buffer: retryhttp.BufferLimits{PerRequest: testPerRequest}}
			req, cb := k.request(t, s.url, data)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			readAll(t, resp)
			assert.Equal(t, 201, resp.StatusCode)
			checkUploads(t, s, k, data, 0, 2)
			assert.Equal(t, int32(1), cb.closes.Load())
		})
	}
}

// A body over the per-request limit, declared so or growing past it, is
// sent once and whole; the 503 that answers it comes back as it is.
func TestBodyOverLimitIsSentOnce(t *testing.T) {
	t.Parallel()
	for _, k := range bodyKinds {
		if k.getBody {
			continue // replayed through GetBody whatever its size
		}
		for _, size := range []int{testPerRequest + 1, 1 << 20} {
			t.Run(fmt.Sprintf("%s/%d", k.name, size), func(t *testing.T) {
				t.Parallel()
				data := bodyBytes(size, 3)
				s := newUploadServer(t, rt.Step{Status: 503}, rt.Step{})
				tr := &retryhttp.Transport{Base: freshBase(t), Policy: bodyPolicy(3),
					Buffer: retryhttp.BufferLimits{PerRequest: testPerRequest}}
				req, cb := k.request(t, s.url, data)
				req.Header.Set("Idempotency-Key", "k-1")
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				readAll(t, resp)
				assert.Equal(t, 503, resp.StatusCode)
				assert.NotContains(t, resp.Header, retryhttp.AttemptsHeader)
				assert.Equal(t, int32(1), s.hits.Load(), "attempts")
				checkUploads(t, s, k, data, 0, 1)
				assert.Equal(t, int32(1), cb.closes.Load())

				st := tr.Stats()
				assert.Equal(t, uint64(1), st.Buffer.CommittedForSize)
				assert.Equal(t, uint64(1), st.Total.CommittedForSize)
				assert.Zero(t, st.Total.ExtraAttempts)
				wantRoomBack(t, tr)
				if k.known {
					assert.Zero(t, st.Buffer.HighWater, "a declared length over the limit takes no room")
				}
				assert.LessOrEqual(t, st.Buffer.HighWater, int64(testPerRequest))
			})
		}
	}
}

// errDiskRead stands for the caller's body failing.
var errDiskRead = errors.New("disk read failed")

// An error from the caller's body is the caller's, not the server's: it
// comes back at once, and the body is closed once.
func TestCallerBodyErrorComesBack(t *testing.T) {
	t.Parallel()
	for _, k := range bodyKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			data := bodyBytes(20<<10, 4)
			s := newUploadServer(t, rt.Step{Status: 503})
			tr, base := newCalls(bodyPolicy(3), freshBase(t).RoundTrip) // counts the attempts
			tr.Buffer = retryhttp.BufferLimits{PerRequest: testPerRequest}
			req, cb := k.request(t, s.url, data)
			req.Header.Set("Idempotency-Key", "k-1")
			// Half the body, then the failure; GetBody would still
			// give good copies.
			cb.r = io.MultiReader(io.LimitReader(cb.r, int64(len(data)/2)), iotest.ErrReader(errDiskRead))

			resp, err := tr.RoundTrip(req)
			assert.Nil(t, resp)
			require.ErrorIs(t, err, errDiskRead)
			var rerr *retryhttp.Error
			require.ErrorAs(t, err, &rerr)
			assert.Equal(t, 1, rerr.Attempts)
			assert.Equal(t, 1, base.count(), "attempts")
			assert.LessOrEqual(t, s.hits.Load(), int32(1), "attempts the server saw")
			assert.Equal(t, int32(1), cb.closes.Load(), "the caller's body is closed once")
			wantRoomBack(t, tr)
		})
	}
}

// The caller's body is closed exactly once however the request ends.
func TestCallerBodyClosedOnce(t *testing.T) {
	t.Parallel()
	ends := []struct {
		name     string
		cuts     int       // attempts cut after 1000 bytes of their body
		steps    []rt.Step // for the attempts after them
		status   int       // of the response; 0: an error
		attempts int       // of a body that can be replayed
	}{
		{"success", 0, []rt.Step{{}}, 200, 1},
		{"after retries", 0, []rt.Step{{Status: 503}, {Status: 503}, {}}, 200, 3},
		{"giving up on 503", 0, []rt.Step{{Status: 503}}, 503, 3},
		{"giving up on resets", 3, []rt.Step{{}}, 0, 3}, // every attempt the policy allows is cut
	}
	for _, end := range ends {
		for _, k := range bodyKinds {
			for _, size := range []int{10 << 10, testPerRequest + 1} {
				t.Run(fmt.Sprintf("%s/%s/%d", end.name, k.name, size), func(t *testing.T) {
					t.Parallel()
					s := cuttingServer(t, end.cuts, 1000, end.steps...)
					tr := &retryhttp.Transport{Base: freshBase(t), Policy: bodyPolicy(3),
						Buffer: retryhttp.BufferLimits{PerRequest: testPerRequest}}
					req, cb := k.request(t, s.url, bodyBytes(size, 5))
					req.Header.Set("Idempotency-Key", "k-1")
					resp, err := tr.RoundTrip(req)
					replayed := k.getBody || size <= testPerRequest
					switch {
					case end.status == 0:
						assert.Nil(t, resp)
						require.Error(t, err)
						assert.NotErrorIs(t, err, errReadAfterClose)
					case !replayed && len(end.steps) > 1:
						require.NoError(t, err)
						readAll(t, resp)
						assert.Equal(t, 503, resp.StatusCode, "sent once")
					default:
						require.NoError(t, err)
						readAll(t, resp)
						assert.Equal(t, end.status, resp.StatusCode)
					}
					if replayed {
						assert.Equal(t, int32(end.attempts), s.hits.Load(), "attempts")
					}
					assert.Equal(t, int32(1), cb.closes.Load())
					wantRoomBack(t, tr)
				})
			}
		}
	}
}
