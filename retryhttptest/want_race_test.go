package retryhttptest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// quietTB swallows the Want helpers' reports: only a panic matters here.
type quietTB struct{ testing.TB }

func (quietTB) Helper()               {}
func (quietTB) Errorf(string, ...any) {}

// The Want helpers may check a Server that is still being sent to (a
// test that checks as it goes, or attempts in flight past Wait): they
// report a mismatch, never panic. They read the count and the records
// as one: read apart, an attempt arriving in between made the records
// outnumber the want they were indexed into.
func TestWantHeaderNeverPanicsWhileAttemptsArrive(t *testing.T) {
	srv := script(rt.Step{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			resp, err := srv.RoundTrip(newRequest(t, context.Background(), "GET", ""))
			if err == nil {
				resp.Body.Close()
			}
		}
	})
	defer func() {
		close(stop)
		wg.Wait()
	}()
	var panicked any
	for i := 0; i < 20000 && panicked == nil && srv.Count() < rt.MaxRecords-100; i++ {
		func() {
			defer func() { panicked = recover() }()
			want := make([]string, srv.Count())
			srv.WantHeader(quietTB{t}, "X-Retry-Attempts", want...)
		}()
	}
	if panicked != nil {
		t.Fatalf("WantHeader panicked: %v", fmt.Sprint(panicked))
	}
}
