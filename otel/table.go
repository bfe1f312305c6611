package otel

import (
	"container/list"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/retryhttp/retryhttp/retrytrace"
)

// DefaultMaxRequests is the number of requests whose attempt spans are
// tracked at once when [Config.MaxRequests] is zero.
const DefaultMaxRequests = 10000

// table holds, per request, its attempt spans still open and the wait
// announced before its next attempt: what the hooks must carry from one
// call to the next. A request's entry goes at its Done. Should a Done
// never come (a base transport that panics, say), at most max entries are
// kept: the oldest goes first, its open spans ended at once.
type table struct {
	// mu guards everything below. The hooks of one request come one at
	// a time, but those of different requests concurrently; no span is
	// started or ended with mu held, as a span processor may export
	// synchronously.
	mu    sync.Mutex
	max   int
	byReq map[*http.Request]*list.Element // of *entry
	order list.List                       // entries, oldest first
}

// entry is one request's state.
type entry struct {
	req   *http.Request
	open  []openSpan // attempts in flight: one, or a few when hedged
	wait  announced  // the wait before the next attempt, if any
	waits bool       // wait holds a wait not yet taken
	// timed is the wait for a hold, a pace's slot or an admission slot
	// under way, whose length is recorded when it ends: at the request's
	// next event.
	timed  announced
	timing bool
}

type openSpan struct {
	n    int
	span trace.Span
}

type announced struct {
	n      int
	length time.Duration
	reason retrytrace.WaitReason
	rule   string
	since  time.Time // when it was announced
}

// timedReason reports whether waits for reason are recorded as long as
// they last: holds, paces and admission, whose announced length is the
// longest they may last.
func timedReason(reason retrytrace.WaitReason) bool {
	return reason == retrytrace.WaitHold || reason == retrytrace.WaitPace || reason == retrytrace.WaitAdmission
}

func newTable(limit int) *table {
	return &table{max: limit, byReq: make(map[*http.Request]*list.Element)}
}

// get returns req's entry, making it if need be, and the spans of the
// entry it pushed out to make room, which the caller ends once mu is
// released. mu must be held.
func (t *table) get(req *http.Request) (*entry, []openSpan) {
	if el, ok := t.byReq[req]; ok {
		return el.Value.(*entry), nil
	}
	var dropped []openSpan
	if len(t.byReq) >= t.max {
		oldest := t.order.Front()
		e := t.order.Remove(oldest).(*entry)
		delete(t.byReq, e.req)
		dropped = e.open
	}
	e := &entry{req: req}
	t.byReq[req] = t.order.PushBack(e)
	return e, dropped
}

// announce keeps the wait before attempt n of req.
// A timed wait under way ends with it, and is returned.
func (t *table) announce(req *http.Request, w announced) (ended announced, ok bool) {
	t.mu.Lock()
	e, dropped := t.get(req)
	e.wait, e.waits = w, true
	ended, ok = e.timed, e.timing
	e.timed, e.timing = w, timedReason(w.reason)
	t.mu.Unlock()
	endDropped(dropped)
	return ended, ok
}

// endWait returns the timed wait of req under way, if any, and forgets
// it: the request went on.
func (t *table) endWait(req *http.Request) (announced, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	el, ok := t.byReq[req]
	if !ok {
		return announced{}, false
	}
	e := el.Value.(*entry)
	w, timing := e.timed, e.timing
	e.timing = false
	return w, timing
}

// takeWait returns the wait announced before attempt n of req, if any,
// and forgets it.
func (t *table) takeWait(req *http.Request, n int) (announced, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	el, ok := t.byReq[req]
	if !ok {
		return announced{}, false
	}
	e := el.Value.(*entry)
	if !e.waits || e.wait.n != n {
		return announced{}, false
	}
	e.waits = false
	return e.wait, true
}

// open records the span of attempt n of req.
func (t *table) open(req *http.Request, n int, span trace.Span) {
	t.mu.Lock()
	e, dropped := t.get(req)
	e.open = append(e.open, openSpan{n: n, span: span})
	t.mu.Unlock()
	endDropped(dropped)
}

// take returns the open span of attempt n of req and forgets it, or nil
// when there is none: its entry was pushed out.
func (t *table) take(req *http.Request, n int) trace.Span {
	t.mu.Lock()
	defer t.mu.Unlock()
	el, ok := t.byReq[req]
	if !ok {
		return nil
	}
	e := el.Value.(*entry)
	for i, o := range e.open {
		if o.n == n {
			e.open = append(e.open[:i], e.open[i+1:]...)
			return o.span
		}
	}
	return nil
}

// remove forgets req and returns the spans it left open, which should be
// none: every attempt is reported done before its request is.
func (t *table) remove(req *http.Request) []openSpan {
	t.mu.Lock()
	defer t.mu.Unlock()
	el, ok := t.byReq[req]
	if !ok {
		return nil
	}
	t.order.Remove(el)
	delete(t.byReq, req)
	return el.Value.(*entry).open
}

// size returns the number of requests tracked.
func (t *table) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byReq)
}

// endDropped ends the spans of attempts whose end will never be seen.
func endDropped(spans []openSpan) {
	for _, o := range spans {
		o.span.SetStatus(codes.Error, "retryhttp/otel: attempt not reported done")
		o.span.End()
	}
}
