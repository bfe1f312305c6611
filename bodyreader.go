package retryhttp

import (
	"io"
	"math/bits"
)

// firstChunk is the size in bytes of the first chunk of a body whose length
// is unknown. Small enough that a short body takes little room from the
// total; chunks double from there, so a body of n bytes needs about
// log2(n/firstChunk) of them.
const firstChunk = 4 << 10

// bodyReader is one attempt's reader of a stream body. Readers behind the
// frontier copy from the shared buffer; the reader at the frontier pulls the
// next bytes from the caller's body and tees them into the buffer. off and
// closed are guarded by b.mu.
type bodyReader struct {
	b       *replayableBody
	attempt int   // the attempt reading, for outgrewLocked
	off     int64 // bytes this reader has returned
	closed  bool
	// retired says the attempt has its outcome (see retire): the reader
	// no longer takes the body past its buffer while RoundTrip runs.
	retired bool
}

// Read reads the body from the reader's offset. It is safe to call Close
// while a Read is in progress, as net/http does: a Read waiting for another
// reader's pull returns at once.
func (r *bodyReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	b := r.b
	b.mu.Lock()
	for {
		switch {
		case r.closed:
			b.mu.Unlock()
			return 0, errReadOnClosed
		case r.off < b.size:
			n, err := b.readBufferedLocked(p, r.off)
			r.off += int64(n)
			b.mu.Unlock()
			return n, err
		case b.srcErr != nil:
			b.mu.Unlock()
			return 0, b.srcErr
		case b.eof:
			b.mu.Unlock()
			return 0, io.EOF
		case !b.pulling:
			if q, ok := r.startPullLocked(p); ok {
				b.mu.Unlock()
				return r.pull(q)
			}
		}
		// Another reader is reading the caller's body, and its bytes
		// will be in the buffer when it is done; or r may not pull now.
		b.moved.Wait()
	}
}

// startPullLocked makes r, at the frontier while no one pulls, the reader
// that pulls the next bytes of the caller's body into q, a prefix of p. It
// reports false, pulling nothing, when r must wait instead. b.mu must be
// held.
//
// A pull takes no more than the buffer can keep without being dropped, so
// that it never commits the body unless it has to. The race it closes: an
// attempt's answer may come while its writer is in a Read of the caller's
// body, since net/http goes on writing a body after the answer, and the
// Read of a slow body (a pipe fed by a slow producer) may end long after,
// once the retry is reading the buffer behind it. Closing the attempt's
// reader (as keep does once the kept answer is read) stops its next Read,
// not the one under way; nor does it come in time when the answer's body
// is slow to end (net/http holds its io.EOF up to 50 ms while the write
// goes on). Had such a Read taken the body past its buffer, the buffer
// would have been dropped under the retry, and a request the server had
// answered would have ended with errBodyCommitted. So:
//   - a pull that stays within the buffer takes its room first and reads
//     no more than fits (the end of the chunk at the frontier): it can
//     never commit the body, however late it ends;
//   - only a pull that has to pass the buffer (at the limit, or with no
//     room left in the total) may commit it, and only a reader whose
//     attempt still waits for its outcome starts one. A retired reader
//     (see retire) waits at that point instead: until it is closed, until
//     another reader moves the frontier, or until RoundTrip has returned
//     and no further attempt can start;
//   - such a pull, started before its reader was retired or closed, is
//     the crosser: while it is under way for an attempt that is over, no
//     new reader is handed out (see refusalLocked), as the buffer is about
//     to be dropped, and the request ends with the outcome it holds.
//
// The contract stands: a body that passes its limit is sent once, by the
// attempt that passes it, then committed.
func (r *bodyReader) startPullLocked(p []byte) ([]byte, bool) {
	b := r.b
	room := b.roomLocked()
	switch {
	case room == 0 && r.retired && !b.released:
		return nil, false
	case room == 0:
		b.crosser = r
	case room > 0 && int64(len(p)) > room:
		p = p[:room]
	}
	b.pulling = true
	return p, true
}

// roomLocked returns how many bytes from the frontier the buffer can keep:
// 0 when the next byte would take the body past its buffer, -1 when no
// bound applies (the body is not buffered, or has all its declared length:
// more bytes are the caller's error, which net/http reports). When the
// room taken so far is full, the next chunk's is set aside for the pull
// about to start, and counted only if bytes come (see landLocked). b.mu
// must be held.
func (b *replayableBody) roomLocked() int64 {
	switch {
	case !b.buffering, b.length >= 0 && b.size >= b.length:
		return -1
	case b.size >= b.buf.limit:
		return 0
	case b.size < b.reserved:
		// Room is taken a chunk at a time from offset 0, so the room
		// taken is the offset where the last chunk taken ends.
		return b.reserved - b.size
	}
	_, start, size := b.buf.span(b.size)
	need := start + size - b.reserved
	if !b.pool.setAside(need) {
		return 0
	}
	b.aside = need
	return need
}

// landLocked ends the setting aside of room for the pull that just ended,
// which read n bytes: the room is counted as taken if they are to be kept,
// put back if none came. (A buffer dropped meanwhile put it back already.)
// b.mu must be held.
func (b *replayableBody) landLocked(n int) {
	switch {
	case b.aside == 0:
	case n > 0 && b.buffering:
		b.pool.count(b.aside)
		b.reserved += b.aside
	default:
		b.pool.putBack(b.aside)
	}
	b.aside = 0
}

// pull reads the next bytes of the caller's body into p for r, which is at
// the frontier and has set b.pulling. Source reads are thus one at a time,
// and b.mu is not held during the read, so that readers behind the frontier
// keep copying from the buffer and Close is not held up, however long the
// caller's body takes.
func (r *bodyReader) pull(p []byte) (int, error) {
	b := r.b
	n, err := b.req.Body.Read(p)
	b.mu.Lock()
	b.pulling, b.crosser = false, nil
	b.landLocked(n)
	if n > 0 {
		wasBuffering := b.buffering
		b.teeLocked(p[:n])
		r.off = b.size
		if wasBuffering && !b.buffering {
			b.outgrewLocked(r.attempt)
		}
	}
	closeSrc := false
	switch {
	case err == io.EOF:
		// Every byte has come through: nothing needs the caller's body
		// any more, whether or not the buffer outlives it.
		b.eof = true
		closeSrc = !b.srcClosed
		b.srcClosed = true
	case err != nil:
		err = &callerBodyError{err: err}
		b.srcErr = err
		b.dropLocked() // no attempt can complete now
	}
	b.moved.Broadcast()
	b.mu.Unlock()
	if closeSrc {
		_ = b.req.Body.Close()
	}
	return n, err
}

// readBufferedLocked copies into p the buffered bytes from off, which is
// behind the frontier. If the buffer has been dropped, those bytes are gone
// and the reader cannot go on. b.mu must be held.
func (b *replayableBody) readBufferedLocked(p []byte, off int64) (int, error) {
	if !b.buffering {
		if b.srcErr != nil {
			return 0, b.srcErr
		}
		return 0, errBodyCommitted
	}
	return b.buf.readAt(p, off, b.size), nil
}

// teeLocked appends p, just read from the caller's body, to the buffer.
// A body that passes its limit, or finds no room, is committed: its buffer
// is dropped at once and only the reader at the frontier goes on.
// b.mu must be held.
func (b *replayableBody) teeLocked(p []byte) {
	start := b.size
	b.size += int64(len(p))
	if !b.buffering {
		return
	}
	if b.size > b.buf.limit || !b.reserveLocked(b.size) {
		b.dropLocked()
		b.commitForSizeLocked()
		return
	}
	b.buf.write(start, p)
}

// reserveLocked makes sure the room taken covers the chunks holding the
// first end bytes, and reports whether it does. b.mu must be held.
func (b *replayableBody) reserveLocked(end int64) bool {
	_, start, size := b.buf.span(end - 1)
	need := start + size - b.reserved
	if need <= 0 {
		return true
	}
	if !b.pool.tryAcquire(need) {
		return false
	}
	b.reserved += need
	return true
}

// outgrewLocked records that the buffer was dropped while attempt, whose
// reader is at the frontier, sends the body: every other attempt is doomed,
// and whoever waits on outgrew learns of it at once. b.mu must be held.
func (b *replayableBody) outgrewLocked(attempt int) {
	b.frontier = attempt
	close(b.outgrew)
}

// dropLocked discards the buffer and gives its room back to the pool.
// b.mu must be held.
func (b *replayableBody) dropLocked() {
	b.pool.giveBack(b.reserved)
	b.pool.putBack(b.aside)
	b.reserved, b.aside = 0, 0
	b.buf.chunks = nil
	b.buffering = false
}

// finishLocked frees the buffer once no reader can read it any more: after
// release, with no reader open. It reports whether the caller must then
// close the caller's body, which happens exactly once. b.mu must be held.
//
// A reader closed during its own pull no longer counts as open, so the
// caller's body may be closed while that Read is in progress; net/http
// closes a request body the same way to stop a write that is stuck.
func (b *replayableBody) finishLocked() bool {
	if !b.released || b.open > 0 {
		return false
	}
	b.dropLocked()
	closeSrc := !b.srcClosed
	b.srcClosed = true
	return closeSrc
}

// retire records that the reader's attempt has its outcome: a response or
// an error. The reader still sends what the buffer can keep, so that a
// server that reads on after its answer gets the body as far as that, but
// it no longer takes the body past its buffer while RoundTrip may start
// another attempt, which would need the bytes it dropped. Calls after the
// first do nothing.
func (r *bodyReader) retire() {
	b := r.b
	b.mu.Lock()
	r.retired = true
	b.mu.Unlock()
}

// Close ends the reader. The last of release and the Close of the last
// open reader frees the buffer and closes the caller's body, whose Close
// error it then returns. Calls after the first do nothing.
func (r *bodyReader) Close() error {
	b := r.b
	b.mu.Lock()
	if r.closed {
		b.mu.Unlock()
		return nil
	}
	r.closed = true
	b.open--
	closeSrc := b.finishLocked()
	b.moved.Broadcast() // r may be waiting in Read on another goroutine
	b.mu.Unlock()
	if closeSrc {
		return b.req.Body.Close()
	}
	return nil
}

// chunkList stores buffered bytes in chunks that double in size, so that
// growing never copies what is already kept and an offset's chunk follows
// from the offset alone. It has no lock of its own: its owner's guards it.
type chunkList struct {
	base   int64    // size of chunk 0; chunk k holds base<<k bytes
	limit  int64    // the last chunk is cut short at this offset
	chunks [][]byte // allocated as they are first written, at full size
}

// span returns the index, start offset and size of the chunk holding
// offset off. Chunk k starts at base*(2^k-1).
func (c *chunkList) span(off int64) (k int, start, size int64) {
	k = bits.Len64(uint64(off/c.base+1)) - 1
	start = c.base * (1<<k - 1)
	return k, start, min(c.base<<k, c.limit-start)
}

// write copies p into the list at offset off, the end of what it holds.
// The room for any new chunk must already be reserved.
func (c *chunkList) write(off int64, p []byte) {
	for len(p) > 0 {
		k, start, size := c.span(off)
		if k == len(c.chunks) {
			c.chunks = append(c.chunks, make([]byte, size))
		}
		n := copy(c.chunks[k][off-start:], p)
		p = p[n:]
		off += int64(n)
	}
}

// readAt copies into p the bytes from off up to end and returns how many.
func (c *chunkList) readAt(p []byte, off, end int64) int {
	n := 0
	for n < len(p) && off < end {
		k, start, _ := c.span(off)
		src := c.chunks[k][off-start:]
		if rest := end - off; int64(len(src)) > rest {
			src = src[:rest]
		}
		m := copy(p[n:], src)
		n += m
		off += int64(m)
	}
	return n
}
