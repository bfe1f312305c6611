package retryhttp_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"syscall"
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

// logTo returns LogHooks that write text records at level and above to
// buf, with no time, so that lines compare exactly.
func logTo(buf *bytes.Buffer, level slog.Level) *retrytrace.Hooks {
	return retrytrace.LogHooks(slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})))
}

func lines(buf *bytes.Buffer) []string {
	s := strings.TrimSuffix(buf.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

const logPrefix = "method=GET host=api.test path=/v1/items "

func TestLogHooksLevels(t *testing.T) {
	budget := retryConfig(3, 503)
	budget.Throttle = &policy.Throttle{MaxTokens: 2, TokenRatio: 0.1} // one failure spends it
	withCodes := retryConfig(3, 503)
	withCodes.Rules[0].ErrorCodes = &policy.ErrorCodes{JSON: "code", Final: []string{"no"}} // "busy" listed nowhere: the status decides
	// Each call of the base goes to a kit Server in turn, or fails.
	reply := func(steps ...rt.Step) roundTripFunc { return script(steps...).RoundTrip }
	cases := []struct {
		name  string
		cfg   *policy.Config
		calls []roundTripFunc
		want  []string
	}{
		{"answered at once", retryConfig(3, 503), []roundTripFunc{reply(rt.Step{})}, nil},
		{"answered after a retry", retryConfig(3, 503), []roundTripFunc{reply(rt.Step{Status: 503}, rt.Step{})}, []string{
			`level=DEBUG msg="retryhttp: attempt failed" ` + logPrefix + `attempt=1 outcome=retryable status_code=503 latency=0s`,
			`level=INFO msg="retryhttp: waiting" ` + logPrefix + `attempt=2 delay=100ms reason=backoff`,
			`level=INFO msg="retryhttp: answered" ` + logPrefix + `attempts=2 retry_delay=100ms status_code=200`,
		}},
		{"gave up with a status", retryConfig(2, 503), []roundTripFunc{reply(rt.Step{Status: 503})}, []string{
			`level=DEBUG msg="retryhttp: attempt failed" ` + logPrefix + `attempt=1 outcome=retryable status_code=503 latency=0s`,
			`level=INFO msg="retryhttp: waiting" ` + logPrefix + `attempt=2 delay=100ms reason=backoff`,
			`level=DEBUG msg="retryhttp: attempt failed" ` + logPrefix + `attempt=2 outcome=retryable status_code=503 latency=0s`,
			`level=WARN msg="retryhttp: gave up" ` + logPrefix + `attempts=2 retry_delay=100ms status_code=503`,
		}},
		{"gave up with an error", retryConfig(2, 503), []roundTripFunc{fail(io.ErrUnexpectedEOF)}, []string{
			`level=DEBUG msg="retryhttp: attempt failed" ` + logPrefix + `attempt=1 outcome=network error="unexpected EOF" latency=0s`,
			`level=INFO msg="retryhttp: waiting" ` + logPrefix + `attempt=2 delay=100ms reason=backoff`,
			`level=DEBUG msg="retryhttp: attempt failed" ` + logPrefix + `attempt=2 outcome=network error="unexpected EOF" latency=0s`,
			`level=WARN msg="retryhttp: gave up" ` + logPrefix + `attempts=2 retry_delay=100ms error="retryhttp: no response after 2 attempt(s): unexpected EOF"`,
		}},
		{"resent transparently", retryConfig(3, 503), []roundTripFunc{fail(syscall.ECONNREFUSED), reply(rt.Step{})}, []string{
			`level=DEBUG msg="retryhttp: attempt failed" ` + logPrefix + `attempt=1 outcome=never-sent error="connection refused" latency=0s`,
			`level=DEBUG msg="retryhttp: resending" ` + logPrefix + `attempt=1`,
			`level=INFO msg="retryhttp: answered" ` + logPrefix + `attempts=1 transparent_retries=1 retry_delay=0s status_code=200`,
		}},
		{"an error code", withCodes, []roundTripFunc{reply(rt.Step{Status: 503, Body: `{"code": "busy"}`}, rt.Step{})}, []string{
			`level=DEBUG msg="retryhttp: attempt failed" ` + logPrefix + `attempt=1 outcome=retryable status_code=503 latency=0s error_code=busy`,
			`level=INFO msg="retryhttp: waiting" ` + logPrefix + `attempt=2 delay=100ms reason=backoff`,
			`level=INFO msg="retryhttp: answered" ` + logPrefix + `attempts=2 retry_delay=100ms status_code=200`,
		}},
		{"refused by the budget", budget, []roundTripFunc{reply(rt.Step{Status: 503})}, []string{
			`level=DEBUG msg="retryhttp: attempt failed" ` + logPrefix + `attempt=1 outcome=retryable status_code=503 latency=0s`,
			`level=WARN msg="retryhttp: attempt refused" ` + logPrefix + `attempt=2 reason=budget`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var buf bytes.Buffer
				tr, _ := newCalls(c.cfg, c.calls...)
				tr.Hooks = logTo(&buf, slog.LevelDebug)
				if resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "")); err == nil {
					readAll(t, resp)
				}
				assert.Equal(t, c.want, lines(&buf))
			})
		})
	}
}

func TestLogHooksHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The first attempt hangs until it is cancelled; the hedge answers.
		srv := script(rt.Step{Fault: rt.Hang}, rt.Step{})
		var buf bytes.Buffer
		tr := &retryhttp.Transport{Base: srv, Policy: hedgeConfig(2, 50*time.Millisecond, 503), Hooks: logTo(&buf, slog.LevelDebug)}
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, []string{
			`level=DEBUG msg="retryhttp: waiting" ` + logPrefix + `attempt=2 delay=50ms reason=hedge-delay`,
			`level=INFO msg="retryhttp: hedging" ` + logPrefix + `attempt=2`,
			`level=DEBUG msg="retryhttp: attempt failed" ` + logPrefix + `attempt=1 outcome=cancelled error="retryhttp: another hedge won" latency=50ms`,
			`level=INFO msg="retryhttp: answered" ` + logPrefix + `attempts=2 hedges=1 retry_delay=0s status_code=200`,
		}, lines(&buf))
	})
}

func TestLogHooksPrintNoSecret(t *testing.T) {
	const secretURL = "https://alice:hunter2@api.test/v1/items?token=s3cret#frag-secret"
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		srv := script(rt.Step{Status: 503, Header: http.Header{"Set-Cookie": {"session=cookie-secret"}}})
		// A base that wraps an http.Client quotes the URL in its errors.
		tr, _ := newCalls(retryConfig(3, 503), srv.RoundTrip,
			fail(&url.Error{Op: "Get", URL: secretURL, Err: io.ErrUnexpectedEOF}))
		tr.Hooks = logTo(&buf, slog.LevelDebug)
		req, err := http.NewRequestWithContext(t.Context(), "GET", secretURL, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer header-secret")
		_, err = tr.RoundTrip(req)
		require.Error(t, err)

		out := buf.String()
		assert.Len(t, lines(&buf), 6, "three failed attempts, two waits, the end")
		assert.Contains(t, out, `error="retryhttp: no response after 3 attempt(s): Get \"https://REDACTED:REDACTED@api.test/v1/items\": unexpected EOF"`)
		for _, secret := range []string{"alice", "hunter2", "s3cret", "token", "frag-secret", "header-secret", "cookie-secret"} {
			assert.NotContains(t, out, secret)
		}
	})
}

func TestRedactURLsInLogs(t *testing.T) {
	cases := map[string]string{
		`Get "https://bob:pa%3Ass@api.test/x?k=v#f": boom`:    `Get "https://REDACTED:REDACTED@api.test/x": boom`,
		"to http://b.test/y then https://c.test/#t (EOF)":     "to http://b.test/y then https://c.test/",
		"to http://b.test/y?sig=s then https://c.test/ (EOF)": "to http://b.test/y",
		"bad ://x and h://%zz?k=v":                            "bad ://REDACTED and h://REDACTED",
		"dial tcp 127.0.0.1:1: connect: connection refused":   "dial tcp 127.0.0.1:1: connect: connection refused",
		`Get "https://h/x?q=a\"b&api_key=SECRET": boom`:       `Get "https://h/x": boom`,
		"GET https://h/x?q=a b&api_key=SECRET: boom":          "GET https://h/x",
	}
	for text, want := range cases {
		t.Run(text, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var buf bytes.Buffer
				tr, _ := newCalls(retryConfig(2, 503), fail(textError(text)))
				tr.Hooks = logTo(&buf, slog.LevelDebug)
				_, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
				require.Error(t, err)
				require.Len(t, lines(&buf), 1, "a fatal error: one attempt")
				assert.Contains(t, lines(&buf)[0], "error="+quote(want))
			})
		})
	}
}

type textError string

func (e textError) Error() string { return string(e) }

// quote quotes s as slog's text handler does a value with spaces.
func quote(s string) string {
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("", "v", s)
	out := strings.TrimSpace(buf.String())
	return out[strings.Index(out, "v=")+2:]
}

func TestLogHooksAcceptNilLogger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, _ := newScripted(hedgeConfig(2, 50*time.Millisecond, 503), rt.Step{})
		tr.Hooks = retrytrace.LogHooks(nil)
		// The hedging delay is logged at Debug, which slog.Default drops.
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", ""))
		require.NoError(t, err)
		readAll(t, resp)
	})
}

// BenchmarkLogHooksSuccessPath measures what LogHooks cost a request
// answered at once, beside the same Transport with no hooks: a logger
// that would write every record at Debug, so that any record shows.
func BenchmarkLogHooksSuccessPath(b *testing.B) {
	logger := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, bc := range []struct {
		name  string
		hooks *retrytrace.Hooks
	}{{"hooks=nil", nil}, {"LogHooks", retrytrace.LogHooks(logger)}} {
		b.Run(bc.name, func(b *testing.B) {
			tr := &retryhttp.Transport{Base: script(rt.Step{Body: "ok"}), Hooks: bc.hooks}
			req, err := http.NewRequest("GET", "https://api.test/v1/items", nil)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// A hold on the host shows in the log: the wait for its end at Info, the
// request it refuses at Warn.
func TestLogHooksHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		tr, _ := newScripted(policy.Default(), rt.Step{Status: 429, Header: http.Header{"Retry-After": {"2"}}}, rt.Step{})
		send := func(ctx context.Context) {
			if resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", "")); err == nil {
				readAll(t, resp)
			}
		}
		send(retryhttp.WithoutRetries(t.Context())) // the 429 holds the host for 2 s
		tr.Hooks = logTo(&buf, slog.LevelInfo)
		short, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		send(short)
		assert.Equal(t, []string{`level=WARN msg="retryhttp: attempt refused" ` + logPrefix + `attempt=1 reason=held`}, lines(&buf))
		buf.Reset()
		send(t.Context())
		require.NotEmpty(t, lines(&buf))
		assert.Contains(t, lines(&buf)[0], `msg="retryhttp: waiting" `+logPrefix+`attempt=1 delay=2.`)
		assert.Contains(t, lines(&buf)[0], `reason=hold`)
		// Its end is logged with the time it was held, as it lasted.
		require.Len(t, lines(&buf), 2)
		assert.Contains(t, lines(&buf)[1], `level=INFO msg="retryhttp: answered" `+logPrefix+`attempts=1 retry_delay=2.`)
		assert.Contains(t, lines(&buf)[1], `status_code=200`)
	})
}

// TestLogHooksNameTheHostAsStatsDo sends to a host written in capitals:
// its records name it lowercased, as Stats, the status page and the otel
// module do, so that one host is one name everywhere.
func TestLogHooksNameTheHostAsStatsDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		tr, _ := newCalls(retryConfig(3, 503), script(rt.Step{Status: 503}, rt.Step{}).RoundTrip)
		tr.Hooks = logTo(&buf, slog.LevelInfo)
		req := newRequest(t, t.Context(), "GET", "")
		req.URL.Host = "API.Test"
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
		got := lines(&buf)
		require.NotEmpty(t, got)
		for _, l := range got {
			assert.Contains(t, l, " "+logPrefix, "got a record naming the host otherwise")
		}
		_, ok := tr.Stats().Hosts["api.test"]
		assert.True(t, ok, "Stats names the host api.test")
	})
}
