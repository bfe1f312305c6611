package retryhttp_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/internal/memfleet"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// blindFleet is a shared Fleet that, while blind is set, cannot tell
// (its store is slow or down) and answers as a Fleet then must: allow,
// no hold.
type blindFleet struct {
	*memfleet.Fleet
	blind atomic.Bool
}

func (f *blindFleet) Look(host, rule string) retryhttp.FleetView {
	if f.blind.Load() {
		return retryhttp.FleetView{}
	}
	return f.Fleet.Look(host, rule)
}

// ResetBackoff ends the fleet's holds that the Transport knows of, the
// ones its requests met included, even when the Fleet cannot tell at
// that instant: once it can again, the hold it shows is the one that
// was ended, and holds no request of that Transport.
func TestResetBackoffEndsTheFleetsHoldsMetWhileTheFleetCannotTell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &rt.Server{Choose: func(_ int, req *http.Request) rt.Step {
			if req.URL.Path == "/limit" {
				return rt.Step{Status: 429, Header: http.Header{"Retry-After": {"30"}}}
			}
			return rt.Step{}
		}}
		fleet := &blindFleet{Fleet: memfleet.New()}
		a := &retryhttp.Transport{Base: srv, Fleet: fleet}
		b := &retryhttp.Transport{Base: srv, Fleet: fleet}
		_, err := getWithin(t, a, retryhttp.WithoutRetries(t.Context()), "/limit", 0)
		require.NoError(t, err)
		_, err = getWithin(t, b, t.Context(), "/x", time.Second)
		require.ErrorIs(t, err, retryhttp.ErrHeld, "the fleet's hold holds b")
		require.Len(t, b.Stats().Hosts["api.test"].Holds, 1, "b knows of the fleet's hold")

		fleet.blind.Store(true)
		b.ResetBackoff("api.test")
		fleet.blind.Store(false)
		assert.Empty(t, b.Stats().Hosts["api.test"].Holds, "ended by the host's owner")
		status, err := getWithin(t, b, t.Context(), "/x", time.Second)
		require.NoError(t, err, "the hold b knew of is over for b")
		assert.Equal(t, 200, status)
		assert.Empty(t, b.Stats().Hosts["api.test"].Holds, "and not met again")
	})
}
