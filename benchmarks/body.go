package benchmarks

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime/metrics"
	"strconv"
)

// Post sends data with POST, as http.NewRequest makes it (with GetBody),
// and checks that a [Discard] server got every byte.
func Post(client *http.Client, url string, data []byte) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	return sendBody(client, req, int64(len(data)))
}

// Upload sends size bytes, made as they are read, with PUT and without
// GetBody, of unknown length unless known is set, and checks that a
// [Discard] server got every byte. With sample set, it returns how far the
// heap grew while the body was read, above where it stood when the upload
// began; collect garbage first for a figure that means anything.
func Upload(client *http.Client, url string, size int64, known, sample bool) (uint64, error) {
	body := newStreamBody(size, sample)
	req, err := http.NewRequest(http.MethodPut, url, body)
	if err != nil {
		return 0, err
	}
	req.ContentLength = -1
	if known {
		req.ContentLength = size
	}
	err = sendBody(client, req, size)
	if !sample {
		return 0, err
	}
	return body.peak - body.start, err
}

// sendBody sends req and checks its answer from a [Discard] server.
func sendBody(client *http.Client, req *http.Request, want int64) error {
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	got, _ := strconv.ParseInt(resp.Header.Get(GotHeader), 10, 64)
	if resp.StatusCode != http.StatusOK || got != want {
		return fmt.Errorf("got status %d and %d bytes, want 200 and %d", resp.StatusCode, got, want)
	}
	return nil
}

// heapMetric is the bytes of heap objects, live or not yet swept: what
// runtime.MemStats calls HeapAlloc, read without stopping the world.
const heapMetric = "/memory/classes/heap/objects:bytes"

// sampleEvery is how many body bytes go by between two heap samples.
const sampleEvery = 64 << 10

// streamBody is a request body made as it is read, so that it holds no
// memory of its own; it has no Len, Seek or GetBody to replay it by. It
// may sample the heap as it is read.
type streamBody struct {
	left, untilSample int64
	sample            []metrics.Sample
	start, peak       uint64
}

func newStreamBody(n int64, sample bool) *streamBody {
	b := &streamBody{left: n}
	if sample {
		b.sample = []metrics.Sample{{Name: heapMetric}}
		b.start = b.heap()
		b.peak = b.start
	}
	return b
}

func (b *streamBody) heap() uint64 {
	metrics.Read(b.sample)
	return b.sample[0].Value.Uint64()
}

func (b *streamBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), b.left)]
	for i := range p {
		p[i] = byte(b.left - int64(i))
	}
	b.left -= int64(len(p))
	if b.sample != nil {
		if b.untilSample -= int64(len(p)); b.untilSample <= 0 || b.left == 0 {
			b.untilSample = sampleEvery
			b.peak = max(b.peak, b.heap())
		}
	}
	return len(p), nil
}

func (b *streamBody) Close() error { return nil }
