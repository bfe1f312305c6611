package benchmarks

import (
	"net/http"

	"github.com/cristalhq/hedgedhttp"
)

// hedgedhttpPeer is cristalhq/hedgedhttp's round tripper: any answer, a
// 503 too, wins; there are no retries and no budget; hedges share the
// caller's request body.
func hedgedhttpPeer() Peer {
	return Peer{
		Name:    "hedgedhttp",
		Label:   "hedgedhttp",
		Library: "hedgedhttp",
		Caps:    Caps{Hedges: true, Body: BodyShared},
		New: func(s Spec, base http.RoundTripper) http.RoundTripper {
			rt, err := hedgedhttp.NewRoundTripper(s.HedgeDelay, s.MaxAttempts, base)
			if err != nil {
				panic("benchmarks: " + err.Error()) // only for a negative delay or count
			}
			return rt
		},
	}
}
