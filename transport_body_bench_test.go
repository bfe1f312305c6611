package retryhttp_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"

	"github.com/retryhttp/retryhttp"
)

// discardServer reads each request body to its end and answers 200 with
// the number of bytes it got in the Got header; with fail set, it answers
// 503 to the first attempt of each request.
func discardServer(b *testing.B, fail bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		w.Header().Set("Got", strconv.FormatInt(n, 10))
		if fail && r.Header.Get(retryhttp.AttemptsHeader) == "" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	b.Cleanup(srv.Close)
	return srv
}

// send sends req through rt and returns the status and the byte count the
// server reported, closing the response.
func send(b *testing.B, rt http.RoundTripper, req *http.Request) (int, int64) {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		b.Error(err)
		return 0, 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	got, _ := strconv.ParseInt(resp.Header.Get("Got"), 10, 64)
	return resp.StatusCode, got
}

var wrappers = []struct {
	name string
	wrap func(http.RoundTripper) http.RoundTripper
}{
	{"bare", func(rt http.RoundTripper) http.RoundTripper { return rt }},
	{"retryhttp", func(rt http.RoundTripper) http.RoundTripper { return &retryhttp.Transport{Base: rt} }},
}

// BenchmarkPostGetBody is the cost of a POST whose body has GetBody, as
// http.NewRequest gives a bytes.Reader, answered 200 at once. The body is
// replayed through GetBody, never copied: what the Transport adds per
// request should not grow with the body.
func BenchmarkPostGetBody(b *testing.B) {
	srv := discardServer(b, false)
	for _, size := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"1MiB", 1 << 20}} {
		data := bodyBytes(size.n, 1)
		for _, w := range wrappers {
			b.Run(size.name+"/"+w.name, func(b *testing.B) {
				base := &http.Transport{}
				defer base.CloseIdleConnections()
				rt := w.wrap(base)
				b.SetBytes(int64(size.n))
				b.ReportAllocs()
				for b.Loop() {
					req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(data))
					if err != nil {
						b.Fatal(err)
					}
					if status, got := send(b, rt, req); status != 200 || got != int64(size.n) {
						b.Fatalf("got status %d, %d bytes; want 200, %d", status, got, size.n)
					}
				}
			})
		}
	}
}

// genBody is a streamed request body of a given length, made as it is
// read, so that it holds no memory of its own. With sampling set, it
// reads the heap's size every sampleEvery bytes and keeps the largest.
type genBody struct {
	left        int64
	sampling    bool
	untilSample int64 // bytes until the next sample
	peak        uint64
	sample      []metrics.Sample
}

const sampleEvery = 64 << 10

// heapMetric is the bytes of heap objects, live or not yet swept: what
// runtime.MemStats calls HeapAlloc, read without stopping the world.
const heapMetric = "/memory/classes/heap/objects:bytes"

func newGenBody(n int64, sampling bool) *genBody {
	g := &genBody{left: n, sampling: sampling}
	if sampling {
		g.sample = []metrics.Sample{{Name: heapMetric}}
		g.peak = g.heap()
	}
	return g
}

func (g *genBody) heap() uint64 {
	metrics.Read(g.sample)
	return g.sample[0].Value.Uint64()
}

func (g *genBody) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.left)]
	for i := range p {
		p[i] = byte(g.left - int64(i))
	}
	g.left -= int64(len(p))
	if g.sampling {
		if g.untilSample -= int64(len(p)); g.untilSample <= 0 || g.left == 0 {
			g.untilSample = sampleEvery
			g.peak = max(g.peak, g.heap())
		}
	}
	return len(p), nil
}

func (g *genBody) Close() error { return nil }

// BenchmarkStreamedUpload64MiB sends 64 MiB made as it is read, without
// GetBody, answered 200, and reports how far the heap grew above what it
// held, after a collection, when the upload started. A body of unknown
// length is kept up to the per-request limit (1 MiB) and then dropped; one
// declared longer than the limit is never kept.
func BenchmarkStreamedUpload64MiB(b *testing.B) {
	const size = 64 << 20
	srv := discardServer(b, false)
	for _, w := range wrappers {
		for _, known := range []bool{true, false} {
			name := w.name + "/unknown length"
			if known {
				name = w.name + "/known length"
			}
			b.Run(name, func(b *testing.B) {
				base := &http.Transport{}
				defer base.CloseIdleConnections()
				rt := w.wrap(base)
				var peak uint64
				b.SetBytes(size)
				for b.Loop() {
					req, err := http.NewRequest(http.MethodPut, srv.URL, nil)
					if err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					runtime.GC()
					body := newGenBody(size, true)
					start := body.peak
					b.StartTimer()
					req.Body, req.ContentLength = body, -1
					if known {
						req.ContentLength = size
					}
					if status, got := send(b, rt, req); status != 200 || got != size {
						b.Fatalf("got status %d, %d bytes; want 200, %d", status, got, size)
					}
					peak = max(peak, body.peak-start)
				}
				b.ReportMetric(float64(peak), "peak-heap-B")
			})
		}
	}
}

// BenchmarkConcurrentUploads200 sends 200 streamed uploads of 512 KiB at
// once through one Transport with the default limits, each answered 503
// first: 100 MiB wants keeping, and the total holds 64 MiB. The high water
// of the buffer must never pass the total.
func BenchmarkConcurrentUploads200(b *testing.B) {
	const uploads, size = 200, 512 << 10
	srv := discardServer(b, true)
	base := &http.Transport{MaxIdleConnsPerHost: uploads}
	defer base.CloseIdleConnections()
	var highWater int64
	var committed, replayed uint64
	b.SetBytes(uploads * size)
	for b.Loop() {
		tr := &retryhttp.Transport{Base: base, Policy: bodyPolicy(2)}
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok := 0
		for range uploads {
			wg.Go(func() {
				req, err := http.NewRequest(http.MethodPost, srv.URL, newGenBody(size, false))
				if err != nil {
					b.Error(err)
					return
				}
				req.Header.Set("Idempotency-Key", "k")
				status, got := send(b, tr, req)
				mu.Lock()
				defer mu.Unlock()
				if got == size && (status == 200 || status == 503) {
					ok++
				}
			})
		}
		wg.Wait()
		st := tr.Stats()
		switch {
		case ok != uploads:
			b.Fatalf("%d of %d uploads arrived whole", ok, uploads)
		case st.Buffer.HighWater > defaultBufferTotal:
			b.Fatalf("high water %d passed the total %d", st.Buffer.HighWater, defaultBufferTotal)
		case st.Buffer.Buffered != 0:
			b.Fatalf("%d bytes still buffered after every upload", st.Buffer.Buffered)
		}
		highWater = max(highWater, st.Buffer.HighWater)
		committed += st.Buffer.CommittedForSize
		replayed += st.Total.ExtraAttempts
	}
	b.ReportMetric(float64(highWater), "max-high-water-B")
	b.ReportMetric(float64(committed)/float64(b.N), "committed/op")
	b.ReportMetric(float64(replayed)/float64(b.N), "replayed/op")
}

// defaultBufferTotal is what a Transport's zero Buffer.Total means.
const defaultBufferTotal = 64 << 20
