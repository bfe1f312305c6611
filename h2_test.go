package retryhttp_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/retryhttp/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What an HTTP/2 server's RST_STREAM and GOAWAY frames mean for a request,
// over a real connection to the hand-written h2Server.

// streamedPut returns a PUT whose body is a stream: no GetBody, so that
// net/http cannot send it again on its own.
func streamedPut(t *testing.T, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "PUT", url, io.NopCloser(strings.NewReader(body)))
	require.NoError(t, err)
	require.Nil(t, req.GetBody)
	return req
}

// answer is a connection that answers one request with 200 "ok" and
// sends the request's body to got, when got is not nil.
func answer(got chan<- string) func(*h2Conn) {
	return func(c *h2Conn) {
		stream, body, ok := c.request()
		if !ok {
			return
		}
		if got != nil {
			got <- string(body)
		}
		if c.respond(stream, 200, "ok") {
			c.drain()
		}
	}
}

// doneLines returns the outcome of each attempt the hooks saw: "done",
// the attempt's number and its outcome.
func doneLines(l *hookLog) []string {
	var out []string
	for _, line := range l.lines("done") {
		f := strings.Fields(line)
		out = append(out, strings.Join(f[:3], " "))
	}
	return out
}

// A stream the server refused (RST_STREAM with REFUSED_STREAM) was not
// processed either: a PUT with a streamed body is sent again at once, on
// the same connection, which the refusal leaves open.
func TestRefusedStreamOfAStreamedPutIsSentAgain(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	refuseThenAnswer := func(c *h2Conn) {
		stream, _, ok := c.headers()
		if !ok || !c.reset(stream, h2RefusedStream) {
			return
		}
		// Skip what the client still sends on the refused stream.
		for {
			f, err := c.read()
			if err != nil {
				t.Errorf("h2Server: %v before the request was sent again", err)
				return
			}
			if f.typ == h2Headers && f.stream != stream {
				c.unread(f)
				break
			}
		}
		answer(got)(c)
	}
	srv := startH2Server(t, refuseThenAnswer)
	var log hookLog
	tr := &retryhttp.Transport{Base: h2cTransport(t), Policy: retryConfig(3, 503), Hooks: log.hooks("")}
	resp, err := tr.RoundTrip(streamedPut(t, srv.URL()+"/v1/items", "payload"))
	require.NoError(t, err)
	assert.Equal(t, "ok", readAll(t, resp))
	assert.Equal(t, "payload", <-got)
	assert.Equal(t, []string{"done 1 never-sent", "done 1 success"}, doneLines(&log))
	assert.Equal(t, 1, srv.accepted())
}
