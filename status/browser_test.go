//go:build unix

package status

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/dial"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var screenshot = flag.String("retryhttp.screenshot", "",
	"write a screenshot of the status page, as the README shows it, to this PNG file (with TestInChromium)")

// TestInChromium renders the status page in a real headless Chromium,
// with JavaScript on and off, and checks what a person sees of a
// realistic Transport: a held host, a spent retry budget, a host in dial
// backoff, a hedged host's latencies and a few failures.
//
// It skips when neither chromium nor chromium-browser is in PATH, unless
// RETRYHTTP_REQUIRE_CHROMIUM=1 (as CI sets it), when it fails. To make
// the README's screenshot anew, from the module's root:
//
//	go test -run TestInChromium ./status -retryhttp.screenshot=$PWD/docs/status.png
//
// (a relative path is the test's, which runs in status/).
//
// Chromium's --blink-settings=scriptEnabled=false makes headless
// Chromium 148 print no DOM at all (its --dump-dom reads the DOM through
// script), so JavaScript is turned off as a person turns it off: by the
// profile's content setting, which the test shows to work on a page with
// a script of its own.
func TestInChromium(t *testing.T) {
	bin := chromium(t)
	pages := http.NewServeMux()
	pages.Handle("/debug/retryhttp", busyHandler(t))
	pages.HandleFunc("/probe", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!DOCTYPE html><p id="p">script off</p><script>document.getElementById("p").textContent = "script on"</script>`)
	})
	srv := httptest.NewServer(pages)
	defer srv.Close()

	require.Contains(t, runChromium(t, bin, true, "--dump-dom", srv.URL+"/probe"), "script on")
	require.Contains(t, runChromium(t, bin, false, "--dump-dom", srv.URL+"/probe"), "script off",
		"the profile's setting did not turn JavaScript off")
	for _, js := range []bool{true, false} {
		t.Run(fmt.Sprintf("javascript=%v", js), func(t *testing.T) {
			dom := runChromium(t, bin, js, "--dump-dom", srv.URL+"/debug/retryhttp")
			for _, want := range []string{
				"api.example.com", "held", "429 Too Many Requests", `rule <span class="mono">*</span>`, // the hold
				"billing.example.com", "extra attempts refused", "/ 10", // the spent budget
				"cdn.example.com:80", "connect: connection refused", // the dial backoff
				"search.example.com", "p99", // the latencies
				"GET /v1/invoices", "503 Service Unavailable", // a failure
			} {
				assert.Contains(t, dom, want)
			}
			api, billing, cdn := strings.Index(dom, ">api.example.com<"), strings.Index(dom, ">billing.example.com<"),
				strings.Index(dom, ">cdn.example.com<")
			assert.True(t, 0 < api && api < billing && billing < cdn, "got the held host at %d, the spent at %d, the one down at %d",
				api, billing, cdn)
		})
	}
	if *screenshot != "" {
		out, err := filepath.Abs(*screenshot)
		require.NoError(t, err)
		runChromium(t, bin, false, "--screenshot="+out, "--window-size=1200,900", "--hide-scrollbars", srv.URL+"/debug/retryhttp")
		png, err := os.ReadFile(out)
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(png, []byte("\x89PNG")), "%s is no PNG", out)
		t.Logf("wrote %s", out)
	}
}

// chromium returns the path of Chromium, skipping the test when there
// is none, or failing it when RETRYHTTP_REQUIRE_CHROMIUM=1.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "neither chromium nor chromium-browser is in PATH; install Chromium to run this test (Debian, Ubuntu: apt-get install -y chromium)"
	if os.Getenv("RETRYHTTP_REQUIRE_CHROMIUM") == "1" {
		t.Fatal(msg + ", which RETRYHTTP_REQUIRE_CHROMIUM=1 requires")
	}
	t.Skip(msg)
	return ""
}

// runChromium runs headless Chromium on a fresh profile, with JavaScript
// on or off, and returns what it printed. It gets a minute, and it and
// every process it started are killed when it ends.
func runChromium(t *testing.T, bin string, js bool, args ...string) string {
	t.Helper()
	profile := t.TempDir()
	if !js { // the content setting a person flips in Chromium's settings
		require.NoError(t, os.MkdirAll(filepath.Join(profile, "Default"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(profile, "Default", "Preferences"),
			[]byte(`{"profile": {"default_content_setting_values": {"javascript": 2}}}`), 0o600))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--headless", "--no-sandbox", "--disable-gpu",
		"--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--user-data-dir=" + profile}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A group of its own, so that its renderer and GPU processes go with
	// it, whether it ends or is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever it left behind
	}
	require.NoError(t, err, "%s\n%s", cmd, tail(stderr.String(), 2000))
	return stdout.String()
}

func tail(s string, n int) string { return s[max(len(s)-n, 0):] }

// busyHandler returns the page of a Transport after a morning's work:
// api.example.com held by a 429, billing.example.com failing until its
// retry budget is spent, cdn.example.com refusing connections,
// search.example.com hedged, and metrics.example.com retried now and
// then. A kit Server answers in memory; cdn.example.com's attempts dial
// through a dial.Dialer whose dials are refused, and the page shows that
// Dialer's windows as it shows those of a Transport's own.
func busyHandler(t *testing.T) http.Handler {
	var apiN atomic.Int64
	srv := &rt.Server{Choose: func(n int, req *http.Request) rt.Step {
		switch req.Host {
		case "api.example.com":
			if apiN.Add(1) == 4 {
				return rt.Step{Status: 429, Header: http.Header{"Retry-After": {"120"}}}
			}
		case "billing.example.com":
			return rt.Step{Status: 503}
		case "search.example.com":
			if n%7 == 0 {
				return rt.Step{Delay: 120 * time.Millisecond}
			}
			return rt.Step{Delay: 2 * time.Millisecond}
		case "metrics.example.com":
			if n%5 == 0 {
				return rt.Step{Status: 502}
			}
		}
		return rt.Step{Body: "ok"}
	}}
	dialer := &dial.Dialer{
		Backoff: policy.Exponential{Initial: 40 * time.Second, Max: 2 * time.Minute, Multiplier: 1.6},
		Dial: func(_ context.Context, network, addr string) (net.Conn, error) {
			return nil, &net.OpError{Op: "dial", Net: network, Addr: exampleAddr(addr), Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
		},
	}
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.URL.Host != "cdn.example.com" {
			return srv.RoundTrip(req)
		}
		conn, err := dialer.DialContext(req.Context(), "tcp", "cdn.example.com:80")
		if err == nil {
			conn.Close()
			err = fmt.Errorf("the test's dialer connected")
		}
		return nil, err
	})
	tr := &retryhttp.Transport{Policy: busyPolicy(), Base: base}

	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	send := func(host, path string, n int) {
		for range n {
			if resp, err := client.Get("http://" + host + path); err == nil {
				resp.Body.Close()
			}
		}
	}
	send("metrics.example.com", "/v2/series", 20)
	send("search.example.com", "/q", 30)
	send("cdn.example.com", "/assets/app.css", 1)
	send("billing.example.com", "/v1/invoices", 4)
	send("api.example.com", "/v1/orders", 5) // the 4th is a 429: held for 2 minutes, and the 5th refused
	require.NotEmpty(t, dialer.Windows(), "cdn.example.com's dial failed into no window")
	return handler{stats: func() retryhttp.Stats {
		s := tr.Stats()
		s.DialBackoff = dialer.Windows()
		return s
	}}
}

// busyPolicy hedges search.example.com and retries every other request,
// with short waits and a small budget, so that busyHandler is quick.
func busyPolicy() *policy.Config {
	cfg := policy.Default()
	cfg.MaxServerDelay = 5 * time.Minute // the 429's hold lasts its 2 minutes, past every request's deadline
	cfg.Throttle = &policy.Throttle{MaxTokens: 10, TokenRatio: 0.1}
	cfg.Rules[0].Retry.InitialBackoff, cfg.Rules[0].Retry.MaxBackoff = 5*time.Millisecond, 20*time.Millisecond
	cfg.Rules = append([]policy.Rule{{Name: []policy.Name{{Host: "search.example.com"}},
		Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: 60 * time.Millisecond}}}, cfg.Rules...)
	return cfg
}

// roundTripFunc is a base made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// exampleAddr is an address named as the dial named it.
type exampleAddr string

func (a exampleAddr) Network() string { return "tcp" }
func (a exampleAddr) String() string  { return string(a) }
