package retryhttp_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
