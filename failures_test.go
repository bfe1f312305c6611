package retryhttp

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// The ring keeps the last maxFailures failures, newest first, and counts
// every one.
func TestFailureRing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		added int
		want  []int // attempts of the failures kept, newest first
	}{
		{"empty", 0, nil},
		{"one", 1, []int{1}},
		{"full", maxFailures, countdown(maxFailures, 1)},
		{"wrapped", maxFailures + 5, countdown(maxFailures+5, 6)},
		{"wrapped twice", 3*maxFailures + 1, countdown(3*maxFailures+1, 2*maxFailures+2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r failureRing
			for i := 1; i <= tt.added; i++ {
				r.add(Failure{Attempts: i})
			}
			got, n := r.recent()
			var attempts []int
			for _, f := range got {
				attempts = append(attempts, f.Attempts)
			}
			assert.Equal(t, tt.want, attempts, "got %v, want %v", attempts, tt.want)
			assert.Equal(t, uint64(tt.added), n, "got %d recorded, want %d", n, tt.added)
		})
	}
}

// countdown returns from, from-1, ..., to.
func countdown(from, to int) []int {
	var s []int
	for i := from; i >= to; i-- {
		s = append(s, i)
	}
	return s
}

// clip keeps texts within maxFailureText bytes, valid UTF-8, and marks a
// cut.
func TestClip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		cut      bool
	}{
		{"short", "connection refused", false},
		{"at the bound", strings.Repeat("a", maxFailureText), false},
		{"one over", strings.Repeat("a", maxFailureText+1), true},
		{"multibyte at the cut", strings.Repeat("é", maxFailureText), true},
		{"long", strings.Repeat("x", 1<<20), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := clip(tt.in)
			assert.LessOrEqual(t, len(got), maxFailureText, "got %d bytes", len(got))
			assert.True(t, utf8.ValidString(got), "got invalid UTF-8 %q", got)
			assert.Equal(t, tt.cut, strings.HasSuffix(got, "…"), "got %q", got)
			if !tt.cut {
				assert.Equal(t, tt.in, got)
			}
		})
	}
}

// A request that succeeds records nothing, and costs no allocation.
func TestNoteFailureSuccessAllocatesNothing(t *testing.T) {
	st := &state{}
	c := &call{st: st, host: &host{name: "api.test"}}
	for _, tt := range []struct {
		status, attempts int
	}{{200, 1}, {200, 3}, {404, 2}, {503, 1}, {429, 1}} {
		c.tried = tt.attempts
		resp := newStatusResponse(tt.status)
		allocs := testing.AllocsPerRun(100, func() { c.noteFailure(resp, nil) })
		assert.Zero(t, allocs, "status %d after %d attempts: got %v allocations", tt.status, tt.attempts, allocs)
	}
	_, n := st.failures.recent()
	assert.Zero(t, n, "got %d failures recorded, want none", n)
}

func newStatusResponse(status int) *http.Response {
	return &http.Response{StatusCode: status, Status: strconv.Itoa(status)}
}
