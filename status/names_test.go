package status

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"
	"unicode"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/dial"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keysOf returns the JSON keys that the fields of a value of type t
// have on the page: each field's name in lowerCamel case, followed by
// "Ms" for a duration; the fields of an embedded struct as its own. The
// fields named in leave are left out.
func keysOf(t reflect.Type, leave ...string) []string {
	var keys []string
	for i := range t.NumField() {
		switch f := t.Field(i); {
		case slices.Contains(leave, f.Name):
		case f.Anonymous:
			keys = append(keys, keysOf(f.Type, leave...)...)
		default:
			r := []rune(f.Name)
			key := string(unicode.ToLower(r[0])) + string(r[1:])
			if f.Type == reflect.TypeFor[time.Duration]() {
				key += "Ms"
			}
			keys = append(keys, key)
		}
	}
	return keys
}

// The page's JSON says each value in the word of the Go field it shows:
// the key of each field of Stats, Counters, HostStats, Hold, BufferStats,
// Failure and dial.Window is its name in lowerCamel, with "Ms" after a
// duration's. The keys no field has are the few the page derives, which
// Handler documents. A field added to one of them fails this test until
// the page shows it.
func TestJSONKeysAreFieldNames(t *testing.T) {
	t.Parallel()
	now := time.Now()
	hold := retryhttp.Hold{Rule: "*", Status: 429, Since: now, Until: now.Add(time.Minute)}
	s := retryhttp.Stats{
		Rules:     map[string]retryhttp.Counters{"*": {}},
		Hosts:     map[string]retryhttp.HostStats{"api.test": {Holds: []retryhttp.Hold{hold}}},
		PolicyErr: errors.New("retryhttp: invalid policy"),
		Failures:  []retryhttp.Failure{{Time: now, Host: "api.test", Method: "GET", Path: "/", Status: 503, Attempts: 2}},
		Failed:    1,
		DialBackoff: []dial.Window{{Network: "tcp", Addr: "api.test:443", Until: now, Hosts: []string{"api.test"}},
			{Network: "tcp", Addr: "proxy.test:3128", Until: now}},
	}
	var buf bytes.Buffer
	require.NoError(t, renderJSON(&buf, read(s, now)))
	var p map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &p))
	object := func(v any) map[string]any {
		switch v := v.(type) {
		case map[string]any:
			return v
		case []any:
			require.NotEmpty(t, v)
			return v[0].(map[string]any)
		}
		require.Failf(t, "no object", "%v", v)
		return nil
	}
	counters := keysOf(reflect.TypeFor[retryhttp.Counters](), "Histogram")
	tests := []struct {
		name    string
		object  map[string]any
		fields  []string // the keys of Go fields
		derived []string
	}{
		{"Stats", p, keysOf(reflect.TypeFor[retryhttp.Stats](), "Rules", "DialBackoff"),
			[]string{"version", "time", "used", "dialer", "moreHosts", "otherDialBackoff", "moreOtherDialBackoff"}},
		{"Stats.Total", object(p["total"]), counters, nil},
		{"Stats.Buffer", object(p["buffer"]), keysOf(reflect.TypeFor[retryhttp.BufferStats]()), nil},
		{"Stats.Hosts", object(p["hosts"]), keysOf(reflect.TypeFor[retryhttp.HostStats](), "Histogram"),
			[]string{"host", "moreHolds", "dialBackoff", "moreDialBackoff", "recentFailures"}},
		{"HostStats.Holds", object(object(p["hosts"])["holds"]), keysOf(reflect.TypeFor[retryhttp.Hold]()),
			[]string{"remainingMs"}},
		{"dial.Window", object(object(p["hosts"])["dialBackoff"]), keysOf(reflect.TypeFor[dial.Window](), "Hosts"),
			[]string{"remainingMs"}},
		{"other dial.Window", object(p["otherDialBackoff"]), keysOf(reflect.TypeFor[dial.Window](), "Hosts"),
			[]string{"remainingMs"}},
		{"Stats.Failures", object(p["failures"]), keysOf(reflect.TypeFor[retryhttp.Failure]()), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := append(slices.Clone(tt.fields), tt.derived...)
			assert.ElementsMatch(t, want, slices.Collect(maps.Keys(tt.object)))
		})
	}
}
