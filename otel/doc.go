// Package otel records what a [retryhttp.Transport] does as OpenTelemetry
// metrics and spans, built from its [retrytrace.Hooks]. It lives in a
// module of its own, so that the core module never imports OpenTelemetry.
//
//	hooks, err := otel.Hooks(otel.Config{}) // the global providers
//	if err != nil {
//		return err
//	}
//	client := &http.Client{Transport: &retryhttp.Transport{Hooks: hooks}}
//
// Each request records, at its end, histograms in the manner of gRPC's
// retry metrics: its retries, transparent retries, hedges and total retry
// delay, with the attributes server.address, server.port,
// http.request.method and retryhttp.rule. A request answered by its first
// attempt, with no wait before it, records none of them.
//
// Each attempt is an HTTP client span, as the semantic conventions ask of
// a client that resends: a child of the span in the request's context,
// started as the attempt is sent and ended when it has its response
// headers or its error, with http.request.resend_count (the attempt
// number less one), the attempt's outcome, its status or error.type, the
// wait announced before it, and whether it was a hedge or a resend under
// its number (a transparent resend, or the attempt a dial backoff window
// held back for a request that waits for ready).
//
// No query string, fragment, userinfo or header value is ever recorded:
// url.full stops at the path, and error texts lose the URL's secrets.
package otel
