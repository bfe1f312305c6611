package retryhttp

import (
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/retryhttp/retryhttp/internal/redact"
)

// maxFailures is the number of failed requests a Transport keeps for its
// status page: enough to see what went wrong lately, in fixed memory.
const maxFailures = 20

// maxFailureText bounds each text a failure keeps (its host, its path,
// its error), in bytes, so that the ring and the status page stay small
// whatever a request or its base made of it. A DNS name has at most 253
// characters; a longer host is no name a server answers to.
const maxFailureText = 256

// Failure is one request that failed, as [Stats] keeps it: its URL's
// host and path, never its query, userinfo or header values. Every text
// but Host is cut to 256 bytes; Host is the host's key in Stats.Hosts,
// whole, so that a host's failures are found under its name whatever its
// length (the Transport keeps the name for the host already).
type Failure struct {
	Time   time.Time
	Host   string // the URL host, lowercased, its port kept, as Stats.Hosts keys it
	Method string
	Path   string // escaped, as the request's URL writes it
	Status int    // the status handed back; 0 with an error
	// Err is the error's text, every URL in it cut down to its scheme,
	// host and path; "" with a status.
	Err      string
	Attempts int // the attempts sent, as Error.Attempts counts them
}

// failureRing keeps the last maxFailures failures of a Transport, newest
// last.
type failureRing struct {
	// mu guards the ring: failed requests record into it while the
	// status page reads it. A request that succeeds never takes it.
	mu   sync.Mutex
	n    uint64 // failures recorded since first use
	list [maxFailures]Failure
}

// add records f, dropping the oldest failure when the ring is full.
func (r *failureRing) add(f Failure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list[r.n%maxFailures] = f
	r.n++
}

// recent returns the failures kept, newest first, and how many were
// recorded in all.
func (r *failureRing) recent() ([]Failure, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := min(r.n, maxFailures)
	out := make([]Failure, 0, kept)
	for i := range kept {
		out = append(out, r.list[(r.n-1-i)%maxFailures])
	}
	return out, r.n
}

// noteFailure records the request in its Transport's recent failures if
// it failed: it ended in an error, or in a 429 or a 5xx after more than
// one attempt (a 5xx answered at once, with no retry asked for, is the
// caller's to judge, as LogHooks judges it). A request that succeeded
// pays a comparison or two here: no lock, no allocation, no clock.
func (c *call) noteFailure(resp *http.Response, err error) {
	if err == nil && (c.tried <= 1 || !troubled(resp.StatusCode)) {
		return
	}
	f := Failure{Time: time.Now(), Host: c.host.name, Method: clip(c.req.Method),
		Path: clip(c.req.URL.EscapedPath()), Attempts: c.tried}
	if f.Method == "" {
		f.Method = http.MethodGet
	}
	if f.Path == "" {
		f.Path = "/" // as net/http sends it
	}
	if err != nil {
		// A server can make the error megabytes long (a status line is
		// quoted whole): redact.Text reads 8 KiB of it at most, in time
		// linear in that, before this RoundTrip returns.
		f.Err = clip(redact.Text(err.Error()))
	} else {
		f.Status = resp.StatusCode
	}
	c.st.failures.add(f)
}

// troubled reports whether a final status says the host is in trouble:
// a rate limit or a server error.
func troubled(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// clip cuts s to at most maxFailureText bytes, at a character boundary,
// marking the cut with an ellipsis.
func clip(s string) string {
	if len(s) <= maxFailureText {
		return s
	}
	const mark = "…"
	cut := maxFailureText - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
