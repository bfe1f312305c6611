package status_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// refusedOnce is a base whose first dial to each request's host is
// refused: the attempt provably never reached the server, and is
// resent transparently.
type refusedOnce struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (b *refusedOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	if b.n.Add(1) == 1 {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	return b.next.RoundTrip(req)
}

// rowOf returns the HTML row of host in page.
func rowOf(t *testing.T, page, host string) string {
	t.Helper()
	i := strings.Index(page, `<td class="host">`+host+`</td>`)
	require.GreaterOrEqual(t, i, 0, "no row for %s", host)
	j := strings.Index(page[i:], "</tr>")
	require.Positive(t, j)
	return page[i : i+j]
}

// The HTML shows, per host, its Counters ("For each host: its
// [retryhttp.Counters]", Handler), as the JSON does: a host whose
// request was resent transparently says so in its row.
func TestTheHostRowShowsTransparentRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &retryhttp.Transport{Base: &refusedOnce{next: &rt.Server{Script: []rt.Step{{}}}}}
		get(t, &http.Client{Transport: tr}, "https://a.test/x")
		require.Equal(t, uint64(1), tr.Stats().Hosts["a.test"].TransparentRetries)
		p := pageOf(t, tr)
		require.Equal(t, uint64(1), p.Hosts[0].TransparentRetries, "the JSON has it")
		assert.Contains(t, rowOf(t, htmlOf(t, tr), "a.test"), "transparent", "the host's row does not show it")
	})
}

// The HTML's totals show the pace waits and their time, as they show
// the hold waits and their time, and as the JSON's total has them.
func TestTheTotalsShowPaceWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			if req.URL.Path == "/limit" {
				return rt.Step{Status: 429}
			}
			return rt.Step{}
		}}
		tr := &retryhttp.Transport{Base: srv, Policy: policy.Default()}
		send := func(url string) {
			ctx, cancel := context.WithTimeout(retryhttp.WithoutRetries(t.Context()), 10*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			readAll(t, resp)
		}
		for range 5 {
			send("https://paced.test/x")
			time.Sleep(time.Second)
		}
		send("https://paced.test/limit")
		for range 3 {
			send("https://paced.test/x")
		}
		st := tr.Stats()
		require.Positive(t, st.Total.PaceWaits)
		html := htmlOf(t, tr)
		i, j := strings.Index(html, `<dl class="totals">`), strings.Index(html, "</dl>")
		require.True(t, i >= 0 && j > i)
		assert.Contains(t, html[i:j], "pace wait", "the totals do not show the pace waits")
	})
}
