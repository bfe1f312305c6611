package policy

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCut(t *testing.T) {
	t.Parallel()
	a := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", ""},
		{"short", "abc", "abc"},
		{"exactly the limit", a(64), a(64)},
		{"one past the limit", a(65), a(64) + "..."},
		{"10 KB", a(10 << 10), a(64) + "..."},
		{"2-byte rune ends at the limit", a(62) + "é" + a(10), a(62) + "é..."},
		{"2-byte rune straddles the limit", a(63) + "é" + a(10), a(63) + "..."},
		{"3-byte rune straddles by one", a(63) + "€" + a(10), a(63) + "..."},
		{"3-byte rune straddles by two", a(62) + "€" + a(10), a(62) + "..."},
		{"4-byte rune straddles by three", a(61) + "😀" + a(10), a(61) + "..."},
		{"4-byte rune ends at the limit", a(60) + "😀" + a(10), a(60) + "😀..."},
		{"rune starts at the limit", a(64) + "😀", a(64) + "..."},
		{"invalid UTF-8 cut without a long walk", strings.Repeat("\x80", 100), strings.Repeat("\x80", 61) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := cut(tt.in, maxValueLen)
			assert.Equal(t, tt.want, got, "got %q, want %q", got, tt.want)
			assert.LessOrEqual(t, len(got), maxValueLen+len("..."), "got %d bytes, want at most %d", len(got), maxValueLen+3)
			if utf8.ValidString(tt.in) {
				assert.True(t, utf8.ValidString(got), "got %q, want valid UTF-8", got)
			}
		})
	}
}

// TestLongValuesAreCut sends a value of 10 KB through every kind of path
// that builds a FieldError, and checks that the value comes back cut.
func TestLongValuesAreCut(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 10<<10)
	parse := func(input string) func() error {
		return func() error {
			_, err := ParseConfig([]byte(input))
			return err
		}
	}
	validate := func(mutate func(c *Config)) func() error {
		return func() error {
			c := validConfig()
			mutate(c)
			return c.Validate()
		}
	}
	tests := []struct {
		name  string
		run   func() error
		field string
	}{
		{"unknown key's JSON value", parse(`{"x": "` + long + `"}`), "x"},
		{"type error's JSON value", parse(`{"methodConfig": [{"name": [{"host": ["` + long + `"]}]}]}`),
			"methodConfig[0].name[0].host"},
		{"duration string", parse(`{"maxServerDelay": "` + long + `"}`), "maxServerDelay"},
		{"method in JSON", parse(`{"methodConfig": [{"name": [{"method": "` + long + ` "}]}]}`),
			"methodConfig[0].name[0].method"},
		{"method in Go", validate(func(c *Config) { c.Rules[0].Name[0].Method = long + " " }),
			"Rules[0].Name[0].Method"},
		{"path in Go", validate(func(c *Config) { c.Rules[0].Name[0].Path = long }),
			"Rules[0].Name[0].Path"},
		{"header name in JSON", parse(`{"serverDelayHeaders": [{"name": "` + long + ` ", "format": "seconds"}]}`),
			"serverDelayHeaders[0].name"},
		{"header format in Go", func() error {
			return (&Config{DelayHeaders: []DelayHeader{{Name: "A", Format: DelayFormat(long)}}}).Validate()
		}, "DelayHeaders[0].Format"},
		{"method in a rule on its own", func() error {
			return (&Rule{Name: []Name{{Method: long + " "}}}).Validate()
		}, "Name[0].Method"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.run()
			var fe *FieldError
			require.ErrorAs(t, err, &fe, "got %v, want a *FieldError", err)
			assert.Equal(t, tt.field, fe.Field, "got field %q, want %q", fe.Field, tt.field)
			assert.True(t, strings.HasSuffix(fe.Value, "..."), "got value %q, want it cut with \"...\"", fe.Value)
			assert.LessOrEqual(t, len(fe.Value), maxValueLen+3, "got a value of %d bytes, want at most %d", len(fe.Value), maxValueLen+3)
			assert.Less(t, len(err.Error()), 300, "got a message of %d bytes, want a short one", len(err.Error()))
		})
	}
}

// An unknown key of 10 KB is a field name the caller wrote: it is cut too.
func TestLongUnknownKeyIsCut(t *testing.T) {
	t.Parallel()
	key := strings.Repeat("x", 10<<10)
	_, err := ParseConfig([]byte(`{"methodConfig": [{"name": [{}], "` + key + `": 1}]}`))
	var fe *FieldError
	require.ErrorAs(t, err, &fe, "got %v, want a *FieldError", err)
	assert.True(t, strings.HasPrefix(fe.Field, "methodConfig[0].xxx"), "got field %q", fe.Field)
	assert.LessOrEqual(t, len(fe.Field), maxFieldLen+3, "got a field of %d bytes", len(fe.Field))
	assert.Less(t, len(err.Error()), 300, "got a message of %d bytes, want a short one", len(err.Error()))
}
