package retryhttp_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// A base that quotes a scheme-relative URL in its error leaks it neither
// to the Transport's Stats (which the status page shows) nor to the logs.
func TestSchemeRelativeURLInAnErrorIsRedacted(t *testing.T) {
	const secret = "PASSWORD"
	quoteSchemeRelative := func(req *http.Request) (*http.Response, error) {
		u := *req.URL
		u.Scheme = ""
		return nil, &url.Error{Op: "Get", URL: u.String(), Err: errors.New("connection reset by peer")}
	}
	tr, _ := newCalls(retryConfig(2), quoteSchemeRelative)
	var buf bytes.Buffer
	tr.Hooks = logTo(&buf, slog.LevelDebug)
	req, err := http.NewRequest(http.MethodGet, "https://alice:"+secret+"@api.test/p?token="+secret, nil)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	require.Error(t, err)
	require.Contains(t, err.Error(), `"//alice:`+secret+`@api.test/p?token=`+secret+`"`,
		"the test's base must quote the URL, scheme-relative, for this test to mean anything")

	s := tr.Stats()
	require.Len(t, s.Failures, 1)
	assert.Contains(t, s.Failures[0].Err, `"//REDACTED:REDACTED@api.test/p": connection reset by peer`)
	for name, text := range map[string]string{
		"stats": fmt.Sprint(s),
		"logs":  buf.String(),
	} {
		assert.False(t, strings.Contains(text, secret), "%s: got the password: %s", name, text)
		assert.NotContains(t, text, "alice", "%s", name)
	}
}

// A server whose status line is a megabyte of double quotes, which
// net/http quotes whole in its error, each quote escaped, costs a failure
// no more than any other: RoundTrip returns, and the texts that Stats and
// the logs keep of the error are bounded (256 bytes in Stats, 8 KiB in a
// record), however long the error.
func TestStatusLineOfQuotesIsRedactedWithinBounds(t *testing.T) {
	t.Parallel()
	const n = 1 << 20
	srv := startRawServer(t, "HTTP/1.1 "+strings.Repeat(`"`, n)+"\r\n\r\n")
	var buf bytes.Buffer
	tr := &retryhttp.Transport{Base: plainTransport(t), Policy: policy.None(),
		Hooks: retrytrace.LogHooks(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL()+"/p", nil)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	require.Error(t, err)
	require.Contains(t, err.Error(), `malformed HTTP status code "`+strings.Repeat(`\"`, n)+`"`,
		"the base must quote the whole status line for this test to mean anything")

	s := tr.Stats()
	require.Len(t, s.Failures, 1)
	assert.LessOrEqual(t, len(s.Failures[0].Err), 256, "got %d bytes", len(s.Failures[0].Err))
	assert.Contains(t, s.Failures[0].Err, "malformed HTTP status code")

	var records int
	for line := range strings.Lines(buf.String()) {
		var record struct{ Error string }
		require.NoError(t, json.Unmarshal([]byte(line), &record))
		if record.Error != "" {
			records++
			assert.LessOrEqual(t, len(record.Error), 8<<10, "got %d bytes", len(record.Error))
			assert.Contains(t, record.Error, "malformed HTTP status code")
		}
	}
	assert.Equal(t, 1, records, "records of the error: %.300s", buf.String())
}
