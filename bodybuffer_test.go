package retryhttp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sourceBody is a caller's request body that counts its Close calls and
// fails a Read that starts after Close: once the caller's body is closed,
// nothing may read it.
type sourceBody struct {
	r      io.Reader
	closes atomic.Int32
}

var errReadAfterClose = errors.New("caller's body read after Close")

// newReplayableBody returns the replayable body of req, as a call's init
// makes it.
func newReplayableBody(req *http.Request, pool *bufferPool) *replayableBody {
	b := new(replayableBody)
	b.init(req, pool)
	return b
}

func (s *sourceBody) Read(p []byte) (int, error) {
	if s.closes.Load() > 0 {
		return 0, errReadAfterClose
	}
	return s.r.Read(p)
}

func (s *sourceBody) Close() error {
	s.closes.Add(1)
	return nil
}

// streamRequest returns a request whose body, without GetBody, reads r.
// A length of 0 means unknown, as in net/http.
func streamRequest(r io.Reader, length int64) (*http.Request, *sourceBody) {
	src := &sourceBody{r: r}
	return &http.Request{Method: http.MethodPut, Body: src, ContentLength: length}, src
}

// payload returns n bytes that differ from one offset to the next, so a
// byte delivered at the wrong offset shows.
func payload(n int) []byte {
	p := make([]byte, n)
	c := rand.NewChaCha8([32]byte{byte(n), byte(n >> 8)})
	_, _ = c.Read(p)
	return p
}

// mustReader returns the next reader of body, failing the test if there is
// none.
func mustReader(t *testing.T, body *replayableBody) io.ReadCloser {
	t.Helper()
	rc, _, err := body.newReader(0)
	require.NoError(t, err)
	require.NotNil(t, rc)
	return rc
}

func TestBufferPoolDefaults(t *testing.T) {
	t.Parallel()
	p := newBufferPool(BufferLimits{})
	assert.Equal(t, int64(defaultBufferPerRequest), p.perRequest)
	assert.True(t, p.tryAcquire(defaultBufferTotal), "the whole default total is free")
	assert.False(t, p.tryAcquire(1), "no room past the default total")
	p.giveBack(defaultBufferTotal)
	assert.Equal(t, BufferStats{HighWater: defaultBufferTotal}, p.stats())

	none := newBufferPool(BufferLimits{Total: -1})
	assert.False(t, none.tryAcquire(1), "a negative total gives no room")
}

func TestBufferPoolHighWater(t *testing.T) {
	t.Parallel()
	p := newBufferPool(BufferLimits{Total: 100})
	steps := []struct {
		acquire, release int64
		ok               bool
		want             BufferStats
	}{
		{acquire: 60, ok: true, want: BufferStats{Buffered: 60, HighWater: 60}},
		{acquire: 50, ok: false, want: BufferStats{Buffered: 60, HighWater: 60}},
		{release: 30, want: BufferStats{Buffered: 30, HighWater: 60}},
		{acquire: 70, ok: true, want: BufferStats{Buffered: 100, HighWater: 100}},
		{release: 100, want: BufferStats{Buffered: 0, HighWater: 100}},
	}
	for i, s := range steps {
		if s.acquire > 0 {
			assert.Equal(t, s.ok, p.tryAcquire(s.acquire), "step %d", i)
		}
		p.giveBack(s.release)
		assert.Equal(t, s.want, p.stats(), "step %d", i)
	}
}

func TestNoBodyIsAlwaysReplayable(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]io.ReadCloser{"nil": nil, "NoBody": http.NoBody} {
		t.Run(name, func(t *testing.T) {
			req := &http.Request{Method: http.MethodGet, Body: body}
			b := newReplayableBody(req, newBufferPool(BufferLimits{}))
			for range 3 {
				rc, n, err := b.newReader(0)
				require.NoError(t, err)
				assert.Equal(t, body, rc)
				assert.Equal(t, int64(0), n)
				assert.True(t, b.replayable())
			}
			b.release()
			assert.True(t, b.replayable())
			assert.NoError(t, b.callerErr())
		})
	}
}

func TestGetBodyReplaysWithoutBuffer(t *testing.T) {
	t.Parallel()
	data := payload(3 * firstChunk)
	newReq := func(getBody func() (io.ReadCloser, error)) (*http.Request, *sourceBody, *int) {
		req, src := streamRequest(bytes.NewReader(data), int64(len(data)))
		calls := 0
		req.GetBody = func() (io.ReadCloser, error) { calls++; return getBody() }
		return req, src, &calls
	}
	fresh := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }

	t.Run("replays", func(t *testing.T) {
		pool := newBufferPool(BufferLimits{})
		req, src, calls := newReq(fresh)
		b := newReplayableBody(req, pool)
		first, n, err := b.newReader(0)
		require.NoError(t, err)
		assert.Same(t, src, first, "the first attempt sends the caller's own body")
		assert.Equal(t, int64(len(data)), n)
		assert.Equal(t, 0, *calls, "GetBody is not called for the first attempt")
		for i := 1; i <= 2; i++ {
			rc := mustReader(t, b)
			assert.Equal(t, i, *calls)
			got, err := io.ReadAll(rc)
			require.NoError(t, err)
			assert.Equal(t, data, got)
		}
		b.release()
		assert.Equal(t, BufferStats{}, pool.stats(), "GetBody bodies take no buffer")
		assert.Equal(t, int32(0), src.closes.Load(), "the attempt that got it closes the caller's body")
	})
	t.Run("release without attempts closes", func(t *testing.T) {
		req, src, _ := newReq(fresh)
		b := newReplayableBody(req, newBufferPool(BufferLimits{}))
		b.release()
		b.release()
		assert.Equal(t, int32(1), src.closes.Load())
	})
	t.Run("GetBody error", func(t *testing.T) {
		errGet := errors.New("get body failed")
		req, _, calls := newReq(func() (io.ReadCloser, error) { return nil, errGet })
		b := newReplayableBody(req, newBufferPool(BufferLimits{}))
		mustReader(t, b)
		for range 2 {
			_, _, err := b.newReader(0)
			assert.ErrorIs(t, err, errGet)
			assert.ErrorIs(t, err, errBodyCommitted)
			assert.False(t, b.replayable())
		}
		assert.Equal(t, 1, *calls, "GetBody is not tried again after it failed")
	})
}

func TestReplayIsByteExact(t *testing.T) {
	t.Parallel()
	const limit = 10*firstChunk + 123
	sizes := []int{
		0, 1, firstChunk - 1, firstChunk, firstChunk + 1,
		3*firstChunk - 1, 3 * firstChunk, 3*firstChunk + 1, 7*firstChunk + 5,
		limit - 1, limit, limit + 1, 2 * limit,
	}
	sources := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"one byte", iotest.OneByteReader},
		{"half", iotest.HalfReader},
		{"data with EOF", iotest.DataErrReader},
	}
	for _, size := range sizes {
		for _, s := range sources {
			for _, known := range []bool{false, true} {
				name := fmt.Sprintf("%d/%s/known=%v", size, s.name, known)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					testReplay(t, size, limit, known, s.wrap)
				})
			}
		}
	}
}

func testReplay(t *testing.T, size int, limit int64, known bool, wrap func(io.Reader) io.Reader) {
	pool := newBufferPool(BufferLimits{PerRequest: limit})
	data := payload(size)
	length, wantLength := int64(0), int64(-1)
	if known && size > 0 {
		length, wantLength = int64(size), int64(size)
	}
	req, src := streamRequest(wrap(bytes.NewReader(data)), length)
	b := newReplayableBody(req, pool)
	fits := int64(size) <= limit

	for attempt := 0; attempt == 0 || fits && attempt < 3; attempt++ {
		rc, n, err := b.newReader(0)
		require.NoError(t, err, "attempt %d", attempt)
		assert.Equal(t, wantLength, n)
		if attempt == 0 {
			got, err := io.ReadAll(rc)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(data, got), "first attempt: got %d bytes, want %d", len(got), size)
		} else {
			assert.NoError(t, iotest.TestReader(rc, data), "attempt %d", attempt)
		}
		require.NoError(t, rc.Close())
	}
	stats := pool.stats()
	if fits {
		assert.True(t, b.replayable())
		assert.Equal(t, uint64(0), stats.CommittedForSize)
		assert.GreaterOrEqual(t, stats.Buffered, int64(size))
	} else {
		_, _, err := b.newReader(0)
		assert.ErrorIs(t, err, errBodyCommitted)
		assert.False(t, b.replayable())
		assert.Equal(t, uint64(1), stats.CommittedForSize)
		assert.Equal(t, int64(0), stats.Buffered)
	}
	assert.LessOrEqual(t, stats.HighWater, limit)
	b.release()
	assert.Equal(t, int64(0), pool.stats().Buffered)
	assert.Equal(t, int32(1), src.closes.Load())
	assert.NoError(t, b.callerErr())
}

func TestReplayAfterPartialRead(t *testing.T) {
	t.Parallel()
	data := payload(3*firstChunk + 7)
	pool := newBufferPool(BufferLimits{})
	req, src := streamRequest(iotest.HalfReader(bytes.NewReader(data)), 0)
	b := newReplayableBody(req, pool)

	first := mustReader(t, b)
	part := make([]byte, 100)
	_, err := io.ReadFull(first, part)
	require.NoError(t, err)
	assert.Equal(t, data[:100], part)
	require.NoError(t, first.Close())
	_, err = first.Read(part)
	assert.ErrorIs(t, err, errReadOnClosed)
	assert.Equal(t, int32(0), src.closes.Load(), "the next attempt still needs the caller's body")
	assert.True(t, b.replayable())

	second := mustReader(t, b)
	got, err := io.ReadAll(second)
	require.NoError(t, err)
	assert.Equal(t, data, got)
	assert.Equal(t, int32(1), src.closes.Load(), "closed as soon as it has given every byte")
	require.NoError(t, second.Close())
	b.release()
	assert.Equal(t, int32(1), src.closes.Load())
	assert.Equal(t, int64(0), pool.stats().Buffered)
}

func TestPassingLimitWhileStreaming(t *testing.T) {
	t.Parallel()
	const limit = 3 * firstChunk
	data := payload(5 * firstChunk)
	pool := newBufferPool(BufferLimits{PerRequest: limit})
	req, src := streamRequest(bytes.NewReader(data), 0)
	b := newReplayableBody(req, pool)

	first := mustReader(t, b)
	head := make([]byte, limit)
	_, err := io.ReadFull(first, head)
	require.NoError(t, err)
	assert.Equal(t, int64(limit), pool.stats().Buffered, "a body within its limit is kept")
	hedge := mustReader(t, b)
	part := make([]byte, 10)
	_, err = io.ReadFull(hedge, part)
	require.NoError(t, err)
	assert.Equal(t, data[:10], part)

	one := make([]byte, 1)
	_, err = io.ReadFull(first, one)
	require.NoError(t, err)
	assert.Equal(t, data[limit:limit+1], one)
	assert.Equal(t, BufferStats{HighWater: limit, CommittedForSize: 1}, pool.stats(),
		"one byte past the limit gives all the room back at once")
	_, _, err = b.newReader(0)
	assert.ErrorIs(t, err, errBodyCommitted)
	assert.False(t, b.replayable())
	_, err = hedge.Read(part)
	assert.ErrorIs(t, err, errBodyCommitted, "a reader behind the frontier needed dropped bytes")

	rest, err := io.ReadAll(first)
	require.NoError(t, err)
	assert.Equal(t, data[limit+1:], rest, "the reader in flight gets every byte")
	require.NoError(t, first.Close())
	require.NoError(t, hedge.Close())
	b.release()
	assert.Equal(t, BufferStats{HighWater: limit, CommittedForSize: 1}, pool.stats())
	assert.Equal(t, int32(1), src.closes.Load())
}

func TestBodiesThatAreNeverBuffered(t *testing.T) {
	t.Parallel()
	data := payload(3 * firstChunk)
	tests := []struct {
		name          string
		limits        BufferLimits
		length        int64
		wantCommitted uint64
	}{
		{"known length over limit", BufferLimits{PerRequest: firstChunk}, int64(len(data)), 1},
		{"known length over total", BufferLimits{Total: firstChunk}, int64(len(data)), 1},
		{"buffering off", BufferLimits{PerRequest: -1}, int64(len(data)), 0},
		{"buffering off, unknown length", BufferLimits{PerRequest: -1}, 0, 0},
		// A negative Total is as a negative PerRequest: nothing is ever
		// buffered, and nothing counted committed for size.
		{"no room at all", BufferLimits{Total: -1}, int64(len(data)), 0},
		{"no room at all, unknown length", BufferLimits{Total: -1}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := newBufferPool(tt.limits)
			req, src := streamRequest(bytes.NewReader(data), tt.length)
			b := newReplayableBody(req, pool)
			want := BufferStats{CommittedForSize: tt.wantCommitted}
			assert.Equal(t, want, pool.stats(), "decided before anything is read")
			assert.True(t, b.replayable(), "it is still sent once")

			rc := mustReader(t, b)
			assert.False(t, b.replayable())
			got, err := io.ReadAll(rc)
			require.NoError(t, err)
			assert.Equal(t, data, got)
			_, _, err = b.newReader(0)
			assert.ErrorIs(t, err, errBodyCommitted)
			require.NoError(t, rc.Close())
			b.release()
			assert.Equal(t, want, pool.stats(), "nothing was ever buffered")
			assert.Equal(t, int32(1), src.closes.Load())
		})
	}
}

func TestNoRoomLeftInTotal(t *testing.T) {
	t.Parallel()
	t.Run("up front", func(t *testing.T) {
		pool := newBufferPool(BufferLimits{Total: 2 * firstChunk})
		bigReq, _ := streamRequest(bytes.NewReader(payload(2*firstChunk)), 2*firstChunk)
		big := newReplayableBody(bigReq, pool)
		assert.Equal(t, int64(2*firstChunk), pool.stats().Buffered, "a known length takes its room at once")

		data := payload(100)
		req, src := streamRequest(bytes.NewReader(data), int64(len(data)))
		small := newReplayableBody(req, pool)
		assert.Equal(t, uint64(1), pool.stats().CommittedForSize)
		rc := mustReader(t, small)
		got, err := io.ReadAll(rc)
		require.NoError(t, err)
		assert.Equal(t, data, got, "a body with no room is still sent once")
		_, _, err = small.newReader(0)
		assert.ErrorIs(t, err, errBodyCommitted)
		require.NoError(t, rc.Close())
		small.release()
		assert.Equal(t, int32(1), src.closes.Load())

		big.release()
		assert.Equal(t, int64(0), pool.stats().Buffered, "a released body gives its room back")
		req, _ = streamRequest(bytes.NewReader(data), int64(len(data)))
		again := newReplayableBody(req, pool)
		assert.Equal(t, BufferStats{Buffered: 100, HighWater: 2 * firstChunk, CommittedForSize: 1}, pool.stats())
		again.release()
	})
	t.Run("while streaming", func(t *testing.T) {
		pool := newBufferPool(BufferLimits{Total: firstChunk + firstChunk/2})
		data := payload(3 * firstChunk)
		req, src := streamRequest(bytes.NewReader(data), 0)
		b := newReplayableBody(req, pool)
		rc := mustReader(t, b)
		got, err := io.ReadAll(rc)
		require.NoError(t, err)
		assert.Equal(t, data, got, "the reader in flight gets every byte")
		assert.Equal(t, BufferStats{HighWater: firstChunk, CommittedForSize: 1}, pool.stats(),
			"the first chunk fitted, the second did not, and the first was given back")
		assert.False(t, b.replayable())
		require.NoError(t, rc.Close())
		b.release()
		assert.Equal(t, int32(1), src.closes.Load())
	})
}
