package retryhttptest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"
)

// attemptsHeader is retryhttp's header of previous attempts, shown in
// the summaries of failed checks. The kit does not import retryhttp, so
// that retryhttp's own tests can use it.
const attemptsHeader = "X-Retry-Attempts"

// The Want helpers check the records of a Server and report a mismatch
// through tb.Errorf, in the test's own words, marking themselves as
// helpers; the test goes on. Each returns whether all was as wanted, and
// first reports [Server.Err] if the server met a bad script. They read
// the records as they are: after hedged attempts, call [Server.Wait]
// first.

// WantAttempts checks that the server received exactly n requests.
func (s *Server) WantAttempts(tb testing.TB, n int) bool {
	tb.Helper()
	if !s.healthy(tb) {
		return false
	}
	got, as := s.snapshot()
	return wantCount(tb, got, as, n, "")
}

// WantHeader checks that attempt i carried want[i] as its header key
// (its values joined by ", "; "" for none), and that there were
// len(want) attempts. For example, three attempts of a retryhttp
// request carry X-Retry-Attempts "", "1" and "2".
func (s *Server) WantHeader(tb testing.TB, key string, want ...string) bool {
	tb.Helper()
	if !s.healthy(tb) {
		return false
	}
	got, as := s.snapshot()
	if !wantCount(tb, got, as, len(want), fmt.Sprintf(" (%s %q)", key, want)) {
		return false
	}
	ok := true
	for i, a := range as {
		if got := strings.Join(a.Header.Values(key), ", "); got != want[i] {
			tb.Errorf("attempt %d: %s is %q, want %q", a.N, key, got, want[i])
			ok = false
		}
	}
	return ok
}

// WantBody checks that every attempt, and at least one, received want
// whole as its request body. A body longer than KeepBody is compared by
// its size and SHA-256.
func (s *Server) WantBody(tb testing.TB, want string) bool {
	tb.Helper()
	if !s.healthy(tb) {
		return false
	}
	as := s.Attempts()
	if len(as) == 0 {
		tb.Errorf("got no attempts, want a body of %d bytes", len(want))
		return false
	}
	sum := sha256.Sum256([]byte(want))
	ok := true
	for _, a := range as {
		same := a.BodyErr == nil && a.BodySize == int64(len(want)) && a.BodySHA256 == sum
		if !same {
			tb.Errorf("attempt %d: body is %s, want %s", a.N, describeBody(a), describeWant(want, sum))
			ok = false
		}
	}
	return ok
}

// WantArrivals checks that attempt i arrived at at[i], counted from the
// first (so at[0] is 0), and that there were len(at) attempts. Arrival
// times are exact in a synctest bubble, given waits without jitter;
// retryhttp adds up to 10% to a Retry-After or pushback delay, which
// calls for reading [Attempt.At] directly.
func (s *Server) WantArrivals(tb testing.TB, at ...time.Duration) bool {
	tb.Helper()
	if !s.healthy(tb) {
		return false
	}
	got, as := s.snapshot()
	if !wantCount(tb, got, as, len(at), fmt.Sprintf(" (at %v)", at)) {
		return false
	}
	ok := true
	for i, a := range as {
		if a.At != at[i] {
			tb.Errorf("attempt %d: arrived at %v, want %v", a.N, a.At, at[i])
			ok = false
		}
	}
	return ok
}

// healthy reports the server's configuration error, if any.
func (s *Server) healthy(tb testing.TB) bool {
	tb.Helper()
	if err := s.Err(); err != nil {
		tb.Errorf("%v", err)
		return false
	}
	return true
}

// wantCount reports an error unless got, the requests a server received
// when the records as were read, is n; what is appended to the message.
// The records are at most got, so that a check that goes on to index
// its want by them stays within it.
func wantCount(tb testing.TB, got int, as []Attempt, n int, what string) bool {
	tb.Helper()
	if got == n {
		return true
	}
	tb.Errorf("got %d %s, want %d%s%s", got, plural(got, "attempt"), n, what, summary(as))
	return false
}

// summary lists the attempts as, for a failure message.
func summary(as []Attempt) string {
	const most = 20
	var b strings.Builder
	for i, a := range as {
		if i == most {
			fmt.Fprintf(&b, "\n\t... and %d more", len(as)-most)
			break
		}
		fmt.Fprintf(&b, "\n\tattempt %d at %v: %s %s", a.N, a.At, a.Method, a.Path)
		if v := a.Header.Get(attemptsHeader); v != "" {
			fmt.Fprintf(&b, ", %s: %s", attemptsHeader, v)
		}
		if a.Cancelled {
			b.WriteString(", cancelled")
		}
	}
	return b.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// describeBody says what an attempt's body was, briefly.
func describeBody(a Attempt) string {
	var d string
	if a.Body != nil || a.BodySize == 0 {
		d = fmt.Sprintf("%d bytes %s", a.BodySize, excerpt(a.Body))
	} else {
		d = fmt.Sprintf("%d bytes (sha256 %x...)", a.BodySize, a.BodySHA256[:8])
	}
	if a.BodyErr != nil {
		d += fmt.Sprintf(" (cut short: %v)", a.BodyErr)
	}
	return d
}

func describeWant(want string, sum [sha256.Size]byte) string {
	if len(want) > 64 {
		return fmt.Sprintf("%d bytes %s (sha256 %x...)", len(want), excerpt([]byte(want)), sum[:8])
	}
	return fmt.Sprintf("%d bytes %s", len(want), excerpt([]byte(want)))
}

// excerpt quotes up to 64 bytes of p.
func excerpt(p []byte) string {
	if len(p) <= 64 {
		return fmt.Sprintf("%q", p)
	}
	return fmt.Sprintf("%q...", bytes.Clone(p[:64]))
}
