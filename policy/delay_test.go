package policy

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// headers returns n valid delay headers with distinct names.
func headers(n int) []DelayHeader {
	hs := make([]DelayHeader, n)
	for i := range hs {
		hs[i] = DelayHeader{Name: fmt.Sprintf("X-Delay-%d", i), Format: DelaySeconds}
	}
	return hs
}

func TestValidateDelayHeadersAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		hs   []DelayHeader
	}{
		{"none", nil},
		{"empty", []DelayHeader{}},
		{"every format", []DelayHeader{
			{Name: "X-RateLimit-Reset", Format: DelaySeconds},
			{Name: "RateLimit-Reset", Format: DelayMilliseconds},
			{Name: "x-amz-retry-after", Format: DelayUnixSeconds},
			{Name: "X-Retry-At", Format: DelayHTTPDate},
		}},
		{"16 headers", headers(16)},
		{"token characters", []DelayHeader{{Name: "x!#$%&'*+-.^_`|~9", Format: DelaySeconds}}},
		{"a name that contains Retry-After", []DelayHeader{{Name: "X-Retry-After", Format: DelaySeconds}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := validConfig()
			c.DelayHeaders = tt.hs
			err := c.Validate()
			assert.NoError(t, err, "got %v, want nil", err)
		})
	}
}

func TestValidateDelayHeadersRejects(t *testing.T) {
	t.Parallel()
	const p = "DelayHeaders"
	tests := []struct {
		name  string
		hs    []DelayHeader
		field string
		value string
	}{
		{"empty name", []DelayHeader{{Name: "", Format: DelaySeconds}}, p + "[0].Name", `""`},
		{"name with a space", []DelayHeader{{Name: "X-RateLimit-Reset", Format: DelaySeconds}, {Name: "X Reset", Format: DelaySeconds}},
			p + "[1].Name", `"X Reset"`},
		{"name with a colon", []DelayHeader{{Name: "X-Reset:", Format: DelaySeconds}}, p + "[0].Name", `"X-Reset:"`},
		{"name with a newline", []DelayHeader{{Name: "X-Reset\r\n", Format: DelaySeconds}}, p + "[0].Name", `"X-Reset\r\n"`},
		{"non-ASCII name", []DelayHeader{{Name: "X-Résumé", Format: DelaySeconds}}, p + "[0].Name", `"X-Résumé"`},
		{"Retry-After", []DelayHeader{{Name: "Retry-After", Format: DelaySeconds}}, p + "[0].Name", `"Retry-After"`},
		{"retry-after in lower case", []DelayHeader{{Name: "retry-after", Format: DelayHTTPDate}}, p + "[0].Name", `"retry-after"`},
		{"X-Retry-Pushback-Ms", []DelayHeader{{Name: "X-RateLimit-Reset", Format: DelaySeconds}, {Name: "x-retry-pushback-ms", Format: DelayMilliseconds}},
			p + "[1].Name", `"x-retry-pushback-ms"`},
		{"repeated name", []DelayHeader{{Name: "A", Format: DelaySeconds}, {Name: "B", Format: DelaySeconds}, {Name: "A", Format: DelayMilliseconds}},
			p + "[2].Name", `"A"`},
		{"repeated name in other case", []DelayHeader{{Name: "X-RateLimit-Reset", Format: DelaySeconds}, {Name: "x-ratelimit-reset", Format: DelaySeconds}},
			p + "[1].Name", `"x-ratelimit-reset"`},
		{"empty format", []DelayHeader{{Name: "X-RateLimit-Reset", Format: ""}}, p + "[0].Format", `""`},
		{"unknown format", []DelayHeader{{Name: "X-RateLimit-Reset", Format: "minutes"}}, p + "[0].Format", `"minutes"`},
		{"format in other case", []DelayHeader{{Name: "X-RateLimit-Reset", Format: "Seconds"}}, p + "[0].Format", `"Seconds"`},
		{"17 headers", headers(17), p, "17 headers"},
		{"name checked before format", []DelayHeader{{Name: "", Format: "minutes"}}, p + "[0].Name", `""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := validConfig()
			c.DelayHeaders = tt.hs
			err := c.Validate()
			requireFieldError(t, err, tt.field, tt.value)
		})
	}
}

func TestValidateDelayHeadersMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		hs   []DelayHeader
		want string
	}{
		{[]DelayHeader{{Name: "A", Format: DelaySeconds}, {Name: "a", Format: DelaySeconds}},
			`policy: DelayHeaders[1].Name: "a": repeats DelayHeaders[0].Name`},
		{[]DelayHeader{{Name: "Retry-After", Format: DelaySeconds}},
			`policy: DelayHeaders[0].Name: "Retry-After": is always read, before the listed headers; leave it out`},
		{[]DelayHeader{{Name: "A", Format: "s"}},
			`policy: DelayHeaders[0].Format: "s": must be one of "seconds", "milliseconds", "unixSeconds", "httpDate", "duration" and "rfc3339"`},
		{headers(20), "policy: DelayHeaders: 20 headers: must list at most 16 headers"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			err := (&Config{DelayHeaders: tt.hs}).Validate()
			require.Error(t, err, "got nil, want %q", tt.want)
			assert.Equal(t, tt.want, err.Error(), "got %q, want %q", err, tt.want)
		})
	}
}

func TestParseDelayHeaders(t *testing.T) {
	t.Parallel()
	c, err := ParseConfig([]byte(`{"serverDelayHeaders": [
		{"name": "X-RateLimit-Reset", "format": "seconds"},
		{"name": "ratelimit-reset", "format": "milliseconds"},
		{"format": "unixSeconds", "name": "x-amz-retry-after"},
		{"name": "X-Retry-At", "format": "httpDate"}
	]}`))
	require.NoError(t, err, "got %v, want nil", err)
	want := []DelayHeader{
		{Name: "X-RateLimit-Reset", Format: DelaySeconds},
		{Name: "ratelimit-reset", Format: DelayMilliseconds},
		{Name: "x-amz-retry-after", Format: DelayUnixSeconds},
		{Name: "X-Retry-At", Format: DelayHTTPDate},
	}
	assert.Equal(t, want, c.DelayHeaders, "got %+v, want %+v", c.DelayHeaders, want)

	c, err = ParseConfig([]byte(`{"serverDelayHeaders": null}`))
	require.NoError(t, err, "got %v, want nil", err)
	assert.Nil(t, c.DelayHeaders, "got %+v, want nil", c.DelayHeaders)
}

func TestParseDelayHeadersRejects(t *testing.T) {
	t.Parallel()
	const p = "serverDelayHeaders"
	tests := []struct {
		name  string
		input string
		field string
		value string
	}{
		{"as object", `{"serverDelayHeaders": {"name": "A"}}`, p, `{"name":"A"}`},
		{"entry as string", `{"serverDelayHeaders": ["X-RateLimit-Reset"]}`, p + "[0]", `"X-RateLimit-Reset"`},
		{"unknown key", `{"serverDelayHeaders": [{"name": "A", "format": "seconds", "cap": "1s"}]}`, p + "[0].cap", `"1s"`},
		{"key in other case", `{"serverDelayHeaders": [{"Name": "A", "format": "seconds"}]}`, p + "[0].Name", `"A"`},
		{"repeated key", `{"serverDelayHeaders": [{"name": "A", "name": "B", "format": "seconds"}]}`, p + "[0].name", `"B"`},
		{"name as number", `{"serverDelayHeaders": [{"name": 5, "format": "seconds"}]}`, p + "[0].name", "5"},
		{"format as number", `{"serverDelayHeaders": [{"name": "A", "format": 1000}]}`, p + "[0].format", "1000"},
		{"name left out", `{"serverDelayHeaders": [{"format": "seconds"}]}`, p + "[0].name", `""`},
		{"format left out", `{"serverDelayHeaders": [{"name": "A"}]}`, p + "[0].format", `""`},
		{"Retry-After", `{"serverDelayHeaders": [{"name": "Retry-After", "format": "httpDate"}]}`, p + "[0].name", `"Retry-After"`},
		{"repeated name", `{"serverDelayHeaders": [{"name": "A", "format": "seconds"}, {"name": "a", "format": "seconds"}]}`,
			p + "[1].name", `"a"`},
		{"too many", `{"serverDelayHeaders": [` + strings.TrimSuffix(strings.Repeat(`{"name": "A", "format": "seconds"},`, 17), ",") + `]}`,
			p, "17 headers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig([]byte(tt.input))
			assert.Nil(t, c, "got %+v, want nil", c)
			requireFieldError(t, err, tt.field, tt.value)
		})
	}
}

func TestServerDelayHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    *Config
		want []DelayHeader
	}{
		{"nil config", nil, nil},
		{"none", &Config{}, nil},
		{"empty", &Config{DelayHeaders: []DelayHeader{}}, nil},
		{"canonical names, order kept", &Config{DelayHeaders: []DelayHeader{
			{Name: "x-ratelimit-reset", Format: DelaySeconds},
			{Name: "RATELIMIT-RESET", Format: DelayMilliseconds},
			{Name: "x-amz-retry-after", Format: DelayUnixSeconds},
			{Name: "X-Retry-At", Format: DelayHTTPDate},
		}}, []DelayHeader{
			{Name: "X-Ratelimit-Reset", Format: DelaySeconds},
			{Name: "Ratelimit-Reset", Format: DelayMilliseconds},
			{Name: "X-Amz-Retry-After", Format: DelayUnixSeconds},
			{Name: "X-Retry-At", Format: DelayHTTPDate},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.c.ServerDelayHeaders()
			assert.Equal(t, tt.want, got, "got %+v, want %+v", got, tt.want)
		})
	}
}

// TestServerDelayHeadersIndexHeader checks what the canonical names are
// for: indexing a received header directly, whatever case the server and
// the configuration used.
func TestServerDelayHeadersIndexHeader(t *testing.T) {
	t.Parallel()
	c := &Config{DelayHeaders: []DelayHeader{{Name: "x-RATELIMIT-reset", Format: DelaySeconds}}}
	h := http.Header{}
	h.Set("X-RateLimit-Reset", "30")
	got := h[c.ServerDelayHeaders()[0].Name]
	assert.Equal(t, []string{"30"}, got, "got %q, want [\"30\"]", got)
}

func TestServerDelayHeadersIsACopy(t *testing.T) {
	t.Parallel()
	c := &Config{DelayHeaders: []DelayHeader{{Name: "X-A", Format: DelaySeconds}}}
	got := c.ServerDelayHeaders()
	got[0].Name = "X-B"
	assert.Equal(t, "X-A", c.DelayHeaders[0].Name, "got %q after changing the result, want X-A", c.DelayHeaders[0].Name)
	assert.Equal(t, "X-A", c.ServerDelayHeaders()[0].Name, "got %q on the next call, want X-A", c.ServerDelayHeaders()[0].Name)
}

// The formats of OpenAI's and Anthropic's reset headers, from JSON and Go,
// spelled exactly.
func TestDelayFormatsDurationAndRFC3339(t *testing.T) {
	t.Parallel()
	c, err := ParseConfig([]byte(`{"serverDelayHeaders": [
		{"name": "x-ratelimit-reset-requests", "format": "duration"},
		{"name": "anthropic-ratelimit-requests-reset", "format": "rfc3339"}
	]}`))
	require.NoError(t, err, "got %v, want nil", err)
	want := []DelayHeader{
		{Name: "x-ratelimit-reset-requests", Format: DelayDuration},
		{Name: "anthropic-ratelimit-requests-reset", Format: DelayRFC3339},
	}
	assert.Equal(t, want, c.DelayHeaders, "got %+v, want %+v", c.DelayHeaders, want)

	for _, f := range []DelayFormat{"Duration", "RFC3339", "rfc3339nano", "goDuration"} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			c := validConfig()
			c.DelayHeaders = []DelayHeader{{Name: "X-Reset", Format: f}}
			requireFieldError(t, c.Validate(), "DelayHeaders[0].Format", strconv.Quote(string(f)))
		})
	}
}

func TestDelayHeaderRemaining(t *testing.T) {
	t.Parallel()
	const p = "DelayHeaders[0].Remaining"
	github := DelayHeader{Name: "X-RateLimit-Reset", Format: DelayUnixSeconds, Remaining: "X-RateLimit-Remaining"}
	tests := []struct {
		name      string
		remaining string
		want      string // the whole message; "" for valid
	}{
		{"GitHub's", "X-RateLimit-Remaining", ""},
		{"none", "", ""},
		{"token characters", "x!#$%&'*+-.^_`|~9", ""},
		{"shared with another entry", "x-shared", ""},
		{"a space", "X Remaining", `policy: ` + p + `: "X Remaining": must be an HTTP header name`},
		{"a colon", "X-Remaining:", `policy: ` + p + `: "X-Remaining:": must be an HTTP header name`},
		{"non-ASCII", "X-Résumé", `policy: ` + p + `: "X-Résumé": must be an HTTP header name`},
		{"the name itself", "x-ratelimit-reset", `policy: ` + p + `: "x-ratelimit-reset": must name another header than Name`},
		{"Retry-After", "retry-after",
			`policy: ` + p + `: "retry-after": is always read as a delay; it cannot count the requests left`},
		{"X-Retry-Pushback-Ms", "X-Retry-Pushback-Ms",
			`policy: ` + p + `: "X-Retry-Pushback-Ms": is always read as a delay; it cannot count the requests left`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := github
			h.Remaining = tt.remaining
			c := &Config{DelayHeaders: []DelayHeader{h, {Name: "X-Other-Reset", Format: DelaySeconds, Remaining: "X-Shared"}}}
			err := c.Validate()
			if tt.want == "" {
				assert.NoError(t, err, "got %v, want nil", err)
				return
			}
			requireFieldError(t, err, p, strconv.Quote(tt.remaining))
			assert.Equal(t, tt.want, err.Error(), "got %q, want %q", err, tt.want)
		})
	}
	t.Run("format checked first", func(t *testing.T) {
		t.Parallel()
		c := &Config{DelayHeaders: []DelayHeader{{Name: "A", Format: "s", Remaining: "A"}}}
		requireFieldError(t, c.Validate(), "DelayHeaders[0].Format", `"s"`)
	})
}

func TestParseDelayHeaderRemaining(t *testing.T) {
	t.Parallel()
	c, err := ParseConfig([]byte(`{"serverDelayHeaders": [
		{"name": "X-RateLimit-Reset", "format": "unixSeconds", "remaining": "X-RateLimit-Remaining"},
		{"name": "RateLimit-Reset", "format": "seconds"},
		{"name": "X-RateLimit-Reset-After", "format": "seconds", "remaining": null}
	]}`))
	require.NoError(t, err, "got %v, want nil", err)
	want := []DelayHeader{
		{Name: "X-RateLimit-Reset", Format: DelayUnixSeconds, Remaining: "X-RateLimit-Remaining"},
		{Name: "RateLimit-Reset", Format: DelaySeconds},
		{Name: "X-RateLimit-Reset-After", Format: DelaySeconds},
	}
	assert.Equal(t, want, c.DelayHeaders, "got %+v, want %+v", c.DelayHeaders, want)

	tests := []struct {
		name, input, field, value string
	}{
		{"as number", `[{"name": "A", "format": "seconds", "remaining": 0}]`, "serverDelayHeaders[0].remaining", "0"},
		{"repeated", `[{"name": "A", "format": "seconds", "remaining": "B", "remaining": "C"}]`,
			"serverDelayHeaders[0].remaining", `"C"`},
		{"in other case", `[{"name": "A", "format": "seconds", "Remaining": "B"}]`, "serverDelayHeaders[0].Remaining", `"B"`},
		{"the name itself", `[{"name": "A", "format": "seconds", "remaining": "a"}]`, "serverDelayHeaders[0].remaining", `"a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig([]byte(`{"serverDelayHeaders": ` + tt.input + `}`))
			assert.Nil(t, c, "got %+v, want nil", c)
			requireFieldError(t, err, tt.field, tt.value)
		})
	}
}

func TestServerDelayHeadersRemainingCanonical(t *testing.T) {
	t.Parallel()
	c := &Config{DelayHeaders: []DelayHeader{
		{Name: "x-ratelimit-reset", Format: DelayUnixSeconds, Remaining: "x-RATELIMIT-remaining"},
		{Name: "ratelimit-reset", Format: DelaySeconds},
	}}
	want := []DelayHeader{
		{Name: "X-Ratelimit-Reset", Format: DelayUnixSeconds, Remaining: "X-Ratelimit-Remaining"},
		{Name: "Ratelimit-Reset", Format: DelaySeconds},
	}
	got := c.ServerDelayHeaders()
	assert.Equal(t, want, got, "got %+v, want %+v", got, want)
	h := http.Header{}
	h.Set("X-RateLimit-Remaining", "0")
	assert.Equal(t, []string{"0"}, h[got[0].Remaining], "got %q, want [\"0\"]", h[got[0].Remaining])
}
