package retryhttp

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// BenchmarkReplay sends a 1 MiB body through a first attempt and then a
// replay, as one retry does, reading with a 32 KiB buffer. B/op shows the
// memory a body costs; "read all first" is what peers do, for comparison.
func BenchmarkReplay(b *testing.B) {
	const size = 1 << 20
	data := payload(size)
	buf := make([]byte, 32<<10)
	send := func(b *testing.B, rc io.ReadCloser) {
		n, err := drain(rc, buf)
		if err != nil || n != size {
			b.Fatalf("sent %d bytes, %v; want %d", n, err, size)
		}
		_ = rc.Close()
	}
	for _, bc := range []struct {
		name   string
		length int64
	}{{"unknown length", 0}, {"known length", size}} {
		b.Run(bc.name, func(b *testing.B) {
			pool := newBufferPool(BufferLimits{})
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				req := &http.Request{Method: http.MethodPut, Body: io.NopCloser(bytes.NewReader(data)), ContentLength: bc.length}
				body := newReplayableBody(req, pool)
				for range 2 {
					rc, _, err := body.newReader(0)
					if err != nil {
						b.Fatal(err)
					}
					send(b, rc)
				}
				body.release()
			}
		})
	}
	b.Run("read all first", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			kept, err := io.ReadAll(io.NopCloser(bytes.NewReader(data)))
			if err != nil {
				b.Fatal(err)
			}
			for range 2 {
				send(b, io.NopCloser(bytes.NewReader(kept)))
			}
		}
	})
}

// drain reads r to EOF with buf, as an attempt sending the body would, and
// returns how many bytes it read.
func drain(r io.Reader, buf []byte) (int, error) {
	total := 0
	for {
		n, err := r.Read(buf)
		total += n
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}
