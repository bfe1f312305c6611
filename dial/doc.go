// Package dial dials with gRPC's connection backoff, kept per address, so
// that a host that is down is not hammered and calls to it fail as fast
// as the caller's policy allows: a dial inside an address's backoff
// window fails at once with a [*BackoffError], matching [ErrBackoff],
// without touching the network.
//
// A zero retryhttp.Transport dials through a [Dialer] of its own, which
// also spreads the attempts of one request over its host's addresses
// ([Dialer.Route]). [NewBase] returns that base and its Dialer, for a
// caller who wraps the base (to sign requests, say) and wants to keep
// both:
//
//	base, dialer := dial.NewBase()
//	tr := &retryhttp.Transport{Base: sign(base)}
//	// ... when the application knows the server is back:
//	dialer.ResetBackoff("api.example.com:443")
//
// A Dialer also serves any [net/http.Transport] on its own: set its
// DialContext to d.DialContext and, for HTTPS, its DialTLSContext to
// d.DialTLSContext.
package dial
