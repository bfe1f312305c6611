package status_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/status"
)

// Mount the status page beside the application's other admin pages, and
// read it as a person (HTML) or a tool (?format=json) would. Here a 429
// asking for an hour holds its host: longer than the policy waits, so
// the 429 comes back at once, and the page shows the hold, under the key
// of the default policy's one rule, "*".
func ExampleHandler() {
	tr := &retryhttp.Transport{Base: &retryhttptest.Server{Script: []retryhttptest.Step{
		{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"3600"}}},
	}}}
	resp, err := (&http.Client{Transport: tr}).Get("https://api.example.com/v1/items")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()

	admin := http.NewServeMux()
	admin.Handle("/debug/retryhttp", status.Handler(tr))
	// In a program: http.ListenAndServe("127.0.0.1:6060", admin), behind
	// whatever guards the admin pages.

	w := httptest.NewRecorder()
	admin.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/debug/retryhttp?format=json", nil))
	var page struct {
		Hosts []struct {
			Host  string `json:"host"`
			Holds []struct {
				Rule        string  `json:"rule"`
				Status      int     `json:"status"`
				RemainingMs float64 `json:"remainingMs"`
			} `json:"holds"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil {
		panic(err)
	}
	h := page.Hosts[0]
	left := time.Duration(h.Holds[0].RemainingMs * float64(time.Millisecond)).Round(time.Minute)
	fmt.Printf("%s: held after a %d, rule %s, %v left\n", h.Host, h.Holds[0].Status, h.Holds[0].Rule, left)
	// Output:
	// api.example.com: held after a 429, rule *, 1m0s left
}
