package retryhttptest_test

import (
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/retryhttp/retryhttp/retryhttptest"
)

// One Server shared by parallel tests, each in a synctest bubble of its
// own, answers them all: attempts of different bubbles may overlap, and
// one may end after another that arrived first, without a panic from
// the runtime's checks that a bubble's channels stay in it.
func TestServerSharedByParallelBubbles(t *testing.T) {
	// Made outside the bubbles, so that either may use them: they order
	// the attempts so that "a" arrives first and "b" ends last.
	aIn, bIn, aOut := make(chan struct{}), make(chan struct{}), make(chan struct{})
	srv := &retryhttptest.Server{Choose: func(_ int, req *http.Request) retryhttptest.Step {
		switch req.URL.Path {
		case "/a":
			close(aIn)
			<-bIn
		case "/b":
			<-aIn
			close(bIn)
			<-aOut
		}
		return retryhttptest.Step{Body: "ok"}
	}}
	for _, path := range []string{"/a", "/b"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				req, err := http.NewRequestWithContext(t.Context(), "GET", "https://api.example.com"+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := srv.RoundTrip(req)
				if err != nil {
					t.Fatalf("%s: got %v, want a reply", path, err)
				}
				resp.Body.Close()
				if path == "/a" {
					close(aOut)
				}
			})
		})
	}
}
