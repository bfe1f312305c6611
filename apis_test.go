package retryhttp_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// The APIs whose rules the docs spell out, answered as each documents its
// answers, through the config the docs give an SDK author: what the API's
// own SDK does, or better.

// twoCalls sends a POST (a GET when method says so) to url through tr and,
// a second into its first wait, another; it returns when each reached
// srv, in the order of the attempts.
func twoCalls(t *testing.T, tr *retryhttp.Transport, method, url string) {
	t.Helper()
	call := func() {
		body := strings.NewReader(`{"model": "m"}`)
		req, err := http.NewRequestWithContext(t.Context(), method, url, body)
		if method == "GET" {
			req, err = http.NewRequestWithContext(t.Context(), method, url, nil)
		}
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
	}
	done := make(chan struct{})
	go func() { defer close(done); call() }()
	time.Sleep(time.Second)
	call()
	<-done
}

// GitHub's secondary rate limit says how long to wait in a Retry-After on
// a 403 as well as on a 429: the host's other requests wait it out too,
// as after a 429, rather than meet the limit again (GitHub warns that
// requests sent while limited may get an integration banned).
func TestGitHubSecondaryLimitHoldsTheHost(t *testing.T) {
	for _, status := range []int{403, 429} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rt.Server{Choose: func(n int, _ *http.Request) rt.Step {
					if n > 1 {
						return gitHubAnswer("ok", time.Now())
					}
					st := gitHubAnswer("retry-after", time.Now()) // Retry-After: 30
					st.Status = status
					return st
				}}
				tr := &retryhttp.Transport{Base: srv, Policy: gitHubConfig(), Classify: gitHubClassify}
				twoCalls(t, tr, "GET", "https://api.github.com/user")
				at := arrivals(srv)
				require.Len(t, at, 3)
				within(t, at[1], 30*time.Second, time.Second, "the second call, held")
				// A 429 paces the host too: the retry may wait a slot.
				within(t, at[2], 30*time.Second, 2*time.Second, "the retry")
			})
		})
	}
}
