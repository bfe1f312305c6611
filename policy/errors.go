package policy

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// ErrInvalid is matched, through [errors.Is], by every error that
// [ParseConfig], [Config.Validate] and [Rule.Validate] return.
var ErrInvalid = errors.New("policy: invalid config")

// maxValueLen is the longest FieldError.Value, in bytes, that the package
// returns: a longer value is cut to at most this length, on a UTF-8
// boundary, and "..." is appended. A mistake in a value of 10 KB then
// still reads as one line of an error message.
const maxValueLen = 64

// FieldError reports one bad value in a configuration, in the words its
// author wrote. Field is the path to it: in JSON spelling from
// [ParseConfig], such as "methodConfig[0].retryPolicy.maxAttempts", and
// by Go field names from [Config.Validate] and [Rule.Validate], such as
// "Rules[0].Retry.MaxAttempts" (a package's backoff is reached by its type
// assertion: "Rules[0].Retry.Backoff.(policy.Table).Steps[1]"). Value is
// the offending value as written (JSON text from ParseConfig, the Go value
// from Validate; empty when the problem is not one value), cut to at most
// 64 bytes plus "..." when it is longer, never inside a UTF-8 sequence;
// Reason says what is wrong, naming any other field in the same spelling.
//
// A *FieldError matches [ErrInvalid] through [errors.Is].
type FieldError struct {
	Field  string
	Value  string
	Reason string
}

// Error returns "policy: Field: Value: Reason", leaving out Field or Value
// when they are empty.
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString("policy: ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	if e.Value != "" {
		b.WriteString(e.Value)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Is reports whether target is [ErrInvalid], so that callers can tell a bad
// configuration from other failures without knowing the field.
func (e *FieldError) Is(target error) bool {
	return target == ErrInvalid
}

// maxFieldLen is the longest Field kept in a FieldError: room for every
// path a valid config has, while an unknown key of any length is cut.
const maxFieldLen = 2 * maxValueLen

// clipped cuts the Value of a *FieldError in err to maxValueLen, and its
// Field to maxFieldLen. Every exported function that returns a FieldError
// returns it through here, so that no path (a JSON excerpt or key, a
// duration string, a header name, a Go value) can hand a caller's whole
// input back in a message.
func clipped(err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		fe.Value = cut(fe.Value, maxValueLen)
		fe.Field = cut(fe.Field, maxFieldLen)
	}
	return err
}

// cut returns s when it is at most limit bytes long, and otherwise its
// first limit bytes or fewer, ending before any UTF-8 sequence that would
// be split, followed by "...".
func cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	end := limit
	// s[end] is the first byte left out; while it continues a sequence,
	// the sequence it belongs to would be split, so leave out its start
	// too. At most utf8.UTFMax-1 steps back, so that invalid UTF-8 (a
	// long run of continuation bytes) is cut at once.
	for back := 0; back < utf8.UTFMax-1 && end > 0 && !utf8.RuneStart(s[end]); back++ {
		end--
	}
	return s[:end] + "..."
}
