package dial

import (
	"context"
	"net/http"

	"github.com/hashicorp/go-cleanhttp"
)

// minIdlePerHost is the fewest idle connections per host that NewBase's
// transport keeps: enough for 16 concurrent callers of one host.
const minIdlePerHost = 16

// NewBase returns the base transport that a zero retryhttp.Transport
// builds for itself, and the Dialer it dials through: go-cleanhttp's
// pooled transport, its dials (plain and TLS) going through a Dialer that
// keeps gRPC's connection backoff per address, and that can route the
// attempts of one request to distinct addresses of its host
// ([Dialer.Route]). A caller who wraps it, to sign requests say, and sets
// the result as retryhttp.Transport.Base keeps the dial backoff; the
// Dialer's ResetBackoff is then the way to cut a window short. Each call
// builds a new pair.
//
// It keeps at least 16 idle connections per host (go-cleanhttp keeps
// GOMAXPROCS+1): with http.Client.Timeout set, net/http wakes a timer's
// goroutine between a response's last byte and the caller's next request,
// and with a pool of 3, concurrent callers on a small machine close and
// dial connections they could have reused.
//
// HTTPS dials go through [Dialer.DialTLSContext], so that only a completed
// handshake ends an address's backoff; cleanhttp already sets
// ForceAttemptHTTP2, which keeps HTTP/2 working with a custom TLS dial.
func NewBase() (*http.Transport, *Dialer) {
	base := cleanhttp.DefaultPooledTransport()
	base.MaxIdleConnsPerHost = max(base.MaxIdleConnsPerHost, minIdlePerHost)
	d := &Dialer{}
	base.DialContext = d.DialContext
	base.DialTLSContext = d.DialTLSContext
	d.spread = newSpread(base, d)
	return base, d
}

// Route returns the transport that sends the next attempt of req to one
// of its host's addresses, and that address, for a Dialer made by
// [NewBase]: an address that is not in avoid and not backing off, so that
// the attempts of one request (hedges in flight, a retry after a failure)
// reach distinct backends, as Envoy's previous_hosts does. Nor does it
// send new attempts to an address whose dials have been in flight for
// 250 ms with none ending (RFC 8305's Connection Attempt Delay): a
// black-holed backend fails its dials only at their connect timeout, and
// would otherwise take every first attempt meanwhile. host is
// req.URL.Host, lowercased; ctx bounds a lookup of its addresses, which
// are looked up again every 30 s and shared by concurrent callers.
//
// When no address is left and one is backing off, avoided or not, it
// returns the one whose window ends first: the attempt's dial fails there
// at once with a [*BackoffError], and no dial reaches an address that is
// down through the host's name, which the base would dial.
//
// It returns nil, "" when the choice is the base's to make: the Dialer was
// not made by NewBase, the host is an IP literal, has one address or none,
// is reached through a proxy, or every address is avoided or stalled so,
// none backing off. Once a host is known, Route costs a map lookup and no
// allocation.
func (d *Dialer) Route(ctx context.Context, req *http.Request, host string, avoid []string) (http.RoundTripper, string) {
	if d.spread == nil {
		return nil, ""
	}
	return d.spread.route(ctx, req, host, avoid)
}

// CloseIdleConnections closes the idle connections of the transports that
// [Dialer.Route] made, one per address; the base's own are closed by its
// CloseIdleConnections.
func (d *Dialer) CloseIdleConnections() {
	if d.spread != nil {
		d.spread.closeIdle()
	}
}
