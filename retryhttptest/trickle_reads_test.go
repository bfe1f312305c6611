package retryhttptest_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// A trickled body of n bytes takes ceil(n/Bytes)*Every in memory, as it
// does over a socket, whatever the size of the client's reads: a piece
// that arrived is read without another wait, however many reads take it.
func TestTrickleTimeDoesNotDependOnTheReader(t *testing.T) {
	readers := []struct {
		name string
		read func(io.Reader) ([]byte, error)
	}{
		{"io.ReadAll", io.ReadAll},
		{"reads of 1 byte", readsOf(1)},
		{"reads of 7 bytes", readsOf(7)},
		{"reads of 64 KiB", readsOf(64 << 10)},
	}
	for _, size := range []int{1000, 2500} {
		for _, rd := range readers {
			t.Run(rd.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					body := strings.Repeat("a", size)
					srv := script(rt.Step{Body: body, Trickle: rt.Rate{Bytes: 1000, Every: time.Second}})
					start := time.Now()
					resp, err := srv.RoundTrip(newRequest(t, context.Background(), "GET", ""))
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					got, err := rd.read(resp.Body)
					if err != nil || string(got) != body {
						t.Fatalf("got %d bytes, %v", len(got), err)
					}
					want := time.Duration((size+999)/1000) * time.Second
					if d := time.Since(start); d != want {
						t.Errorf("a body of %d bytes at 1000 bytes a second took %v, want %v", size, d, want)
					}
				})
			})
		}
	}
}

// readsOf returns a reader of a body that reads n bytes at a time.
func readsOf(n int) func(io.Reader) ([]byte, error) {
	return func(r io.Reader) ([]byte, error) {
		var out []byte
		buf := make([]byte, n)
		for {
			m, err := r.Read(buf)
			out = append(out, buf[:m]...)
			switch {
			case err == io.EOF:
				return out, nil
			case err != nil:
				return out, err
			}
		}
	}
}
