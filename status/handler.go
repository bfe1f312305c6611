package retryhttp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// StatusHandler returns an [http.Handler] that shows tr's live state to
// an operator, as gRPC's channelz and Envoy's admin page show theirs: an
// HTML page for a person, and the same data as JSON, with ?format=json,
// for tools. Mount it where you choose, as net/http/pprof is mounted,
// behind whatever guards your other admin pages:
//
//	mux.Handle("/debug/retryhttp", retryhttp.StatusHandler(tr))
//
// For each host it shows its retry budget (tokens and capacity, and
// whether retries are allowed), the holds in force on it (the rule held,
// the status that set the hold, its end and the time left), the dial
// backoff of each of its addresses that failed (only when tr built its
// own Base, and so dials through a [Dialer]), the p50, p90 and p99 of its
// recent latencies (kept for hosts whose requests were hedged), the
// hedges its hedge budget holds, and its [Counters]. For the Transport,
// it shows the totals, addresses in dial backoff that belong to no host
// it knows (a proxy's, say), and its last 20 failed requests: those that
// ended in an error, or in a 429 or 5xx after more than one attempt.
//
// Each answer is bounded: at most 100 hosts are listed and the rest are
// counted, the most troubled first (held, then with its retry budget
// spent, most dial windows open, most recent failures, most failed
// retries, most of its budget used, most requests); at most 8 holds and
// 8 addresses per host;
// every text (a host, a path, an error) is cut to 256 bytes. An answer
// stays under 1 MiB whatever tr holds, listing fewer hosts if it must.
//
// Serving it is read-only: it answers GET and HEAD only (405 Method Not
// Allowed otherwise, with Allow: GET, HEAD), at any path; it starts no
// goroutine and sends nothing; it holds a lock that requests share only
// to copy what it shows; it makes no host record and is not tr's first
// use (a Transport never used shows an empty page); [Transport.Stats]
// reads the same before and after. It shows no header value, query
// string, fragment or userinfo: paths are escaped as [RedactURL] writes
// them, and error texts go through [RedactURLs]. Answers are marked
// Cache-Control: no-store. The HTML page is one document, every figure
// in its markup and its style inline; it runs no script and loads
// nothing (its Content-Security-Policy forbids both), so it reads the
// same with JavaScript off.
//
// The JSON is an object of version 1: a later version may add fields,
// never change one. Times are RFC 3339 strings in UTC; durations are
// milliseconds, as numbers with up to three decimals, in fields whose
// names end in "Ms"; lists are never null. Shortened:
//
//	{"version": 1, "time": "2025-03-01T12:00:05Z", "used": true, "dialer": true,
//	 "totals": {counters},
//	 "hosts": [{"host": "api.example.com",
//	   "budget": {"tokens": 4.5, "capacity": 10, "allowsRetries": false},
//	   "hedgeBudget": 0,
//	   "holds": [{"rule": "methodConfig[0]", "status": 429, "since": "2025-03-01T12:00:00Z",
//	     "until": "2025-03-01T12:00:30Z", "remainingMs": 25000}], "moreHolds": 0,
//	   "dialBackoff": [{"network": "tcp", "address": "10.0.0.7:443", "failures": 3,
//	     "until": "2025-03-01T12:00:07.1Z", "remainingMs": 2100, "error": "..."}], "moreDialBackoff": 0,
//	   "latency": {"samples": 128, "p50Ms": 2.1, "p90Ms": 3.4, "p99Ms": 201.3},
//	   "counters": {counters}, "recentFailures": 2}],
//	 "moreHosts": 0, "otherDialBackoff": [], "moreOtherDialBackoff": 0,
//	 "failures": [{"time": "2025-03-01T12:00:04Z", "host": "api.example.com", "method": "GET",
//	   "path": "/v1/items", "status": 503, "error": "", "attempts": 3}],
//	 "failuresTotal": 57}
//
// where:
//
//   - used is false for a Transport never used, whose page is otherwise
//     empty; policyError is present only while the policy is invalid, and
//     gives its error; dialer says whether tr dials through a Dialer of
//     its own, and so has dial backoff to show.
//   - budget is null for a host without a throttle; hedgeBudget is the
//     hedges held, at most 10.
//   - a dialBackoff entry's failures are in a row; its remainingMs is 0
//     once its window has ended, and the next dial goes to the network.
//   - latency is null when none are kept; counters is null for a host
//     counted under "(other)" in [Stats.Hosts]; recentFailures counts the
//     host's among failures.
//   - moreHosts, moreHolds, moreDialBackoff and moreOtherDialBackoff count
//     what is not listed; otherDialBackoff lists the addresses no host
//     claims.
//   - a failure has a status, or an error and status 0; failuresTotal
//     counts every failure since the first request.
//   - counters has requests, retries, retriesFailed, transparentRetries,
//     hedges, hedgesWon, refusals (budget, fleet, hedgeBudget, hold),
//     holdsSet, holdWaits and holdWaitMs, as the fields of [Counters] of
//     like names; totals sums every host, as [Stats.Total].
//
// StatusHandler panics if tr is nil. Fleet holds (see [Fleet]) are not
// shown: a Fleet is asked only by requests.
func StatusHandler(tr *Transport) http.Handler {
	if tr == nil {
		panic("retryhttp: StatusHandler of a nil Transport")
	}
	return statusHandler{tr}
}

type statusHandler struct{ tr *Transport }

// ServeHTTP answers with the page as the request's format asks.
func (h statusHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "retryhttp: the status page answers GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	render, ctype := renderHTML, "text/html; charset=utf-8"
	switch r.URL.Query().Get("format") {
	case "", "html":
	case "json":
		render, ctype = renderJSON, "application/json"
	default:
		http.Error(w, "retryhttp: format must be html or json", http.StatusBadRequest)
		return
	}
	body, err := fit(h.tr.status(time.Now()), render)
	if err != nil {
		http.Error(w, "retryhttp: status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", ctype)
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Write(body)
}

// fit renders p, listing fewer hosts while the answer would reach
// maxStatusBody. The bounds on what a host shows keep a page of 100
// hosts far below it; only texts that escape to several times their
// length (quotes, angle brackets) could reach it.
func fit(p *statusPage, render func(*bytes.Buffer, *statusPage) error) ([]byte, error) {
	var buf bytes.Buffer
	for {
		buf.Reset()
		if err := render(&buf, p); err != nil {
			return nil, err
		}
		if buf.Len() < maxStatusBody || len(p.Hosts) == 0 {
			return buf.Bytes(), nil
		}
		keep := len(p.Hosts) * 3 / 4
		p.MoreHosts += len(p.Hosts) - keep
		p.Hosts = p.Hosts[:keep]
	}
}

func renderJSON(buf *bytes.Buffer, p *statusPage) error {
	enc := json.NewEncoder(buf)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}
