package retryhttp_test

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/retryhttp/retryhttp"
	"github.com/stretchr/testify/assert"
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
	srv, held := barrierServer(t, uploads)
	tr := &retryhttp.Transport{Base: &http.Transport{MaxIdleConnsPerHost: uploads}, Policy: bodyPolicy(2),
		Buffer: retryhttp.BufferLimits{PerRequest: testPerRequest, Total: fits * testPerRequest}}
	defer tr.CloseIdleConnections()

	var wg sync.WaitGroup
	data := make([][]byte, uploads)
	status := make([]int, uploads)
	bodies := make([]*callerBody, uploads)
	for i := range uploads {
		data[i] = bodyBytes(testPerRequest, uint64(10+i))
		req, cb := k.request(t, srv.URL, data[i])
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

	replayed := 0
	for i := range uploads {
		got := held.uploads(fmt.Sprint(i))
		switch status[i] {
		case 200:
			replayed++
			assert.Len(t, got, 2, "upload %d: attempts", i)
		case 503:
			assert.Len(t, got, 1, "upload %d: attempts", i)
		default:
			t.Errorf("upload %d: got status %d", i, status[i])
		}
		for _, u := range got {
			assert.Equal(t, sha256.Sum256(data[i]), u.sum, "upload %d attempt %q: sha256", i, u.attempts)
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
	assert.Zero(t, st.Buffer.Buffered)
}

// heldUploads is what a barrierServer received, by Idempotency-Key.
type heldUploads struct {
	mu      sync.Mutex
	got     map[string][]upload
	arrived int
	all     chan struct{} // closed when every first attempt has arrived
	stop    chan struct{} // closed to stop waiting for them
	once    sync.Once
}

func (h *heldUploads) abort() { h.once.Do(func() { close(h.stop) }) }

func (h *heldUploads) uploads(key string) []upload {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got[key]
}

// barrierServer reads every body whole; it holds each first attempt until
// n first attempts have arrived and then answers it 503, so that n
// uploads are in flight at once, and answers later attempts 200.
func barrierServer(t *testing.T, n int) (*httptest.Server, *heldUploads) {
	h := &heldUploads{got: make(map[string][]upload), all: make(chan struct{}), stop: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := receive(r)
		h.mu.Lock()
		key := r.Header.Get("Idempotency-Key")
		h.got[key] = append(h.got[key], u)
		if u.attempts == "" {
			if h.arrived++; h.arrived == n {
				close(h.all)
			}
		}
		h.mu.Unlock()
		if u.attempts != "" {
			return
		}
		select {
		case <-h.all:
		case <-h.stop:
		case <-r.Context().Done():
		}
		w.WriteHeader(503)
	}))
	t.Cleanup(func() { h.abort(); srv.Close() })
	return srv, h
}
