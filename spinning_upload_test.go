package retryhttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
)

// idleBody gives a few bytes, then 0, nil on every Read: a producer with
// nothing to say that never says so.
type idleBody struct{ said bool }

func (b *idleBody) Read(p []byte) (int, error) {
	if !b.said {
		b.said = true
		return copy(p, "hello"), nil
	}
	return 0, nil
}

func (b *idleBody) Close() error { return nil }

// A streamed body that keeps returning 0, nil holds its attempt only as
// long as the caller's context: net/http's HTTP/1 writer, which spins on
// such a body, is stopped once the context ends, and the room comes back.
func TestIdleUploadEndsWithTheCallersContext(t *testing.T) {
	t.Parallel()
	for _, h2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "HTTP/1", true: "HTTP/2"}[h2], func(t *testing.T) {
			t.Parallel()
			arrived := make(chan struct{}, 1)
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case arrived <- struct{}{}:
				default:
				}
				io.Copy(io.Discard, r.Body)
			}))
			srv.EnableHTTP2 = h2
			srv.StartTLS()
			defer srv.Close()
			base := srv.Client().Transport.(*http.Transport)
			defer base.CloseIdleConnections()
			tr := &retryhttp.Transport{Base: base, Policy: bodyPolicy(3)}

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL, &idleBody{})
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() {
				resp, err := tr.RoundTrip(req)
				if err == nil {
					resp.Body.Close()
				}
				done <- err
			}()
			<-arrived
			cancel()
			select {
			case err := <-done:
				require.ErrorIs(t, err, context.Canceled)
			case <-time.After(10 * time.Second): // a bound for a hang, not a speed
				t.Fatal("RoundTrip did not return once the caller's context ended")
			}
			wantRoomBack(t, tr)
		})
	}
}
