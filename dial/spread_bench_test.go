package dial

import (
	"context"
	"net/http"
	"net/netip"
	"testing"
)

// BenchmarkRoute measures the routing of an attempt to a host already
// looked up, with two addresses: the lookups of its addresses and of
// the first one's transport.
func BenchmarkRoute(b *testing.B) {
	s := newSpread(&http.Transport{}, &Dialer{})
	s.resolve = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")}, nil
	}
	req, err := http.NewRequest("GET", "https://two.test/", nil)
	if err != nil {
		b.Fatal(err)
	}
	if rt, _ := s.route(req.Context(), req, "two.test", nil); rt == nil {
		b.Fatal("got the request left to the base")
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.route(req.Context(), req, "two.test", nil)
		}
	})
}
