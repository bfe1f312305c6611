package status

import (
	"net"

	"github.com/retryhttp/retryhttp/dial"
)

// claims hands the dial windows out to the hosts that claim them, each
// window to one host at most: by its address, lowercased, as net/http
// dials a URL's host, and by the hosts whose attempts were routed to it.
type claims struct {
	windows []dial.Window
	byAddr  map[string][]int // window indices
	byHost  map[string][]int
	claimed []bool
}

func newClaims(ws []dial.Window) *claims {
	c := &claims{windows: ws, byAddr: map[string][]int{}, byHost: map[string][]int{}, claimed: make([]bool, len(ws))}
	for i, w := range ws {
		a := lowerASCII(w.Addr)
		c.byAddr[a] = append(c.byAddr[a], i)
		for _, h := range w.Hosts {
			c.byHost[h] = append(c.byHost[h], i)
		}
	}
	return c
}

// lowerASCII returns s with its ASCII letters in lower case. The
// addresses net/http dials are ASCII, an IDN host's in punycode, so that
// this is what lowercasing them means; unlike strings.ToLower, it takes
// one pass over a text that is not UTF-8.
func lowerASCII(s string) string {
	var b []byte // a copy of s, from its first upper-case letter on
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			if b == nil {
				b = []byte(s)
			}
			b[i] = c + 'a' - 'A'
		}
	}
	if b == nil {
		return s
	}
	return string(b)
}

// claim returns the windows of host not claimed yet: host itself when
// it has a port, else host with the ports of http and https, and the
// windows of the addresses its attempts were routed to.
func (c *claims) claim(name string) []dial.Window {
	if len(c.windows) == 0 {
		return nil
	}
	var out []dial.Window
	take := func(idx []int) {
		for _, i := range idx {
			if !c.claimed[i] {
				c.claimed[i] = true
				out = append(out, c.windows[i])
			}
		}
	}
	if _, port, err := net.SplitHostPort(name); err == nil && port != "" {
		take(c.byAddr[name])
	} else {
		take(c.byAddr[name+":80"])
		take(c.byAddr[name+":443"])
	}
	take(c.byHost[name])
	return out
}

// unclaimed returns the windows no host claimed: those of hosts Stats
// no longer holds, or of a proxy.
func (c *claims) unclaimed() []dial.Window {
	var out []dial.Window
	for i, w := range c.windows {
		if !c.claimed[i] {
			out = append(out, w)
		}
	}
	return out
}
