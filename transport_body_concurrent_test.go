package retryhttp_test

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// Uploads that share a total with room for only some of them: those that
// got room are replayed byte-exact, the others are sent once, and the
// room all comes back.
func TestConcurrentUploadsShareTheTotal(t *testing.T) {
	t.Parallel()
	for _, k := range bodyKinds {
		if k.getBody {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			testConcurrentUploads(t, k)
		})
	}
}

func testConcurrentUploads(t *testing.T, k bodyKind) {
	const uploads, fits = 8, 3
	srv, url, held := barrierServer(t, uploads)
	tr := &retryhttp.Transport{Base: &http.Transport{MaxIdleConnsPerHost: uploads}, Policy: bodyPolicy(2),
		Buffer: retryhttp.BufferLimits{PerRequest: testPerRequest, Total: fits * testPerRequest}}
	defer tr.CloseIdleConnections()

	var wg sync.WaitGroup
	data := make([][]byte, uploads)
	status := make([]int, uploads)
	bodies := make([]*callerBody, uploads)
	for i := range uploads {
		data[i] = bodyBytes(testPerRequest, uint64(10+i))
		req, cb := k.request(t, url, data[i])
		req.Header.Set("Idempotency-Key", fmt.Sprint(i))
		bodies[i] = cb
		wg.Go(func() {
			defer held.abort() // a RoundTrip back before all arrived
			resp, err := tr.RoundTrip(req)
			if !assert.NoError(t, err) {
				return
			}
			status[i] = resp.StatusCode
			assert.Equal(t, status[i] == 200, resp.Header.Get(retryhttp.AttemptsHeader) == "1",
				"upload %d: status %d, X-Retry-Attempts %q", i, status[i], resp.Header.Get(retryhttp.AttemptsHeader))
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()

	byKey := map[string][]rt.Attempt{}
	for _, a := range srv.Attempts() {
		key := a.Header.Get("Idempotency-Key")
		byKey[key] = append(byKey[key], a)
	}
	replayed := 0
	for i := range uploads {
		got := byKey[fmt.Sprint(i)]
		switch status[i] {
		case 200:
			replayed++
			assert.Len(t, got, 2, "upload %d: attempts", i)
		case 503:
			assert.Len(t, got, 1, "upload %d: attempts", i)
		default:
			t.Errorf("upload %d: got status %d", i, status[i])
		}
		for _, a := range got {
			assert.Equal(t, sha256.Sum256(data[i]), a.BodySHA256, "upload %d attempt %q: sha256",
				i, a.Header.Get(retryhttp.AttemptsHeader))
		}
		assert.Equal(t, int32(1), bodies[i].closes.Load(), "upload %d: closes", i)
	}
	st := tr.Stats()
	t.Logf("replayed %d of %d, high water %d", replayed, uploads, st.Buffer.HighWater)
	if k.known {
		// Each takes its whole room before it sends, and none gives it
		// back while all are held: exactly the first three get it.
		assert.Equal(t, fits, replayed, "replayed")
		assert.Equal(t, int64(fits*testPerRequest), st.Buffer.HighWater)
	} else {
		// Room is taken in steps, so bodies that fail part way may
		// leave fewer than three whole; the last one to need room
		// always finds it.
		assert.GreaterOrEqual(t, replayed, 1, "replayed")
		assert.LessOrEqual(t, replayed, fits, "replayed")
	}
	assert.Equal(t, uint64(uploads-replayed), st.Buffer.CommittedForSize)
	assert.Equal(t, uint64(uploads-replayed), st.Total.CommittedForSize)
	assert.LessOrEqual(t, st.Buffer.HighWater, int64(fits*testPerRequest))
	wantRoomBack(t, tr)
}

// barrier holds the first attempts of the uploads until all have arrived.
type barrier struct {
	mu      sync.Mutex
	arrived int
	all     chan struct{} // closed when every first attempt has arrived
	stop    chan struct{} // closed to stop waiting for them
	once    sync.Once
}

func (b *barrier) abort() { b.once.Do(func() { close(b.stop) }) }

// barrierServer is a kit Server that reads every body whole; it holds each
// first attempt until n first attempts have arrived and then answers it
// 503, so that n uploads are in flight at once, and answers later
// attempts 200.
func barrierServer(t *testing.T, n int) (*rt.Server, string, *barrier) {
	b := &barrier{all: make(chan struct{}), stop: make(chan struct{})}
	srv := &rt.Server{Choose: func(_ int, r *http.Request) rt.Step {
		if r.Header.Get(retryhttp.AttemptsHeader) != "" {
			return rt.Step{}
		}
		b.mu.Lock()
		if b.arrived++; b.arrived == n {
			close(b.all)
		}
		b.mu.Unlock()
		select {
		case <-b.all:
		case <-b.stop:
		case <-r.Context().Done():
		}
		return rt.Step{Status: 503}
	}}
	url := srv.Start(t).URL
	t.Cleanup(b.abort) // before the server's own cleanup, which waits for its handlers
	return srv, url, b
}
