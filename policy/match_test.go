package policy

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newRequest(t *testing.T, method, target string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, target, nil)
	require.NoError(t, err, "got %v, want a request for %s", err, target)
	// NewRequest turns "" into GET; keep the method as given, as a
	// hand-built request would.
	req.Method = method
	return req
}

func TestNameMatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		n      Name
		method string
		url    string
		want   bool
	}{
		{"zero name, GET", Name{}, "GET", "http://a.example/x", true},
		{"zero name, POST", Name{}, "POST", "https://b.example:8443/", true},

		{"host equal", Name{Host: "api.example.com"}, "GET", "https://api.example.com/v3", true},
		{"host case", Name{Host: "API.Example.com"}, "GET", "https://api.EXAMPLE.com/", true},
		{"host differs", Name{Host: "api.example.com"}, "GET", "https://www.example.com/", false},
		{"host is a suffix only", Name{Host: "example.com"}, "GET", "https://api.example.com/", false},
		{"host is a prefix only", Name{Host: "api"}, "GET", "https://api.example.com/", false},
		{"no port in name, port in URL", Name{Host: "api.example.com"}, "GET", "http://api.example.com:8080/", true},
		{"same port", Name{Host: "api.example.com:8080"}, "GET", "http://api.example.com:8080/", true},
		{"other port", Name{Host: "api.example.com:8080"}, "GET", "http://api.example.com:9090/", false},
		{"port in name, none in URL, other default", Name{Host: "api.example.com:8080"}, "GET", "http://api.example.com/", false},
		{"port 443, https default", Name{Host: "api.example.com:443"}, "GET", "https://api.example.com/", true},
		{"port 80, http default", Name{Host: "api.example.com:80"}, "GET", "http://api.example.com/", true},
		{"port 443, http default", Name{Host: "api.example.com:443"}, "GET", "http://api.example.com/", false},
		{"port in name, host differs", Name{Host: "api.example.com:80"}, "GET", "http://www.example.com:80/", false},
		{"bare IPv6 name", Name{Host: "::1"}, "GET", "http://[::1]:8080/", true},
		{"bracketed IPv6 name", Name{Host: "[::1]"}, "GET", "http://[::1]:8080/", true},
		{"IPv6 name, no port in URL", Name{Host: "[::1]"}, "GET", "http://[::1]/", true},
		{"IPv6 with port", Name{Host: "[::1]:8080"}, "GET", "http://[::1]:8080/", true},
		{"IPv6 other port", Name{Host: "[::1]:8080"}, "GET", "http://[::1]:9090/", false},
		{"IPv6 other address", Name{Host: "[::1]:8080"}, "GET", "http://[::2]:8080/", false},
		{"IPv6 case", Name{Host: "[FE80::1]"}, "GET", "http://[fe80::1]/", true},
		{"IPv4 with port", Name{Host: "127.0.0.1:8080"}, "GET", "http://127.0.0.1:8080/", true},

		{"method equal", Name{Method: "GET"}, "GET", "http://a.example/", true},
		{"empty method is GET", Name{Method: "GET"}, "", "http://a.example/", true},
		{"method case", Name{Method: "GET"}, "get", "http://a.example/", false},
		{"method differs", Name{Method: "GET"}, "POST", "http://a.example/", false},
		{"POST name, empty method", Name{Method: "POST"}, "", "http://a.example/", false},

		{"path equal", Name{Path: "/v3"}, "GET", "http://a.example/v3", true},
		{"path below", Name{Path: "/v3"}, "GET", "http://a.example/v3/x", true},
		{"path on no boundary", Name{Path: "/v3"}, "GET", "http://a.example/v30", false},
		{"slash path equal", Name{Path: "/v3/"}, "GET", "http://a.example/v3", true},
		{"slash path below", Name{Path: "/v3/"}, "GET", "http://a.example/v3/x", true},
		{"slash path on no boundary", Name{Path: "/v3/"}, "GET", "http://a.example/v30", false},
		{"path above", Name{Path: "/v3"}, "GET", "http://a.example/", false},
		{"path case", Name{Path: "/v3"}, "GET", "http://a.example/V3", false},
		{"deep path", Name{Path: "/a/b"}, "GET", "http://a.example/a/b/c", true},
		{"deep path on no boundary", Name{Path: "/a/b"}, "GET", "http://a.example/a/bc", false},
		{"root matches all", Name{Path: "/"}, "GET", "http://a.example/any/thing", true},
		{"root matches empty path", Name{Path: "/"}, "GET", "http://a.example", true},
		{"empty path is root", Name{Path: "/v3"}, "GET", "http://a.example", false},
		{"query ignored", Name{Path: "/v3"}, "GET", "http://a.example/v3?x=/v30", true},

		{"all fields match", Name{Host: "api.example.com", Method: "GET", Path: "/v3/"}, "GET", "https://api.example.com/v3/users", true},
		{"all but host", Name{Host: "api.example.com", Method: "GET", Path: "/v3/"}, "GET", "https://b.example.com/v3/users", false},
		{"all but method", Name{Host: "api.example.com", Method: "GET", Path: "/v3/"}, "PUT", "https://api.example.com/v3/users", false},
		{"all but path", Name{Host: "api.example.com", Method: "GET", Path: "/v3/"}, "GET", "https://api.example.com/v2/users", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := newRequest(t, tt.method, tt.url)
			got := tt.n.Matches(req)
			assert.Equal(t, tt.want, got, "%+v on %s %s: got %v, want %v", tt.n, tt.method, tt.url, got, tt.want)
		})
	}
}

func TestNameMatchesOddRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		n    Name
		req  *http.Request
		want bool
	}{
		{"nil request", Name{}, nil, false},
		{"no URL, zero name", Name{}, &http.Request{}, true},
		{"no URL, host from req.Host", Name{Host: "a.example", Path: "/"}, &http.Request{Host: "A.example:80"}, true},
		{"URL without host, req.Host", Name{Host: "a.example:8080"},
			&http.Request{Host: "a.example:8080", URL: &url.URL{Path: "/"}}, true},
		{"URL host wins over req.Host", Name{Host: "a.example"},
			&http.Request{Host: "a.example", URL: &url.URL{Scheme: "http", Host: "b.example"}}, false},
		{"no host anywhere", Name{Host: "a.example"}, &http.Request{URL: &url.URL{Path: "/"}}, false},
		{"unclosed bracket", Name{Host: "[::1"}, &http.Request{Host: "[::1"}, true},
		{"junk after bracket is no port", Name{Host: "[::1]:80"}, &http.Request{Host: "[::1]x"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.n.Matches(tt.req)
			assert.Equal(t, tt.want, got, "got %v, want %v", got, tt.want)
		})
	}
}

func TestSplitHostPort(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, host, port string
	}{
		{"a.example", "a.example", ""},
		{"a.example:80", "a.example", "80"},
		{"a.example:", "a.example", ""},
		{"::1", "::1", ""},
		{"[::1]", "::1", ""},
		{"[::1]:8080", "::1", "8080"},
		{"[::1]x", "::1", ""},
		{"[::1", "[::1", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			host, port := splitHostPort(tt.in)
			assert.Equal(t, tt.host, host, "host: got %q, want %q", host, tt.host)
			assert.Equal(t, tt.port, port, "port: got %q, want %q", port, tt.port)
		})
	}
}

func TestConfigMatch(t *testing.T) {
	t.Parallel()
	c := &Config{Rules: []Rule{
		{Name: nil, Retry: &Retry{MaxAttempts: 9}}, // no names: matches nothing
		{Name: []Name{{Host: "api.example.com", Path: "/v3"}, {Method: "DELETE"}}},
		{Name: []Name{{Host: "api.example.com"}}},
		{Name: []Name{{Method: "GET"}}},
	}}
	tests := []struct {
		name   string
		c      *Config
		method string
		url    string
		want   int
	}{
		{"first name of a rule", c, "POST", "https://api.example.com/v3/x", 1},
		{"second name of a rule", c, "DELETE", "https://other.example/", 1},
		{"first match wins over a later one", c, "GET", "https://api.example.com/v3", 1},
		{"falls through to the next rule", c, "POST", "https://api.example.com/v2", 2},
		{"last rule", c, "GET", "https://other.example/", 3},
		{"no match", c, "POST", "https://other.example/", -1},
		{"nil config", nil, "GET", "https://api.example.com/", -1},
		{"no rules", &Config{}, "GET", "https://api.example.com/", -1},
		{"empty name list only", &Config{Rules: []Rule{{}}}, "GET", "https://api.example.com/", -1},
		{"default matches all", Default(), "PATCH", "http://x.example:1/y", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rule, index := tt.c.Match(newRequest(t, tt.method, tt.url))
			assert.Equal(t, tt.want, index, "got index %d, want %d", index, tt.want)
			if tt.want < 0 {
				assert.Nil(t, rule, "got %+v, want nil", rule)
				return
			}
			assert.Same(t, &tt.c.Rules[tt.want], rule, "got %p, want &Rules[%d]", rule, tt.want)
		})
	}
}

func TestConfigMatchNilRequest(t *testing.T) {
	t.Parallel()
	rule, index := Default().Match(nil)
	assert.Nil(t, rule, "got %+v, want nil", rule)
	assert.Equal(t, -1, index, "got %d, want -1", index)
}
