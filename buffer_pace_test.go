package retryhttp_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
)

// A body without GetBody that passes the per-request limit is still sent
// once, whole, and then committed: its room comes back the moment it
// passes the limit, while the attempt is still sending it, and its 503
// comes back as it is.
func TestBodyPastItsLimitGivesItsRoomBackAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr *retryhttp.Transport
		var held []int64 // room held after each 1000 bytes the base read
		var got bytes.Buffer
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			defer req.Body.Close()
			chunk := make([]byte, 1000)
			for {
				n, err := io.ReadFull(req.Body, chunk)
				got.Write(chunk[:n])
				if n > 0 {
					held = append(held, tr.Stats().Buffer.Buffered)
				}
				if err != nil {
					break
				}
			}
			return &http.Response{StatusCode: 503, Body: http.NoBody, Header: http.Header{}}, nil
		})
		tr = &retryhttp.Transport{Base: base, Policy: retryConfig(3, 503),
			Buffer: retryhttp.BufferLimits{PerRequest: 2500}}
		data := strings.Repeat("0123456789", 500)
		body := &slowBody{data: []byte(data)}
		req, err := http.NewRequestWithContext(t.Context(), "PUT", "https://api.test/up", body)
		require.NoError(t, err)
		require.Nil(t, req.GetBody)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, 503, resp.StatusCode, "the only attempt's answer")
		assert.Equal(t, data, got.String(), "sent once, whole")
		require.Len(t, held, 5)
		assert.GreaterOrEqual(t, held[0], int64(1000), "the first 1000 bytes are kept")
		assert.GreaterOrEqual(t, held[1], int64(2000), "the first 2000 bytes are kept")
		assert.Equal(t, []int64{0, 0, 0}, held[2:], "past 2500 bytes, nothing is kept")
		st := tr.Stats()
		assert.Equal(t, uint64(1), st.Buffer.CommittedForSize)
		assert.Zero(t, st.Total.ExtraAttempts)
		assert.Equal(t, 1, body.closed)
	})
}

// A body without GetBody is teed as it is first read: the first attempt
// starts before any of it is read, and a hedge sent later reads what the
// first has read already at once, then the rest as it comes, the same
// bytes.
func TestHedgesReadATeedBodyAtTheirOwnPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		type read struct {
			at time.Duration
			n  int
		}
		reads := map[string][]read{} // by X-Retry-Attempts
		sent := map[string][]byte{}
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			defer req.Body.Close()
			k := req.Header.Get(retryhttp.AttemptsHeader)
			mu.Lock()
			reads[k] = append(reads[k], read{time.Since(start), 0}) // the attempt's start
			mu.Unlock()
			var all []byte
			buf := make([]byte, 10000)
			for {
				n, err := req.Body.Read(buf)
				all = append(all, buf[:n]...)
				mu.Lock()
				if n > 0 {
					reads[k] = append(reads[k], read{time.Since(start), n})
				}
				mu.Unlock()
				if err != nil {
					break
				}
			}
			mu.Lock()
			sent[k] = all
			mu.Unlock()
			if k == "" {
				// The first attempt hangs once it has the body, so
				// that the hedge answers.
				<-req.Context().Done()
				return nil, req.Context().Err()
			}
			return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}, nil
		})
		cfg := &policy.Config{Rules: []policy.Rule{{Name: []policy.Name{{}},
			Hedge: &policy.Hedge{MaxAttempts: 2, HedgingDelay: 2500 * time.Millisecond}}}}
		tr := &retryhttp.Transport{Base: base, Policy: cfg}
		data := strings.Repeat("abcdefghij", 500)
		req, err := http.NewRequestWithContext(t.Context(), "PUT", "https://api.test/up", &slowBody{data: []byte(data)})
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, "1", resp.Header.Get(retryhttp.AttemptsHeader), "the hedge answered")
		synctest.Wait()

		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, data, string(sent[""]))
		assert.Equal(t, data, string(sent["1"]), "the hedge sent the same bytes")
		first, hedge := reads[""], reads["1"]
		require.NotEmpty(t, first)
		require.NotEmpty(t, hedge)
		assert.Zero(t, first[0].at, "the first attempt starts at once")
		assert.Equal(t, 2500*time.Millisecond, hedge[0].at, "the hedge starts at its delay")
		// The source gives 1000 bytes a second: by 2.5 s the first
		// attempt has read 3000, which the hedge reads at once.
		var atOnce, later int
		for _, r := range hedge[1:] {
			if r.at == 2500*time.Millisecond {
				atOnce += r.n
			} else {
				later += r.n
			}
		}
		assert.Equal(t, 3000, atOnce, "what is buffered is read at once")
		assert.Equal(t, 2000, later, "the rest as it comes")
	})
}
