package retryhttp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestChunkSpans(t *testing.T) {
	t.Parallel()
	c := chunkList{base: 4, limit: 30}
	tests := []struct {
		off         int64
		k           int
		start, size int64
	}{
		{0, 0, 0, 4}, {3, 0, 0, 4},
		{4, 1, 4, 8}, {11, 1, 4, 8},
		{12, 2, 12, 16}, {27, 2, 12, 16},
		{28, 3, 28, 2}, {29, 3, 28, 2}, // cut short at the limit
	}
	for _, tt := range tests {
		k, start, size := c.span(tt.off)
		assert.Equal(t, []int64{int64(tt.k), tt.start, tt.size}, []int64{int64(k), start, size}, "span(%d)", tt.off)
	}

	data := payload(30)
	for off := 0; off < len(data); off += 7 {
		c.write(int64(off), data[off:min(off+7, len(data))])
	}
	assert.Len(t, c.chunks, 4)
	for off := range len(data) {
		got := make([]byte, 40)
		n := c.readAt(got, int64(off), int64(len(data)))
		assert.Equal(t, data[off:], got[:n], "readAt(%d)", off)
	}
}

func TestCallerBodyErrorIsSurfaced(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	data := payload(100)
	pool := newBufferPool(BufferLimits{})
	req, src := streamRequest(io.MultiReader(bytes.NewReader(data), iotest.ErrReader(errBoom)), 0)
	b := newReplayableBody(req, pool)
	first, hedge := mustReader(t, b), mustReader(t, b)

	got, err := io.ReadAll(first)
	assert.Equal(t, data, got)
	var cbe *callerBodyError
	require.ErrorAs(t, err, &cbe)
	assert.ErrorIs(t, err, errBoom)
	assert.Equal(t, err, b.callerErr())
	assert.Equal(t, int64(0), pool.stats().Buffered, "no attempt can finish, so the buffer goes at once")
	assert.Equal(t, uint64(0), pool.stats().CommittedForSize, "not a matter of size")

	assert.False(t, b.replayable())
	_, _, err = b.newReader(0)
	assert.ErrorIs(t, err, errBodyCommitted)
	assert.ErrorIs(t, err, errBoom)
	buf := make([]byte, 10)
	_, err = hedge.Read(buf)
	assert.ErrorIs(t, err, errBoom, "behind the frontier")
	_, err = first.Read(buf)
	assert.ErrorIs(t, err, errBoom, "at the frontier")

	require.NoError(t, first.Close())
	require.NoError(t, hedge.Close())
	b.release()
	assert.Equal(t, int32(1), src.closes.Load())
}

func TestCallerBodyIsClosedOnce(t *testing.T) {
	t.Parallel()
	for _, tt := range closeScenarios() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := newBufferPool(BufferLimits{PerRequest: closeScenarioLimit})
			req, src := streamRequest(bytes.NewReader(payload(3*firstChunk)), 0)
			b := newReplayableBody(req, pool)
			tt.run(t, b, src)
			assert.Equal(t, int32(1), src.closes.Load())
			assert.Equal(t, int64(0), pool.stats().Buffered)
		})
	}
}

// closeScenarioLimit is the per-request limit of closeScenarios' bodies,
// which are longer.
const closeScenarioLimit = 2 * firstChunk

// closeScenario is one order in which readers and RoundTrip may end.
type closeScenario struct {
	name string
	run  func(t *testing.T, b *replayableBody, src *sourceBody)
}

// closeScenarios each leave the caller's body closed exactly once.
func closeScenarios() []closeScenario {
	read := func(t *testing.T, rc io.Reader, n int) {
		t.Helper()
		_, err := io.ReadFull(rc, make([]byte, n))
		require.NoError(t, err)
	}
	return []closeScenario{
		{"release with no reader", func(t *testing.T, b *replayableBody, src *sourceBody) {
			b.release()
		}},
		{"release before the reader finished", func(t *testing.T, b *replayableBody, src *sourceBody) {
			rc := mustReader(t, b)
			read(t, rc, 10)
			b.release()
			assert.Equal(t, int32(0), src.closes.Load(), "not closed under an open reader")
			read(t, rc, firstChunk)
			require.NoError(t, rc.Close())
		}},
		{"reader closed before release", func(t *testing.T, b *replayableBody, src *sourceBody) {
			rc := mustReader(t, b)
			read(t, rc, 10)
			require.NoError(t, rc.Close())
			assert.Equal(t, int32(0), src.closes.Load(), "a retry may still need it")
			b.release()
		}},
		{"two readers, last closes", func(t *testing.T, b *replayableBody, src *sourceBody) {
			r1, r2 := mustReader(t, b), mustReader(t, b)
			read(t, r1, 10)
			read(t, r2, 20)
			b.release()
			require.NoError(t, r1.Close())
			assert.Equal(t, int32(0), src.closes.Load())
			require.NoError(t, r2.Close())
		}},
		{"read to the end", func(t *testing.T, b *replayableBody, src *sourceBody) {
			rc := mustReader(t, b)
			_, err := io.Copy(io.Discard, rc)
			require.NoError(t, err)
			assert.Equal(t, int32(1), src.closes.Load(), "every byte is through")
			require.NoError(t, rc.Close())
			b.release()
		}},
		{"committed while streaming", func(t *testing.T, b *replayableBody, src *sourceBody) {
			rc := mustReader(t, b)
			read(t, rc, closeScenarioLimit+1)
			b.release()
			require.NoError(t, rc.Close())
		}},
		{"repeated calls", func(t *testing.T, b *replayableBody, src *sourceBody) {
			rc := mustReader(t, b)
			read(t, rc, 10)
			require.NoError(t, rc.Close())
			require.NoError(t, rc.Close())
			b.release()
			b.release()
		}},
	}
}

// chanSource is a caller's body whose Read returns the chunks sent on
// chunks, io.EOF once chunks is closed, and afterClose after Close.
type chanSource struct {
	chunks     chan []byte
	closed     chan struct{}
	afterClose error
	closeOnce  sync.Once
	closes     atomic.Int32
}

var errSourceClosed = errors.New("source closed")

func newChanSource() *chanSource {
	return &chanSource{chunks: make(chan []byte), closed: make(chan struct{}), afterClose: errSourceClosed}
}

func (s *chanSource) Read(p []byte) (int, error) {
	select {
	case c, ok := <-s.chunks:
		if !ok {
			return 0, io.EOF
		}
		return copy(p, c), nil
	case <-s.closed:
		return 0, s.afterClose
	}
}

func (s *chanSource) Close() error {
	s.closes.Add(1)
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

type readResult struct {
	data string
	err  error
}

// readAsync starts one Read of rc and returns where its result will be.
func readAsync(rc io.Reader) <-chan readResult {
	done := make(chan readResult, 1)
	go func() {
		buf := make([]byte, 64)
		n, err := rc.Read(buf)
		done <- readResult{string(buf[:n]), err}
	}()
	return done
}

func TestReaderBehindFrontierDoesNotWaitForSource(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		src := newChanSource()
		req := &http.Request{Method: http.MethodPut, Body: src}
		b := newReplayableBody(req, newBufferPool(BufferLimits{}))
		first, hedge := mustReader(t, b), mustReader(t, b)

		pending := readAsync(first)
		src.chunks <- []byte("hello")
		assert.Equal(t, readResult{data: "hello"}, <-pending)
		pending = readAsync(first) // now waits in the caller's body
		synctest.Wait()

		buf := make([]byte, 64)
		n, err := hedge.Read(buf) // would deadlock the bubble if it waited
		require.NoError(t, err)
		assert.Equal(t, "hello", string(buf[:n]))

		waiting := readAsync(hedge)
		synctest.Wait()
		select {
		case r := <-waiting:
			t.Fatalf("hedge read %+v before the caller's body gave more", r)
		default:
		}
		src.chunks <- []byte("world") // one chunk: only one reader may read the source
		assert.Equal(t, readResult{data: "world"}, <-pending)
		assert.Equal(t, readResult{data: "world"}, <-waiting)

		close(src.chunks)
		assert.Equal(t, readResult{err: io.EOF}, <-readAsync(hedge))
		assert.Equal(t, readResult{err: io.EOF}, <-readAsync(first))
		assert.Equal(t, int32(1), src.closes.Load())
		require.NoError(t, first.Close())
		require.NoError(t, hedge.Close())
		b.release()
		assert.Equal(t, int32(1), src.closes.Load())
	})
}

func TestCloseDuringRead(t *testing.T) {
	t.Parallel()
	// A stuck Read of the caller's body may end, once the body is
	// closed, with an error or with io.EOF; either way the body is closed
	// only once.
	for _, afterClose := range []error{errSourceClosed, io.EOF} {
		t.Run(afterClose.Error(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				testCloseDuringRead(t, afterClose)
			})
		})
	}
}

func testCloseDuringRead(t *testing.T, afterClose error) {
	src := newChanSource()
	src.afterClose = afterClose
	req := &http.Request{Method: http.MethodPut, Body: src}
	pool := newBufferPool(BufferLimits{})
	b := newReplayableBody(req, pool)
	first, hedge := mustReader(t, b), mustReader(t, b)

	pulling := readAsync(first)
	synctest.Wait()
	waiting := readAsync(hedge)
	synctest.Wait()
	require.NoError(t, hedge.Close())
	assert.Equal(t, readResult{err: errReadOnClosed}, <-waiting, "Close wakes a reader waiting for another's pull")

	b.release()
	assert.Equal(t, int32(0), src.closes.Load(), "a reader is still open")
	require.NoError(t, first.Close())
	assert.Equal(t, int32(1), src.closes.Load(), "closed, as net/http would, to stop a stuck read")
	r := <-pulling
	assert.ErrorIs(t, r.err, afterClose)
	assert.Equal(t, int32(1), src.closes.Load())
	assert.Equal(t, int64(0), pool.stats().Buffered)
}

func TestConcurrentReadersGetSameBytes(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const readers = 8
	data := payload(40 * firstChunk)
	pool := newBufferPool(BufferLimits{})
	// A bytes.Reader is not safe for concurrent use: the race detector
	// reports it if two readers ever read the caller's body at once.
	req, src := streamRequest(iotest.HalfReader(bytes.NewReader(data)), 0)
	b := newReplayableBody(req, pool)

	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			// Attempts fail partway and are retried, so readers stand
			// at different offsets from one another at any moment.
			retries := rng.IntN(3)
			for attempt := 0; ; attempt++ {
				rc, _, err := b.newReader(0)
				if !assert.NoError(t, err) {
					return
				}
				last := attempt == retries
				stop := len(data) + 1 // read to EOF
				if !last {
					stop = rng.IntN(len(data))
				}
				got := readUpTo(t, rc, rng, stop)
				assert.NoError(t, rc.Close())
				if !assert.True(t, len(got) <= len(data) && bytes.Equal(data[:len(got)], got), "reader %d: wrong bytes", i) {
					return
				}
				if last {
					assert.Len(t, got, len(data), "reader %d", i)
					return
				}
			}
		})
	}
	wg.Wait()
	b.release()
	assert.Equal(t, int32(1), src.closes.Load())
	assert.Equal(t, int64(0), pool.stats().Buffered)
}

// readUpTo reads rc with buffers of random small sizes until EOF or until
// it has at least stop bytes.
func readUpTo(t *testing.T, rc io.Reader, rng *rand.Rand, stop int) []byte {
	var got []byte
	for len(got) < stop {
		buf := make([]byte, 1+rng.IntN(3000))
		n, err := rc.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if !assert.NoError(t, err) {
			break
		}
	}
	return got
}

func TestBodiesShareTotal(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const (
		bodies = 12
		total  = 16 * firstChunk
	)
	pool := newBufferPool(BufferLimits{PerRequest: 8 * firstChunk, Total: total})
	var (
		wg       sync.WaitGroup
		sent     sync.WaitGroup // every body has been sent once
		replayed atomic.Int32
	)
	sent.Add(bodies)
	for i := range bodies {
		wg.Go(func() {
			// At least 5 chunks: each kept body holds 1+2+4 chunks of
			// room, so at most two fit in total at once.
			data := payload(5*firstChunk + i*1000)
			req, src := streamRequest(bytes.NewReader(data), 0)
			b := newReplayableBody(req, pool)
			defer func() {
				b.release()
				assert.Equal(t, int32(1), src.closes.Load())
			}()
			assertSent(t, b, data)
			sent.Done()
			sent.Wait()
			rc, _, err := b.newReader(0)
			if errors.Is(err, errBodyCommitted) {
				return
			}
			replayed.Add(1)
			got, err := io.ReadAll(rc)
			assert.NoError(t, err)
			assert.True(t, bytes.Equal(data, got), "body %d replay", i)
			assert.NoError(t, rc.Close())
		})
	}
	wg.Wait()
	stats := pool.stats()
	assert.LessOrEqual(t, stats.HighWater, int64(total))
	assert.Equal(t, int64(0), stats.Buffered)
	assert.Equal(t, uint64(bodies-replayed.Load()), stats.CommittedForSize, "every body not replayed was committed for room")
	assert.GreaterOrEqual(t, stats.CommittedForSize, uint64(bodies-2))
}

// assertSent checks that the next attempt of b sends data.
func assertSent(t *testing.T, b *replayableBody, data []byte) {
	rc, _, err := b.newReader(0)
	if !assert.NoError(t, err) {
		return
	}
	got, err := io.ReadAll(rc)
	assert.NoError(t, err)
	assert.True(t, bytes.Equal(data, got), "got %d bytes, want %d", len(got), len(data))
	assert.NoError(t, rc.Close())
}

// tapSource is a caller's body whose every Read waits for a go-ahead on
// give, then gives as many of its bytes as fit in p, up to the go-ahead's
// count; once give is closed, Reads go ahead at once. Reads are one at a
// time, as the body's pulls are.
type tapSource struct {
	data []byte
	off  int
	give chan int
}

func (s *tapSource) Read(p []byte) (int, error) {
	n, ok := <-s.give
	if !ok {
		n = len(p)
	}
	if s.off == len(s.data) {
		return 0, io.EOF
	}
	n = copy(p[:min(n, len(p))], s.data[s.off:])
	s.off += n
	return n, nil
}

func (s *tapSource) Close() error { return nil }

// tapBody returns a stream body of data, of unknown length, buffered up to
// limit bytes, and its source.
func tapBody(data []byte, limit int64) (*replayableBody, *tapSource, *bufferPool) {
	src := &tapSource{data: data, give: make(chan int)}
	pool := newBufferPool(BufferLimits{PerRequest: limit})
	return newReplayableBody(&http.Request{Method: http.MethodPut, Body: src}, pool), src, pool
}

// An attempt that has its answer may be in a Read of the caller's body,
// as net/http's writer is after an early answer, and the Read may end
// after the retry has started: it takes no more than the buffer keeps,
// and the retired reader then waits at the limit, so that the retry gets
// the whole body and sends it.
func TestRetiredReaderNeverPassesTheBuffer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		data := payload(40)
		b, src, pool := tapBody(data, 16)
		first := mustReader(t, b).(*bodyReader)
		pending := readAsync(first)
		src.give <- 10
		assert.Equal(t, readResult{data: string(data[:10])}, <-pending)

		pending = readAsync(first) // under way when the answer comes
		synctest.Wait()
		first.retire()
		retry := mustReader(t, b)
		src.give <- len(data) // the source would give all it has
		assert.Equal(t, readResult{data: string(data[10:16])}, <-pending, "no more than the buffer keeps")
		assert.True(t, b.replayable())

		waiting := readAsync(first)
		synctest.Wait()
		select {
		case r := <-waiting:
			t.Fatalf("a retired reader read %+v past the buffer", r)
		default:
		}
		close(src.give)
		got, err := io.ReadAll(retry)
		require.NoError(t, err)
		assert.Equal(t, data, got, "the retry sends the whole body")
		r := <-waiting
		assert.ErrorIs(t, r.err, errBodyCommitted, "the retry took the body past its buffer")
		assert.Equal(t, BufferStats{HighWater: 16, CommittedForSize: 1}, pool.stats())
		require.NoError(t, first.Close())
		require.NoError(t, retry.Close())
		b.release()
	})
}

// Once RoundTrip has returned, no attempt can start: a retired reader
// waiting at the limit goes on and sends the rest.
func TestRetiredReaderGoesOnOnceReleased(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		data := payload(40)
		b, src, pool := tapBody(data, 16)
		first := mustReader(t, b).(*bodyReader)
		pending := readAsync(first)
		src.give <- 16
		assert.Equal(t, readResult{data: string(data[:16])}, <-pending)
		first.retire()
		waiting := readAsync(first)
		synctest.Wait()
		close(src.give)
		b.release()
		r := <-waiting
		require.NoError(t, r.err)
		rest, err := io.ReadAll(first)
		require.NoError(t, err)
		assert.Equal(t, data[16:], append([]byte(r.data), rest...))
		require.NoError(t, first.Close())
		assert.Equal(t, BufferStats{HighWater: 16, CommittedForSize: 1}, pool.stats())
	})
}

// A Read that takes the body past its buffer, started while its attempt
// waited for its outcome, may end after the outcome came: while it is
// under way for an attempt that is over, no new reader is handed out,
// since the buffer is about to be dropped under it. If the caller's body
// ends there instead, the body is whole and replayable.
func TestPullPastTheBufferForAnAttemptThatIsOver(t *testing.T) {
	t.Parallel()
	for _, end := range []bool{false, true} {
		for _, over := range []string{"retired", "closed"} {
			t.Run(fmt.Sprintf("%s, body ends at the limit: %v", over, end), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					size := 40
					if end {
						size = 16
					}
					data := payload(size)
					b, src, pool := tapBody(data, 16)
					first := mustReader(t, b).(*bodyReader)
					pending := readAsync(first)
					src.give <- 16
					<-pending
					pending = readAsync(first) // the Read past the buffer
					synctest.Wait()
					assert.True(t, b.replayable(), "the attempt still waits for its outcome")
					if over == "retired" {
						first.retire()
					} else {
						require.NoError(t, first.Close())
					}
					assert.False(t, b.replayable())
					_, _, err := b.newReader(2)
					require.ErrorIs(t, err, errBodyCommitted)

					close(src.give)
					r := <-pending
					assert.Equal(t, end, b.replayable())
					if !end {
						assert.Equal(t, string(data[16:]), r.data)
						assert.Equal(t, uint64(1), pool.stats().CommittedForSize)
					} else {
						assert.Equal(t, readResult{err: io.EOF}, r)
						retry := mustReader(t, b)
						got, err := io.ReadAll(retry)
						require.NoError(t, err)
						assert.Equal(t, data, got)
						require.NoError(t, retry.Close())
					}
					require.NoError(t, first.Close())
					b.release()
					assert.Zero(t, pool.stats().Buffered)
				})
			})
		}
	}
}
