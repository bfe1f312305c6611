package retryhttp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// defaultBufferPerRequest is the number of bytes of one request body kept
// for replay when [BufferLimits.PerRequest] is zero: 1 MiB.
const defaultBufferPerRequest = 1 << 20

// defaultBufferTotal is the number of bytes of request bodies one
// [Transport] keeps for replay at the same time when [BufferLimits.Total] is
// zero: 64 MiB.
const defaultBufferTotal = 64 << 20

// BufferLimits bounds the memory used to replay request bodies. A body with
// GetBody is replayed through it and takes no memory here; any other body is
// kept, as it is first sent, in a buffer that later attempts read from.
// A body that cannot be kept whole is still sent once, then committed: no
// further attempt starts. The zero value means the defaults.
type BufferLimits struct {
	// PerRequest is the largest number of bytes kept for one body. Zero
	// means 1 MiB; negative means never buffer, so a body
	// without GetBody is sent once.
	PerRequest int64

	// Total is the largest number of bytes kept for all bodies of one
	// Transport together. Zero means 64 MiB; negative means no
	// room at all, as if PerRequest were negative.
	Total int64
}

// BufferStats describes the replay buffers of one [Transport] at one
// moment. Its fields are read one by one without a common lock, so they
// may disagree slightly while requests are in flight.
type BufferStats struct {
	// Buffered is the number of bytes of buffer room held now. Room is
	// taken in steps as a body grows, so it may exceed the bytes read so
	// far by up to one step per body; the room a body's next step needs
	// is taken as a Read of it starts, and counted once its bytes come.
	Buffered int64

	// HighWater is the largest value Buffered has had. It never exceeds
	// [BufferLimits.Total].
	HighWater int64

	// CommittedForSize counts the bodies that could not be kept whole:
	// they were declared or grew longer than [BufferLimits.PerRequest], or
	// found no room left in [BufferLimits.Total]. Bodies left unbuffered
	// because PerRequest is negative are not counted.
	CommittedForSize uint64
}

// errBodyCommitted reports that no further attempt may start because the
// request body cannot be sent again. A reader behind the frontier of a body
// whose buffer was dropped also fails with it.
var errBodyCommitted = errors.New("retryhttp: request body cannot be replayed")

// isNoBody reports whether err says an attempt had no body to send: the
// body cannot be replayed (it outgrew its buffer, or GetBody failed).
func isNoBody(err error) bool {
	return err != nil && errors.Is(err, errBodyCommitted)
}

// errReadOnClosed is returned by Read on a body reader after its Close.
var errReadOnClosed = errors.New("retryhttp: read on closed request body")

// callerBodyError carries an error returned by the caller's own request
// body. It is the caller's failure, not the server's or the network's, so the
// transport hands it back instead of retrying; net/http passes a body read
// error through unchanged, so errors.As finds it in an attempt's error.
type callerBodyError struct{ err error }

func (e *callerBodyError) Error() string {
	return "retryhttp: reading request body: " + e.err.Error()
}

func (e *callerBodyError) Unwrap() error { return e.err }

// bufferPool holds the room, in bytes, that the bodies of one Transport
// share, and statistics about it. It is safe for concurrent use: room is a
// semaphore and the statistics are atomics.
type bufferPool struct {
	perRequest int64 // bytes; negative: never buffer
	room       *semaphore.Weighted

	buffered         atomic.Int64
	highWater        atomic.Int64
	committedForSize atomic.Uint64
}

// newBufferPool returns the pool for limits l, with zero fields replaced by
// their defaults.
func newBufferPool(l BufferLimits) *bufferPool {
	perRequest, total := l.PerRequest, l.Total
	if perRequest == 0 {
		perRequest = defaultBufferPerRequest
	}
	if total == 0 {
		total = defaultBufferTotal
	}
	if total < 0 { // no room at all: as if PerRequest were negative
		total, perRequest = 0, -1
	}
	return &bufferPool{perRequest: perRequest, room: semaphore.NewWeighted(total)}
}

// stats returns the pool's statistics.
func (p *bufferPool) stats() BufferStats {
	return BufferStats{
		Buffered:         p.buffered.Load(),
		HighWater:        p.highWater.Load(),
		CommittedForSize: p.committedForSize.Load(),
	}
}

// tryAcquire takes n bytes of room if they are free and reports whether it
// did. It never waits: a body that finds no room is sent once instead, which
// is always possible, whereas waiting would delay the request behind others
// whose room comes back only when their own RoundTrips end.
func (p *bufferPool) tryAcquire(n int64) bool {
	if !p.setAside(n) {
		return false
	}
	p.count(n)
	return true
}

// setAside takes n bytes of room, as tryAcquire does, without counting
// them in Buffered yet: room taken for bytes that may never come (the
// next Read of a body may end it) is counted by count once they do, and
// handed back by putBack if they do not, so that an empty body never
// shows in HighWater.
func (p *bufferPool) setAside(n int64) bool { return p.room.TryAcquire(n) }

// count counts in Buffered n bytes of room set aside, which are taken
// from then on, and given back by giveBack.
func (p *bufferPool) count(n int64) {
	// Counted after the room is taken, and uncounted in giveBack before it
	// is given back, so Buffered never exceeds the room held, nor Total.
	now := p.buffered.Add(n)
	for hw := p.highWater.Load(); now > hw; hw = p.highWater.Load() {
		if p.highWater.CompareAndSwap(hw, now) {
			break
		}
	}
}

// putBack returns n bytes of room set aside and never counted.
func (p *bufferPool) putBack(n int64) {
	if n > 0 {
		p.room.Release(n)
	}
}

// giveBack returns n bytes of room taken by tryAcquire, or set aside and
// counted.
func (p *bufferPool) giveBack(n int64) {
	if n == 0 {
		return
	}
	p.buffered.Add(-n)
	p.room.Release(n)
}

// bodyMode says how a request body is replayed.
type bodyMode uint8

const (
	noBody      bodyMode = iota // nil or http.NoBody: nothing to send
	getBodyMode                 // req.GetBody makes each further copy
	streamMode                  // teed into a shared buffer as it is first read
)

// replayableBody hands each attempt of one RoundTrip its own reader of the
// caller's request body. It is safe for concurrent use, since hedged
// attempts read at the same time.
type replayableBody struct {
	// Set by init and never changed, so read without mu.
	req    *http.Request // the caller's request; never modified
	pool   *bufferPool
	mode   bodyMode
	length int64 // ContentLength for each attempt; -1: unknown

	// mu guards the fields below and every bodyReader's off and closed.
	// Attempts read from several goroutines, and net/http may Close a
	// reader on one goroutine while another is in its Read. mu is never
	// held while the caller's body is read or closed, since either may
	// block as long as the caller likes (GetBody, in newGetBodyReader, is
	// the one call into the caller made under mu). It is held while room
	// is taken from or given back to the pool, which never blocks.
	mu sync.Mutex
	// moved is broadcast when size, pulling, eof, srcErr, buffering,
	// released or a reader's closed flag changes. Readers at the frontier wait on it
	// while another reader pulls from the caller's body.
	moved sync.Cond

	handed     int   // readers handed out
	open       int   // stream readers handed out and not yet closed
	released   bool  // RoundTrip is returning: no new readers
	getBodyErr error // the wrapped error of a failed GetBody

	buf       chunkList // bytes [0, size) while buffering
	reserved  int64     // bytes of room taken from pool for buf
	aside     int64     // room set aside, not counted, for the pull under way
	buffering bool      // buf holds every byte read so far
	size      int64     // bytes read from the caller's body: the frontier
	pulling   bool      // a reader is in a Read of the caller's body
	eof       bool      // the caller's body returned io.EOF
	srcErr    error     // a *callerBodyError, once the caller's body failed
	srcClosed bool      // the caller's body has been closed
	committed bool      // counted in the pool's committedForSize
	onCommit  func()    // called when committed becomes true

	// crosser is the reader whose pull, in progress, has to take the body
	// past its buffer (see startPullLocked); nil when there is none.
	crosser *bodyReader

	// outgrew is closed when a buffered body is dropped mid-stream because it
	// outgrew its buffer; frontier is then the attempt still sending it.
	// outgrew is nil for a body never buffered, and is set before b is shared.
	outgrew  chan struct{}
	frontier int
}

// streamed reports whether req's body is replayed from a buffer: it has
// one, and no GetBody.
func streamed(req *http.Request) bool {
	return req.Body != nil && req.Body != http.NoBody && req.GetBody == nil
}

// init prepares b, zero, for the body of req, the caller's request, for
// one RoundTrip using room from pool, which must not be nil. It reads
// nothing: the first attempt starts sending at once. A body whose declared
// length is within the per-request limit takes its room now, in one piece.
func (b *replayableBody) init(req *http.Request, pool *bufferPool) {
	b.req, b.pool, b.length = req, pool, -1
	b.moved.L = &b.mu
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		b.mode, b.length = noBody, 0
		return
	case req.ContentLength > 0:
		// As net/http does, a zero ContentLength with a body means unknown.
		b.length = req.ContentLength
	}
	if req.GetBody != nil {
		b.mode = getBodyMode
		return
	}
	b.mode = streamMode
	b.startBuffer()
}

// startBuffer decides whether a stream body is buffered and takes the room
// of a body of known length.
func (b *replayableBody) startBuffer() {
	limit := b.pool.perRequest
	switch {
	case limit < 0:
		return
	case b.length > limit:
		b.commitForSizeLocked()
		return
	case b.length > 0:
		if !b.pool.tryAcquire(b.length) {
			b.commitForSizeLocked()
			return
		}
		b.reserved = b.length
		b.buf = chunkList{base: b.length, limit: limit}
	default:
		b.buf = chunkList{base: firstChunk, limit: limit}
	}
	b.buffering = true
	b.outgrew = make(chan struct{})
}

// newReader returns the body for attempt and the ContentLength to
// set on the attempt's request: for no body, the caller's nil or
// http.NoBody and the caller's ContentLength, so that net/http refuses a
// nil Body with a ContentLength as it would the caller's own request;
// otherwise a reader the attempt must close, and the declared length or
// -1. It fails, with an error that matches
// errBodyCommitted, when no further attempt may start.
func (b *replayableBody) newReader(attempt int) (io.ReadCloser, int64, error) {
	switch b.mode {
	case noBody:
		return b.req.Body, b.req.ContentLength, nil
	case getBodyMode:
		return b.newGetBodyReader()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.refusalLocked(); err != nil {
		return nil, 0, err
	}
	b.handed++
	b.open++
	return &bodyReader{b: b, attempt: attempt}, b.length, nil
}

// newGetBodyReader hands out the caller's own body first, so that the
// attempt sending it closes it as net/http would, and a fresh copy from
// GetBody after that.
func (b *replayableBody) newGetBodyReader() (io.ReadCloser, int64, error) {
	// mu is held across GetBody, unlike the caller's Read, because no
	// reader here contends for it, and it keeps GetBody calls one at a
	// time as in net/http, which callers may rely on.
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.refusalLocked(); err != nil {
		return nil, 0, err
	}
	b.handed++
	if b.handed == 1 {
		return b.req.Body, b.length, nil
	}
	rc, err := b.req.GetBody()
	switch {
	case err == nil && rc == nil && b.length == 0:
		rc = http.NoBody
	case err == nil && rc == nil:
		// net/http would refuse the attempt for it, with no word of
		// GetBody; the attempt is not sent, as for an error.
		err = errNilGetBody
	}
	if err != nil {
		b.getBodyErr = fmt.Errorf("%w: GetBody: %w", errBodyCommitted, err)
		return nil, 0, b.getBodyErr
	}
	return rc, b.length, nil
}

// errNilGetBody is the error of a GetBody that returned neither a body
// nor an error, for a request with a body.
var errNilGetBody = errors.New("returned a nil body and no error")

// refusalLocked returns the error newReader gives now, or nil if it would
// hand out a reader. b.mu must be held.
func (b *replayableBody) refusalLocked() error {
	switch {
	case b.mode == noBody:
		return nil
	case b.released:
		return errBodyCommitted
	case b.getBodyErr != nil:
		return b.getBodyErr
	case b.srcErr != nil:
		return fmt.Errorf("%w: %w", errBodyCommitted, b.srcErr)
	case b.mode == streamMode && b.handed > 0 && !b.buffering:
		return errBodyCommitted
	case b.crosser != nil && (b.crosser.retired || b.crosser.closed):
		// A pull in progress takes the body past its buffer for an
		// attempt that is over: a new attempt would lose its body
		// under it. (Should the caller's body end there instead, the
		// body is replayable again.)
		return errBodyCommitted
	}
	return nil
}

// commitForSizeLocked records that the body cannot be kept whole, once per
// body. b.mu must be held, or b not yet shared.
func (b *replayableBody) commitForSizeLocked() {
	if !b.committed {
		b.committed = true
		b.pool.committedForSize.Add(1)
		if b.onCommit != nil {
			b.onCommit()
		}
	}
}

// onCommitForSize has f called once if the body could not be kept whole:
// at once if that is known already, else when it happens, which may be
// after RoundTrip returned while an attempt still sends the body. f runs
// with b.mu held, so it must not call back into b.
func (b *replayableBody) onCommitForSize(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.committed {
		f()
		return
	}
	b.onCommit = f
}

// outgrown returns a channel closed when the body outgrows its buffer
// while attempts read it; it is nil, never ready, for a body never
// buffered. Once it is closed, sender names the attempt still sending it.
func (b *replayableBody) outgrown() <-chan struct{} { return b.outgrew }

// sender returns the attempt whose reader was at the frontier when the
// body outgrew its buffer.
func (b *replayableBody) sender() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.frontier
}

// replayable reports whether newReader would hand out a reader now.
func (b *replayableBody) replayable() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refusalLocked() == nil
}

// callerErr returns the error, a *callerBodyError, that a Read of the
// caller's own body returned, or nil. io.EOF is not an error here. Only
// bodies without GetBody are watched: a GetBody body goes to net/http
// unwrapped.
func (b *replayableBody) callerErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.srcErr
}

// release tells b that RoundTrip is returning and asks for no new reader.
// The caller's body is closed, and the buffer's room given back, now if no
// reader is open, or else when the last one is closed: an attempt still
// sending its body keeps reading. Calls after the first do nothing.
func (b *replayableBody) release() {
	if b.mode == noBody {
		return // nothing to let go, nothing to close
	}
	b.mu.Lock()
	if b.released {
		b.mu.Unlock()
		return
	}
	b.released = true
	b.moved.Broadcast() // a retired reader waiting at the limit may go on
	var closeSrc bool
	switch b.mode {
	case getBodyMode:
		// Once handed out, the caller's body is closed by the attempt.
		closeSrc = b.handed == 0
	case streamMode:
		closeSrc = b.finishLocked()
	}
	b.mu.Unlock()
	if closeSrc {
		_ = b.req.Body.Close() // As in net/http: the caller has no use for it.
	}
}
