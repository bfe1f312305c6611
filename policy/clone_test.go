package policy

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fullConfig returns a Config with every field set somewhere, down to the
// slices and pointers of its rules, so that a copy that shares any of them
// shows: validConfig's rules, and a third whose waits come from b.
func fullConfig(b Backoff) *Config {
	c := validConfig()
	c.Rules = append(c.Rules, Rule{
		Name: []Name{{Host: "api.example.com:443", Method: "PUT", Path: "/v1/"}},
		Retry: &Retry{MaxAttempts: 6, Backoff: b, RetryableStatusCodes: []int{503}, PerAttemptTimeout: time.Second, RetryNonIdempotent: true,
			ReadAhead: 1 << 20},
		ErrorCodes: awsCodes(),
	})
	c.Rules[1].Hedge.MaxExtraLoad = 0.02
	c.DelayHeaders = []DelayHeader{{Name: "X-RateLimit-Reset", Format: DelayUnixSeconds, Remaining: "X-RateLimit-Remaining"}}
	c.Hold = &Hold{}
	c.Pace = &Pace{}
	c.Admission = &Admission{MaxConcurrency: 100, MaxWait: time.Second}
	return c
}

// Clone copies every slice and pointer: the copy and the original share
// no memory that either could change, whatever Backoff of the package's
// it holds.
func TestCloneSharesNothing(t *testing.T) {
	t.Parallel()
	steps := func() []time.Duration { return []time.Duration{time.Second, 2 * time.Second} }
	for _, b := range []Backoff{
		Exponential{Initial: time.Second, Multiplier: 2},
		&Exponential{Initial: time.Second, Multiplier: 2},
		&FullJitter{Initial: time.Second, Multiplier: 2},
		&GoogleAPI{Max: time.Minute},
		Table{Steps: steps()},
		&Table{Steps: steps()},
	} {
		t.Run(reflect.TypeOf(b).String(), func(t *testing.T) {
			t.Parallel()
			c := fullConfig(b)
			require.NoError(t, c.Validate())
			d := c.Clone()
			assert.Equal(t, c, d, "got a copy unlike its original")
			assert.Equal(t, reflect.TypeOf(b), reflect.TypeOf(d.Rules[2].Retry.Backoff))
			shared := sharedMemory(reflect.ValueOf(c), reflect.ValueOf(d), "Config")
			assert.Empty(t, shared, "got memory shared by the copy and its original")
		})
	}
}

// sharedMemory walks a and b, values of one type, and names every
// pointer, slice or map that they share: what an edit of one would change
// in the other. Interfaces are followed to their dynamic values, so a
// Backoff held by pointer counts too.
func sharedMemory(a, b reflect.Value, at string) []string {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return nil
		}
		// Values of no size may share an address, and hold nothing to
		// edit: Go places them all at one.
		if a.Pointer() == b.Pointer() && a.Type().Elem().Size() > 0 {
			return []string{at}
		}
		return sharedMemory(a.Elem(), b.Elem(), at)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return nil
		}
		return sharedMemory(a.Elem(), b.Elem(), at)
	case reflect.Slice:
		if a.Len() == 0 || b.Len() == 0 {
			return nil
		}
		if a.Pointer() == b.Pointer() {
			return []string{at}
		}
		var shared []string
		for i := range min(a.Len(), b.Len()) {
			shared = append(shared, sharedMemory(a.Index(i), b.Index(i), at+"[]")...)
		}
		return shared
	case reflect.Struct:
		var shared []string
		for i := range a.NumField() {
			shared = append(shared, sharedMemory(a.Field(i), b.Field(i), at+"."+a.Type().Field(i).Name)...)
		}
		return shared
	case reflect.Map, reflect.Func, reflect.Chan:
		return []string{at + " (a " + a.Kind().String() + ", which Clone cannot copy)"}
	}
	return nil
}

// Every field of fullConfig is set in some rule, so that a field added
// to Config later, and left out of Clone, is caught by
// TestCloneSharesNothing.
func TestFullConfigSetsEveryField(t *testing.T) {
	t.Parallel()
	set := map[string]bool{}
	setFields(reflect.ValueOf(fullConfig(&Table{Steps: []time.Duration{1}})), "Config", set)
	var unset []string
	for field, ok := range set {
		// A switch is on while its Off is false, as it is here.
		if !ok && !strings.HasSuffix(field, ".Off") {
			unset = append(unset, field)
		}
	}
	assert.Empty(t, unset, "got fields that fullConfig leaves zero")
}

// setFields records in set, for each field under v by its path (list
// indices left out), whether it is set in any element.
func setFields(v reflect.Value, at string, set map[string]bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			setFields(v.Elem(), at, set)
		}
	case reflect.Slice:
		for i := range v.Len() {
			setFields(v.Index(i), at+"[]", set)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := at + "." + v.Type().Field(i).Name
			set[f] = set[f] || !v.Field(i).IsZero()
			setFields(v.Field(i), f, set)
		}
	}
}

// A nil stays nil, an empty list stays empty, and a nil pointer inside a
// Backoff stays one, for Validate to refuse as it would the original.
func TestCloneKeepsWhatItCopies(t *testing.T) {
	t.Parallel()
	assert.Nil(t, (*Config)(nil).Clone(), "a nil Config: got a copy, want nil")
	assert.Equal(t, &Config{}, (&Config{}).Clone())
	empty := &Config{Rules: []Rule{{Name: []Name{}}}, DelayHeaders: []DelayHeader{}}
	d := empty.Clone()
	assert.NotNil(t, d.Rules[0].Name, "got a nil name list for an empty one")
	assert.NotNil(t, d.DelayHeaders, "got nil delay headers for an empty list")

	c := &Config{Rules: []Rule{{Name: []Name{{}}, Retry: &Retry{MaxAttempts: 2, Backoff: (*Table)(nil)}}}}
	assert.Equal(t, c.Validate(), c.Clone().Validate(), "the copy validates otherwise")
}

// A caller's own Backoff is shared, as documented: the package cannot
// know how to copy it.
func TestCloneSharesTheCallersBackoff(t *testing.T) {
	t.Parallel()
	own := &countingBackoff{}
	c := &Config{Rules: []Rule{{Name: []Name{{}}, Retry: &Retry{MaxAttempts: 2, Backoff: own}}}}
	assert.Same(t, own, c.Clone().Rules[0].Retry.Backoff)
}

type countingBackoff struct{ n int }

func (b *countingBackoff) Duration(int) time.Duration { return time.Duration(b.n) }
