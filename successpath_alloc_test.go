package retryhttp_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
)

// okBase answers every request 200 with a short body, allocating the
// same for each, whoever calls it.
type okBase struct{}

func (okBase) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Request: req,
		Body: io.NopCloser(strings.NewReader("ok")), ContentLength: 2}, nil
}

// A request answered by its first attempt allocates nothing more through
// the Transport than through its base alone: the zero Transport's
// policy, a rule with error codes, admission, and a POST with GetBody.
// Benchmarks give the figures over real sockets (BenchmarkSuccessPath);
// this holds the count, which a benchmark only shows.
func TestSuccessPathAllocatesNothingMore(t *testing.T) {
	admission := policy.Default()
	admission.Admission = &policy.Admission{}
	codes := policy.Default()
	codes.Rules[0].ErrorCodes = &policy.ErrorCodes{JSON: "error.code", Retryable: []string{"busy"}}
	cases := []struct {
		name   string
		policy *policy.Config
		method string
	}{
		{"zero Transport, GET", nil, "GET"},
		{"zero Transport, POST with GetBody", nil, "POST"},
		{"error codes, GET", codes, "GET"},
		{"admission, GET", admission, "GET"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := &retryhttp.Transport{Base: okBase{}, Policy: tc.policy}
			send := func(rt http.RoundTripper) func() {
				return func() {
					req, _ := http.NewRequest(tc.method, "https://api.test/v1/items", strings.NewReader("{}"))
					resp, err := rt.RoundTrip(req)
					if err != nil {
						t.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			send(tr)() // the host's state is made on first use
			bare := testing.AllocsPerRun(200, send(okBase{}))
			through := testing.AllocsPerRun(200, send(tr))
			assert.LessOrEqual(t, through, bare, "allocations per request through the Transport (bare base: %v)", bare)
		})
	}
}
