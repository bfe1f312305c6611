package retryhttp

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzReplayableBody drives one body through a random schedule of
// attempts (new readers, reads of random sizes at different offsets, early
// closes, attempts that have their outcome, release) and checks every step against a model of what the body
// promises. The schedule runs on one goroutine, so a seed always replays
// the same interleaving; TestConcurrentReadersGetSameBytes covers real
// concurrency.
func FuzzReplayableBody(f *testing.F) {
	for seed := range uint64(100) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		newSchedule(t, seed).run()
	})
}

// schedule is the model: what has been read and decided so far.
type schedule struct {
	t     *testing.T
	rng   *rand.Rand
	data  []byte
	limit int64
	known bool
	pool  *bufferPool
	src   *sourceBody
	b     *replayableBody

	readers   []*scheduleReader
	frontier  int  // the most bytes any reader has had
	committed bool // no further attempt may start
	released  bool
	sawEOF    bool // a reader got io.EOF, so the caller's body is done
}

type scheduleReader struct {
	rc      io.ReadCloser
	off     int
	closed  bool
	retired bool
}

func newSchedule(t *testing.T, seed uint64) *schedule {
	rng := rand.New(rand.NewPCG(seed, 2))
	sources := []func(io.Reader) io.Reader{
		func(r io.Reader) io.Reader { return r },
		iotest.HalfReader,
		iotest.DataErrReader,
		iotest.OneByteReader, // last: it gets smaller bodies
	}
	source := rng.IntN(len(sources))
	maxSize := 6 * firstChunk
	if source == len(sources)-1 {
		maxSize = 600
	}
	size := rng.IntN(maxSize + 1)
	s := &schedule{t: t, rng: rng, data: payload(size), known: size > 0 && rng.IntN(2) == 0}
	s.limit = 1 + rng.Int64N(int64(2*size+1))
	// Total at least the limit: room never runs out here, so the model
	// knows exactly when the body commits. TestNoRoomLeftInTotal covers
	// running out.
	s.pool = newBufferPool(BufferLimits{PerRequest: s.limit, Total: s.limit + rng.Int64N(s.limit+1)})
	var length int64
	if s.known {
		length = int64(size)
	}
	r, src := streamRequest(sources[source](bytes.NewReader(s.data)), length)
	s.src = src
	s.b = newReplayableBody(r, s.pool)
	s.committed = s.known && int64(size) > s.limit
	return s
}

func (s *schedule) run() {
	for step := 0; step < 300 && !(s.released && s.open() == 0); step++ {
		s.step()
		s.check()
	}
	if !s.released {
		s.b.release()
		s.released = true
	}
	for _, r := range s.readers {
		if !r.closed {
			s.close(r)
		}
	}
	s.check()
	assert.Equal(s.t, int32(1), s.src.closes.Load())
	assert.Equal(s.t, int64(0), s.pool.stats().Buffered)
}

func (s *schedule) step() {
	var open []*scheduleReader
	for _, r := range s.readers {
		if !r.closed {
			open = append(open, r)
		}
	}
	switch op := s.rng.IntN(21); {
	case op < 12 && len(open) > 0:
		s.read(open[s.rng.IntN(len(open))])
	case op < 15:
		s.newReader()
	case op < 18 && len(open) > 0:
		s.close(open[s.rng.IntN(len(open))])
	case op == 18 && len(s.readers) > len(open):
		for _, r := range s.readers {
			if r.closed {
				_, err := r.rc.Read(make([]byte, 1))
				assert.ErrorIs(s.t, err, errReadOnClosed)
				break
			}
		}
	case op == 19:
		s.b.release()
		s.released = true
	case op == 20 && len(open) > 0:
		r := open[s.rng.IntN(len(open))]
		r.rc.(*bodyReader).retire()
		r.retired = true
	}
}

func (s *schedule) newReader() {
	want := !s.released && (len(s.readers) == 0 || !s.committed)
	assert.Equal(s.t, want, s.b.replayable())
	rc, length, err := s.b.newReader(0)
	if !want {
		require.ErrorIs(s.t, err, errBodyCommitted)
		return
	}
	require.NoError(s.t, err)
	wantLength := int64(-1)
	if s.known {
		wantLength = int64(len(s.data))
	}
	assert.Equal(s.t, wantLength, length)
	s.readers = append(s.readers, &scheduleReader{rc: rc})
}

func (s *schedule) read(r *scheduleReader) {
	behind, committed := r.off < s.frontier, s.committed
	held := r.retired && !s.released && !committed
	if held && !behind && !s.sawEOF && !s.known && int64(s.frontier) >= s.limit {
		return // it would wait for its Close or release, on this very goroutine
	}
	buf := make([]byte, 1+s.rng.IntN(2*firstChunk))
	n, err := r.rc.Read(buf)
	require.LessOrEqual(s.t, r.off+n, len(s.data), "read past the end")
	require.True(s.t, bytes.Equal(s.data[r.off:r.off+n], buf[:n]), "wrong bytes at offset %d", r.off)
	r.off += n
	s.frontier = max(s.frontier, r.off)
	s.committed = s.committed || int64(s.frontier) > s.limit
	if held {
		require.False(s.t, s.committed, "a retired reader took the body past its buffer")
	}
	switch {
	case err == io.EOF:
		require.Equal(s.t, len(s.data), r.off, "EOF before the end")
		s.sawEOF = true
	case errors.Is(err, errBodyCommitted):
		require.True(s.t, committed && behind && n == 0, "only readers behind a committed body's frontier fail")
	case err != nil:
		require.NoError(s.t, err)
	case behind && !committed:
		require.Positive(s.t, n, "a reader behind the frontier reads the buffer")
	}
}

func (s *schedule) close(r *scheduleReader) {
	require.NoError(s.t, r.rc.Close())
	r.closed = true
}

func (s *schedule) open() int {
	n := 0
	for _, r := range s.readers {
		if !r.closed {
			n++
		}
	}
	return n
}

// check compares the pool and the caller's body with the model.
func (s *schedule) check() {
	stats := s.pool.stats()
	finished := s.released && s.open() == 0
	var wantCloses int32
	if s.sawEOF || finished {
		wantCloses = 1
	}
	require.Equal(s.t, wantCloses, s.src.closes.Load(), "closes of the caller's body")
	var wantCommitted uint64
	if s.committed {
		wantCommitted = 1
	}
	require.Equal(s.t, wantCommitted, stats.CommittedForSize)
	if s.committed || finished {
		require.Equal(s.t, int64(0), stats.Buffered, "no reader can use the buffer")
	} else {
		require.GreaterOrEqual(s.t, stats.Buffered, int64(s.frontier), "every byte read is kept")
		require.LessOrEqual(s.t, stats.Buffered, s.limit)
	}
}
