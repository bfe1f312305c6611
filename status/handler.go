package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/retryhttp/retryhttp"
)

// Handler returns an [http.Handler] that shows tr's live state to an
// operator: an HTML page, or with ?format=json the same data as JSON.
// Mount it where you choose, as net/http/pprof is mounted:
//
//	mux.Handle("/debug/retryhttp", status.Handler(tr))
//
// The page is read from [retryhttp.Transport.Stats], and shows it in its
// words. For each host: its [retryhttp.Counters]; its retry budget
// (tokens of maxTokens; retries and hedges start only while tokens >
// maxTokens/2); the hedges its hedge budget holds (hedgeTokens); the
// holds in force on it (the rule held, the status that set the hold, its
// start, its end, the time left, and whether it came from the fleet); its pace (the rate it is sent at,
// once throttled: paceRate, 0 when unpaced) and its concurrency limit
// (concurrencyLimit, 0 without admission, and the attempts inFlight under it); the
// p50, p90 and p99 of its recent
// latencies (kept for hosts whose requests were hedged); and the dial
// backoff of each of its addresses that failed (only when tr dials
// through a Dialer of its own, see [retryhttp.Stats.DialBackoff]). A host
// claims an address whose host is its own, with its port or, when it has
// none, with port 80 or 443, and an address its attempts were routed to
// ([dial.Window.Hosts]). For the Transport: its total, its request-body
// buffer, the addresses in dial backoff that no host claims (a proxy's,
// say), and its last 20 failed requests, newest first.
//
// Each answer is bounded: at most 100 hosts are listed and the rest are
// counted, the most troubled first (held, then with its retry budget
// spent, most dial windows open, most recent failures, most failed extra
// attempts, most of its budget used, most requests, then by name); at
// most 8 holds and 8 dial windows per host, and 8 other addresses; every
// text (a host, a method, a path, a rule, an address, a network, an
// error) is cut to 256 bytes, and shows U+FFFD in place of each byte
// that is no UTF-8, control character (but tab, newline and carriage
// return), bidirectional formatting character and noncharacter, so that
// no text a server or a caller made reads as another. An answer stays
// under 1 MiB whatever tr holds, listing fewer hosts if it must, and then
// fewer failures and other addresses.
//
// Serving it is read-only: it answers GET and HEAD only (405 Method Not
// Allowed otherwise, with Allow: GET, HEAD), at any path, and 400 for a
// format other than html or json; it starts no goroutine and sends
// nothing; it costs what [retryhttp.Transport.Stats] costs, which is no
// first use of tr (a Transport never used shows an empty page) and
// changes nothing. It shows no header value, query string, fragment or
// userinfo: paths are escaped, and error texts go through the redaction
// the logs use. Answers are marked Cache-Control: no-store. The HTML page
// is one document, every figure in its markup and its style inline; it
// runs no script and loads nothing (its Content-Security-Policy forbids
// both), so it reads the same with JavaScript off.
//
// The JSON is an object of version 1: a later version may add fields,
// never change one. Its keys are the names of the Go fields they show,
// in lowerCamel case; a duration is a number of milliseconds, to the
// microsecond, under its field's name followed by "Ms"; a time is an RFC
// 3339 string in UTC; a number is finite, and one that Go holds as a
// float (tokens) has up to three decimals; a list is never null; an
// error is its text, "" for none. Its shape is written out in full in
// the package's documentation, where:
//
//   - time is when the page was read. used is false for a Transport
//     never used, whose page is otherwise empty. dialer says whether tr
//     dials through a Dialer of its own, and so has dial backoff to show.
//     policyErr is [retryhttp.Stats.PolicyErr]: the error every request
//     fails with while the policy is invalid.
//   - total is [retryhttp.Stats.Total]; buffer is [retryhttp.BufferStats],
//     in bytes; failures and failed are [retryhttp.Stats.Failures] and
//     Failed, which counts every failure since first use, listed or not.
//   - hosts are the entries of [retryhttp.Stats.Hosts], "(other)"
//     included, ranked; host is the key. counters are the host's own, and
//     the rest is [retryhttp.HostStats]: maxTokens is 0 when the policy
//     has no throttle; latencySamples is 0, and the latencies with it,
//     for a host whose latencies are not kept. recentFailures counts the
//     host's among failures.
//   - a hold is a [retryhttp.Hold]: rule is the rule's key, as in
//     [retryhttp.Stats.Rules].
//   - a dialBackoff entry is a [dial.Window]: its failures are in a row;
//     its remainingMs is 0 once its window has ended, and the next dial
//     goes to the network. otherDialBackoff lists the windows no host
//     claims.
//   - moreHosts, moreHolds, moreDialBackoff and moreOtherDialBackoff count
//     what is not listed.
//   - a failure has a status, or an error (err) and status 0.
//
// The histogram of [retryhttp.Counters] and [retryhttp.Stats.Rules] are
// left to Stats. A fleet is asked only by requests, so a fleet's hold
// (see [retryhttp.Fleet]) is shown once a request of the host met it.
// Handler panics if tr is nil.
func Handler(tr *retryhttp.Transport) http.Handler {
	if tr == nil {
		panic("status: Handler of a nil Transport")
	}
	return handler{stats: tr.Stats}
}

// handler serves the page of what stats returns: a Transport's Stats,
// or, in this package's tests, a snapshot made up to hold what no
// Transport would.
type handler struct{ stats func() retryhttp.Stats }

// ServeHTTP answers with the page as the request's format asks.
func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Every answer, an error's too (a 405 is cacheable by heuristic):
	// what the page says is true only now.
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "status: the page answers GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	render, ctype := renderHTML, "text/html; charset=utf-8"
	switch r.URL.Query().Get("format") {
	case "", "html":
	case "json":
		render, ctype = renderJSON, "application/json"
	default:
		http.Error(w, "status: format must be html or json", http.StatusBadRequest)
		return
	}
	now := time.Now() // before Stats: every hold it gives is in force then
	body, err := fit(read(h.stats(), now), render, maxBody)
	if err != nil {
		http.Error(w, "status: "+err.Error(), http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", ctype)
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Write(body)
}

// fit renders p, listing less while the answer would reach limit (see
// page.shrink). Its texts clipped and its lists bounded, a page of 100
// hosts stays well below 1 MiB; only texts that escape to several times
// their length (quotes, angle brackets, bytes that are no UTF-8) make it
// list fewer hosts. Without its lists, a page is a few kilobytes: fit
// fails only for a limit below that.
func fit(p *page, render func(*bytes.Buffer, *page) error, limit int) ([]byte, error) {
	var buf bytes.Buffer
	for {
		buf.Reset()
		if err := render(&buf, p); err != nil {
			return nil, err
		}
		if buf.Len() < limit {
			return buf.Bytes(), nil
		}
		if !p.shrink() {
			return nil, fmt.Errorf("a page of %d bytes, listing nothing, does not fit in %d", buf.Len(), limit)
		}
	}
}

// shrink lists a quarter less of one of p's lists, the least telling
// first: the hosts ranked last, then, once no host is left, the oldest
// failures (failed still counts them), then the addresses no host
// claims. It reports false when p lists none of them.
func (p *page) shrink() bool {
	switch {
	case len(p.Hosts) > 0:
		keep := len(p.Hosts) * 3 / 4
		p.MoreHosts += len(p.Hosts) - keep
		p.Hosts = p.Hosts[:keep]
	case len(p.Failures) > 0:
		p.Failures = p.Failures[:len(p.Failures)*3/4]
	case len(p.OtherDialBackoff) > 0:
		keep := len(p.OtherDialBackoff) * 3 / 4
		p.MoreOtherDialBackoff += len(p.OtherDialBackoff) - keep
		p.OtherDialBackoff = p.OtherDialBackoff[:keep]
	default:
		return false
	}
	return true
}

func renderJSON(buf *bytes.Buffer, p *page) error {
	enc := json.NewEncoder(buf)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}
