package retryhttp

import "fmt"

// readAhead reads the body of r, whose outcome is out, into memory when
// it is an answer about to be handed back (outDone) under a retry rule
// that asks for it (policy.Retry.ReadAhead): up to that many bytes,
// within the attempt's context, through the mechanism of PeekBody, so
// that the caller then reads them from memory and the body stays whole.
// A body that breaks off while it is read (a reset, a connection closed
// short of its length) makes the attempt one that failed: the answer is
// closed, r's error becomes the read's, and the outcome a network error,
// decided on as a reset before the headers is, under the idempotency
// rules. A body declared longer than the bound goes back unread, and one
// that turns out longer goes back as it is, its first bytes read; a read
// that fails for another reason (a body that does not decode), or because
// the caller has gone, leaves the answer to the caller, who meets the
// failure where it is.
func (c *call) readAhead(r *result, out outcome) outcome {
	if out != outDone || r.resp == nil || c.plan.retry == nil || c.plan.retry.ReadAhead <= 0 ||
		r.resp.ContentLength > c.plan.retry.ReadAhead {
		return out
	}
	ctx := r.ctx
	if ctx == nil {
		ctx = c.ctx
	}
	read, err := peekBody(ctx, r.resp, int(c.plan.retry.ReadAhead))
	if err == nil || c.ctx.Err() != nil {
		return out
	}
	if transient, _ := transientError(err); !transient {
		return out
	}
	r.abort(errBodyBroke)
	r.err = fmt.Errorf("retryhttp: response body broke off after %d bytes: %w", len(read), err)
	return outNetwork
}

// errBodyBroke ends the attempt whose answer's body broke off as it was
// read ahead.
var errBodyBroke = &ownCause{msg: "retryhttp: response body broke off"}
