package retryhttp_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// panicCaseEnv names the case a child process of TestPanicsReachTheCaller
// runs; it is empty in the parent.
const panicCaseEnv = "RETRYHTTP_PANIC_CASE"

// A panic raised while a hedged request is served, after its hedging
// delay, by the caller's GetBody, a hook, Prepare or the base, reaches the caller's
// goroutine, where it can be recovered, with every attempt cancelled and
// closed; the Transport goes on working. Each case runs in a child
// process: a panic on a goroutine of the Transport's own would kill the
// process, which the parent sees in the child's exit status and output.
func TestPanicsReachTheCaller(t *testing.T) {
	if name := os.Getenv(panicCaseEnv); name != "" {
		runPanicCase(t, name)
		return
	}
	for _, name := range []string{"GetBody", "hook", "base", "Prepare"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestPanicsReachTheCaller$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), panicCaseEnv+"="+name)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "the child process died:\n%s", out)
			assert.Contains(t, string(out), "recovered on the caller's goroutine: "+name+" is broken")
			assert.Contains(t, string(out), "the Transport goes on working")
		})
	}
}

// runPanicCase is a child's case: hedge 2, due after 10 ms while attempt 1
// waits a second for its answer, panics in name; the caller recovers it.
func runPanicCase(t *testing.T, name string) {
	synctest.Test(t, func(t *testing.T) {
		srv := script(rt.Step{Delay: time.Second, Body: "ok"})
		var base http.RoundTripper = srv
		if name == "base" {
			base = roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if req.Header.Get(retryhttp.AttemptsHeader) == "1" && req.URL.Path == "/panic" {
					panic(name + " is broken")
				}
				return srv.RoundTrip(req)
			})
		}
		cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 3, HedgingDelay: 10 * time.Millisecond}}}}
		tr := &retryhttp.Transport{Base: base, Policy: cfg}
		if name == "hook" {
			tr.Hooks = &retrytrace.Hooks{AttemptStart: func(a retrytrace.AttemptStartInfo) {
				if a.Attempt == 2 && a.Request.URL.Path == "/panic" {
					panic(name + " is broken")
				}
			}}
		}
		if name == "Prepare" {
			tr.Prepare = func(attempt int, req *http.Request) error {
				if attempt == 2 && req.URL.Path == "/panic" {
					panic(name + " is broken")
				}
				return nil
			}
		}
		send := func(path string) (string, error) {
			req, err := http.NewRequestWithContext(t.Context(), "PUT", "https://api.test"+path, strings.NewReader("payload"))
			require.NoError(t, err)
			if name == "GetBody" && path == "/panic" {
				req.GetBody = func() (io.ReadCloser, error) { panic(name + " is broken") }
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				return "", err
			}
			return readAll(t, resp), nil
		}
		func() {
			defer func() {
				fmt.Printf("recovered on the caller's goroutine: %v\n", recover())
			}()
			send("/panic")
			t.Error("RoundTrip returned")
		}()
		synctest.Wait() // every attempt of the request has ended
		body, err := send("/next")
		require.NoError(t, err)
		require.Equal(t, "ok", body)
		fmt.Println("the Transport goes on working")
	})
}
