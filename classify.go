package retryhttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/retryhttp/retryhttp/dial"
)

// outcome is what an attempt's result means for the request.
type outcome int

const (
	// outDone: a response to hand back (a success, or a status the policy
	// does not retry).
	outDone outcome = iota
	// outRetryStatus: a response whose status the policy retries.
	outRetryStatus
	// outNetwork: a transient network error after the request may have
	// reached the server.
	outNetwork
	// outNeverSent: the attempt provably never reached the server.
	outNeverSent
	// outFatal: an error that no further attempt can mend.
	outFatal
	// outCancelled: a hedge cancelled because another attempt won.
	outCancelled
	// outNoBody: the attempt got no body to send, or lost it: the body
	// outgrew its buffer under another attempt, or GetBody failed. It was
	// never sent whole, and no further attempt can be.
	outNoBody
)

// ownError reports whether err is this package's or the caller's own
// failure, not an outcome of the server: a body that cannot be sent
// (again), or the caller's body failing.
func ownError(err error) bool {
	if err == nil {
		return false // the common case, without the allocation of errors.As
	}
	var cbe *callerBodyError
	return errors.Is(err, errBodyCommitted) || errors.As(err, &cbe)
}

// classify maps one attempt's result to its outcome: a status among
// listed (the codes its retry policy retries, or its hedging policy holds
// non-fatal) is outRetryStatus. callerDone says the caller's context has
// ended, after which no error is worth another attempt.
func classify(r *result, listed []int, callerDone bool) outcome {
	if r.err != nil {
		return classifyError(callerDone, r)
	}
	if retryableStatus(r.resp.StatusCode, listed) {
		return outRetryStatus
	}
	return outDone
}

// retryableStatus reports whether status is listed. Only 4xx and 5xx
// count: a redirect or an informational status is never retried, whatever
// a policy lists.
func retryableStatus(status int, listed []int) bool {
	return status >= 400 && slices.Contains(listed, status)
}

func classifyError(callerDone bool, r *result) outcome {
	err := r.err
	var cbe *callerBodyError
	switch {
	case callerDone, errors.As(err, &cbe), bodyCopyError(err), errors.Is(err, errBodyCommitted), certificateError(err),
		malformed(err):
		return outFatal
	case errors.Is(err, dial.ErrBackoff):
		return outNeverSent
	}
	transient, refused := transientError(err)
	switch {
	case !transient:
		return outFatal
	case refused || r.unwritten:
		return outNeverSent
	}
	return outNetwork
}

// bodyCopyError reports whether err is a request body's own read error
// that net/http hands back inside the *net.OpError ("readfrom") of the
// connection's ReadFrom, as it does when it copies a body of known length
// over plain TCP. That OpError wraps the failure of either end of the
// copy: the connection's end fails with an errno, a closed connection or a
// deadline; anything else is the body's, so the caller's failure. A body
// without GetBody is read through a bodyReader, which marks its errors as
// a *callerBodyError; a GetBody body goes to net/http as it is, and this
// is how its failure shows.
func bodyCopyError(err error) bool {
	var opErr *net.OpError
	if !errors.As(err, &opErr) || opErr.Op != "readfrom" {
		return false
	}
	var errno syscall.Errno
	return !errors.As(opErr.Err, &errno) && !errors.Is(opErr.Err, net.ErrClosed) &&
		!errors.Is(opErr.Err, os.ErrDeadlineExceeded)
}

// certificateError reports whether err comes from a TLS peer that could
// not be verified or spoke no TLS: asking again would get the same answer.
func certificateError(err error) bool {
	var (
		cve  *tls.CertificateVerificationError
		rhe  tls.RecordHeaderError
		uae  x509.UnknownAuthorityError
		he   x509.HostnameError
		cie  x509.CertificateInvalidError
		sre  x509.SystemRootsError
		alrt tls.AlertError
	)
	return errors.As(err, &cve) || errors.As(err, &rhe) || errors.As(err, &uae) ||
		errors.As(err, &he) || errors.As(err, &cie) || errors.As(err, &sre) || errors.As(err, &alrt)
}

// malformed reports whether err says the request's URL could never be
// sent: an address that does not parse (a port out of range, say), a
// scheme the base does not speak, no host. Every attempt would meet it.
func malformed(err error) bool {
	var ae *net.AddrError
	return errors.As(err, &ae) || stdlibText(err) == textMalformed
}

// transientError reports whether err is a network failure that a new
// attempt may not meet (a reset, an EOF, a timeout, a refused
// connection), and whether it proves the request never reached the
// server (a failed dial or lookup, a refused connection or stream).
func transientError(err error) (transient, refused bool) {
	var (
		dnsErr *net.DNSError
		opErr  *net.OpError
	)
	switch {
	case errors.As(err, &dnsErr):
		// A name that does not exist will not exist in a moment either;
		// any other lookup failure happened before anything was sent.
		return !dnsErr.IsNotFound, true
	case errors.Is(err, syscall.ECONNREFUSED), errors.As(err, &opErr) && opErr.Op == "dial":
		return true, true
	case errors.Is(err, errAttemptTimeout), errors.As(err, new(*lostError)), errors.Is(err, io.EOF),
		// The caller's context is live (classifyError looks first): a
		// cancellation the base met on its own.
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ETIMEDOUT),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return true, false
	}
	switch stdlibText(err) {
	case textUnprocessed:
		return true, true
	case textLost:
		return true, false
	}
	// Not a net.Error in general: *url.Error is one whatever it wraps.
	var to interface{ Timeout() bool }
	return errors.As(err, &opErr) || (errors.As(err, &to) && to.Timeout()), false
}

// textKind is what the text of a standard-library error says.
type textKind uint8

const (
	textOther       textKind = iota
	textUnprocessed          // a stream the server did not process: REFUSED_STREAM, or above a GOAWAY's last stream ID
	textLost                 // a connection or stream lost under the request
	textCancelled            // net/http's "request canceled"
	textMalformed            // a URL net/http cannot send: no host, an unsupported scheme
)

// The texts of net/http's errors that stdlibText reads (see h2_bundle.go
// for those of HTTP/2).
const (
	// An RST_STREAM: "stream error: stream ID 3; REFUSED_STREAM;
	// received from peer".
	markStreamError = "stream error: stream ID "
	// A stream above a GOAWAY's last stream ID, which net/http calls
	// graceful whatever the GOAWAY's code, when it is not the
	// connection's first.
	markGoAwayUnprocessed = "http2: Transport received Server's graceful shutdown GOAWAY"
	// The first stream of a connection above a GOAWAY's last stream ID,
	// when the GOAWAY has an error code: "...ErrCode:ENHANCE_YOUR_CALM".
	markGoAwayFirst = "http2: Transport received GOAWAY from server ErrCode:"
	// A stream the server may have processed, on a connection it closed
	// after a GOAWAY: "...; LastStreamID=1, ErrCode=NO_ERROR, debug=...".
	markGoAwayClosed = "http2: server sent GOAWAY and closed the connection"
	// A response header line cut short by the connection's end, which
	// net/textproto reads as a line with no colon, quoting it.
	markHeaderCut = "malformed MIME header: missing colon: "
	// A response that net/http or net/textproto refused, quoting the
	// line the server sent: the server answered; whatever the line says
	// (a stream error's words, a GOAWAY's) is the server's, not theirs.
	markBadHeaderLine  = "malformed MIME header line: "
	markBadFirstHeader = "malformed MIME header initial line: "
	markBadResponse    = "malformed HTTP response "
	markBadStatus      = "malformed HTTP status code "
	markBadVersion     = "malformed HTTP version "
	// A URL net/http refuses before it dials: `unsupported protocol
	// scheme "ftp"`, and one with no host.
	markBadScheme = "unsupported protocol scheme"
	markNoHost    = "http: no Host in request URL"
)

// stdlibText is the one place that reads the text of standard-library
// errors, for the conditions net/http reports with no type to test:
// HTTP/2's REFUSED_STREAM and streams above a GOAWAY's last stream ID
// (the server promises it did not process them), other stream resets
// the server sent, connections the server closed or lost under a
// request, a response header line the connection's end cut in two,
// net/http's own cancellation error, which it gives a request cancelled
// through Request.Cancel, the URLs it refuses to send, and the answers it
// refuses, quoting them (which say nothing more: the server answered).
//
// The text that comes first in err's wins: the server's own words (a
// GOAWAY's debug data, a header line) come after the text that quotes
// them, and must not pass for net/http's.
func stdlibText(err error) textKind {
	msg := err.Error()
	marks := [...]string{
		markStreamError, markGoAwayUnprocessed, markGoAwayFirst, markGoAwayClosed, markHeaderCut,
		"server closed idle connection", "http2: client connection lost",
		"http2: client connection force closed", "net/http: request canceled", markBadScheme, markNoHost,
		markBadHeaderLine, markBadFirstHeader, markBadResponse, markBadStatus, markBadVersion,
	}
	at, mark := len(msg), ""
	for _, m := range marks {
		if i := strings.Index(msg[:min(len(msg), at+len(m))], m); i >= 0 && i < at {
			at, mark = i, m
		}
	}
	rest := msg[at+len(mark):]
	switch mark {
	case "":
		return textOther
	case markStreamError:
		return streamErrorText(rest)
	case markGoAwayUnprocessed:
		return textUnprocessed
	case markGoAwayFirst:
		code, _, _ := strings.Cut(rest, ",")
		return goAwayText(code)
	case markGoAwayClosed:
		// "; LastStreamID=N, ErrCode=CODE, debug=..."; the bare text,
		// with no fields, is a connection lost too.
		_, fields, _ := strings.Cut(rest, ", ErrCode=")
		code, _, _ := strings.Cut(fields, ",")
		return goAwayText(code)
	case "net/http: request canceled":
		return textCancelled
	case markBadScheme, markNoHost:
		return textMalformed
	case markBadHeaderLine, markBadFirstHeader, markBadResponse, markBadStatus, markBadVersion:
		return textOther
	}
	return textLost
}

// streamErrorText reads an HTTP/2 stream error from the text after its
// "stream ID ": "3; REFUSED_STREAM; received from peer".
func streamErrorText(rest string) textKind {
	_, rest, _ = strings.Cut(rest, "; ")
	code, cause, _ := strings.Cut(rest, "; ")
	switch {
	case code == "REFUSED_STREAM":
		return textUnprocessed
	case !strings.HasPrefix(cause, "received from peer"):
		return textOther
	case code == "HTTP_1_1_REQUIRED", code == "INADEQUATE_SECURITY":
		// The connection itself can never do.
		return textOther
	}
	// A reset the server sent, as an HTTP/1.1 server would close the
	// connection: transient.
	return textLost
}

// goAwayText reads the code of a GOAWAY that cost a request its stream.
// The codes that say the client broke the protocol, or that the
// connection can never serve it, would meet a new connection too; any
// other, ENHANCE_YOUR_CALM (a rate limit) included, is a connection lost.
func goAwayText(code string) textKind {
	switch code {
	case "PROTOCOL_ERROR", "FLOW_CONTROL_ERROR", "FRAME_SIZE_ERROR", "COMPRESSION_ERROR",
		"HTTP_1_1_REQUIRED", "INADEQUATE_SECURITY":
		return textOther
	}
	return textLost
}
