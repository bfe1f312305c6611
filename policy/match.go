package policy

import (
	"net/http"
	"strings"

	"github.com/retryhttp/retryhttp/internal/hostport"
)

// Match returns the first rule of c that has a [Name] matching req, and
// its index in c.Rules. It returns nil, -1 when no rule matches, when c is
// nil, and when req is nil. A Name{} matches every request. A valid Config
// has no Rule with an empty Name list ([Config.Validate] refuses one);
// should Match meet one in a Config that was not validated, that rule
// matches nothing.
//
// Match only reads c and req, so it is safe for concurrent use.
func (c *Config) Match(req *http.Request) (rule *Rule, index int) {
	if c == nil {
		return nil, -1
	}
	for i := range c.Rules {
		for _, n := range c.Rules[i].Name {
			if n.Matches(req) {
				return &c.Rules[i], i
			}
		}
	}
	return nil, -1
}

// Matches reports whether req falls under n. Each field of n that is set
// must match, and the zero Name matches every request; a nil request
// matches nothing.
//
//   - Host is compared case-insensitively with req.URL.Host, or req.Host
//     when the URL has no host. If Host has no port, only the host names
//     are compared; if it has one, the ports must be equal too, a request
//     without a port having its scheme's default (80 for http, 443 for
//     https). IPv6 addresses are written in brackets when a port follows:
//     "[::1]:8080".
//   - Method is compared exactly with req.Method, an empty one being GET.
//   - Path is a prefix of req.URL.Path ending on a segment boundary:
//     "/v3" and "/v3/" both match "/v3" and "/v3/x" but not "/v30", and "/"
//     matches every path. An empty request path is "/".
func (n Name) Matches(req *http.Request) bool {
	if req == nil {
		return false
	}
	return n.matchHost(req) && n.matchMethod(req.Method) && n.matchPath(req)
}

func (n Name) matchHost(req *http.Request) bool {
	if n.Host == "" {
		return true
	}
	host, scheme := req.Host, ""
	if req.URL != nil {
		scheme = req.URL.Scheme
		if req.URL.Host != "" {
			host = req.URL.Host
		}
	}
	wantName, wantPort := splitHostPort(n.Host)
	gotName, gotPort := splitHostPort(host)
	if !strings.EqualFold(wantName, gotName) {
		return false
	}
	if wantPort == "" {
		return true
	}
	if gotPort == "" {
		gotPort = hostport.Default(scheme)
	}
	return wantPort == gotPort
}

func (n Name) matchMethod(method string) bool {
	if n.Method == "" {
		return true
	}
	if method == "" {
		// net/http sends an empty method as GET.
		method = http.MethodGet
	}
	return n.Method == method
}

func (n Name) matchPath(req *http.Request) bool {
	if n.Path == "" {
		return true
	}
	path := "/"
	if req.URL != nil && req.URL.Path != "" {
		path = req.URL.Path
	}
	// With the trailing slashes gone, "/v3/" and "/v3" mean the same
	// prefix, and "/" becomes "", a prefix of every path.
	prefix := strings.TrimRight(n.Path, "/")
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// splitHostPort splits "host", "host:port", "[v6]" or "[v6]:port" into a
// host name without brackets and a port, "" when there is none. A string
// with more than one colon and no brackets is a bare IPv6 address. Unlike
// net.SplitHostPort it never fails, since a request's host is matched as
// it is, however odd.
func splitHostPort(s string) (host, port string) {
	if strings.HasPrefix(s, "[") {
		if end := strings.IndexByte(s, ']'); end > 0 {
			if p, ok := strings.CutPrefix(s[end+1:], ":"); ok {
				port = p
			}
			return s[1:end], port
		}
		return s, ""
	}
	if strings.Count(s, ":") == 1 {
		host, port, _ := strings.Cut(s, ":")
		return host, port
	}
	return s, ""
}
