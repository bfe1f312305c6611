package retryhttp

import (
	"context"
	"net/http"
)

// watchCancel returns a context derived from parent that also ends when
// ch, a request's Request.Cancel, is closed, and the function that ends
// it; the attempts then go to the base without Request.Cancel.
//
// For a request that carries one, net/http's Transport starts a goroutine
// that its read loop wakes when the response body is done, right after
// waking the body's reader; the scheduler runs that goroutine next, and
// the reader, which was about to reuse the connection it just gave back,
// waits behind whatever else is runnable. Meanwhile other responses give
// their connections back, the idle pool overflows, they are closed, and
// the late readers dial new ones: hundreds of connections for what a bare
// Transport does with a handful. http.Client sets Request.Cancel on every
// request when it has a Timeout and its Transport is not an
// *http.Transport, as this one is not.
//
// The goroutine here watches ch for the whole request and ends with its
// context: at once after an error, or when the response body handed back
// is done, on the caller's goroutine. A request without Request.Cancel
// pays nothing.
func watchCancel(parent context.Context, ch <-chan struct{}) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case <-ch:
			cancel(errRequestCanceled)
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// settleWatch ends the context that watches Request.Cancel, if there is
// one: at once when the request got no response, else when the response
// body is read to its end or closed.
func (c *call) settleWatch(resp *http.Response) {
	switch {
	case c.unwatch == nil:
	case resp == nil:
		c.unwatch(errCallDone)
	default:
		resp.Body = tie(resp.Body, c.unwatch)
	}
}
