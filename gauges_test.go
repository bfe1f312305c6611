package retryhttp_test

import (
	"bytes"
	"errors"
	"log/slog"
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
	rt "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/retrytrace"
)

// gaugeLog records the waits and refusals hooks see, beside LogHooks'
// records of them.
type gaugeLog struct {
	mu       sync.Mutex
	waits    []retrytrace.WaitInfo
	refusals []retrytrace.RefusedInfo
	text     bytes.Buffer
}

func (g *gaugeLog) hooks() *retrytrace.Hooks {
	logs := logTo(&g.text, slog.LevelInfo)
	return &retrytrace.Hooks{
		Wait: func(w retrytrace.WaitInfo) {
			g.mu.Lock()
			g.waits = append(g.waits, w)
			logs.Wait(w)
			g.mu.Unlock()
		},
		Refused: func(r retrytrace.RefusedInfo) {
			g.mu.Lock()
			g.refusals = append(g.refusals, r)
			logs.Refused(r)
			g.mu.Unlock()
		},
	}
}

// TestWaitsAndRefusalsShowTheLimitsTheyMeet: a wait for the pace and a
// refusal by it carry the pace's rate (which a host answering 429 only
// cuts from what Stats showed before), a wait in line and a shed the
// concurrency limit and the attempts in flight, in the hooks' payloads
// and in LogHooks' records; other waits and refusals carry none.
func TestWaitsAndRefusalsShowTheLimitsTheyMeet(t *testing.T) {
	t.Run("pace", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := &rt.Server{Choose: func(int, *http.Request) rt.Step { return rt.Step{Status: 429} }}
			tr := &retryhttp.Transport{Base: srv}
			var g gaugeLog
			tr.Hooks = g.hooks()
			burst(t, tr, "/x", 1, 0) // the throttle: the host is paced
			rate := tr.Stats().Hosts["api.test"].PaceRate
			require.Positive(t, rate)
			errs := burst(t, tr, "/x", 20, 3*time.Second)
			paced := 0
			for _, err := range errs {
				if errors.Is(err, retryhttp.ErrPaced) {
					paced++
				}
			}
			require.Positive(t, paced, "some refused by the pace")
			g.mu.Lock()
			defer g.mu.Unlock()
			var waits, refusals int
			for _, w := range g.waits {
				if w.Reason == retrytrace.WaitPace {
					waits++
					assert.True(t, w.PaceRate > 0 && w.PaceRate <= rate, "a wait for the pace carries its rate, %v, which the 429s only cut from %v", w.PaceRate, rate)
				} else {
					assert.Zero(t, w.PaceRate, "a %s wait", w.Reason)
				}
				assert.Zero(t, w.ConcurrencyLimit, "no admission")
			}
			for _, r := range g.refusals {
				if r.Reason == retrytrace.RefusedPaced {
					refusals++
					assert.True(t, r.PaceRate > 0 && r.PaceRate <= rate, "a refusal by the pace carries its rate, %v, which the 429s only cut from %v", r.PaceRate, rate)
				}
			}
			assert.Positive(t, waits, "waits for the pace")
			assert.Positive(t, refusals, "refusals by the pace")
			assert.Contains(t, g.text.String(), "reason=pace pace_rate=")
			assert.Contains(t, g.text.String(), "reason=paced pace_rate=")
		})
	})
	t.Run("admission", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := &rt.Server{Choose: func(int, *http.Request) rt.Step { return rt.Step{Delay: time.Second} }}
			cfg := policy.Default()
			cfg.Admission = &policy.Admission{MaxConcurrency: 1, MaxWait: 1500 * time.Millisecond}
			tr := &retryhttp.Transport{Base: srv, Policy: cfg}
			var g gaugeLog
			tr.Hooks = g.hooks()
			errs := burst(t, tr, "/x", 3, 0) // one in flight, one waits and goes, one waits and is shed
			shed := 0
			for _, err := range errs {
				if errors.Is(err, retryhttp.ErrShed) {
					shed++
				}
			}
			require.Equal(t, 1, shed, "got %v", errs)
			g.mu.Lock()
			defer g.mu.Unlock()
			var waits int
			for _, w := range g.waits {
				if w.Reason == retrytrace.WaitAdmission {
					waits++
					assert.Equal(t, retrytrace.Gauges{ConcurrencyLimit: 1, InFlight: 1}, w.Gauges)
				}
			}
			assert.Equal(t, 2, waits)
			require.Len(t, g.refusals, 1)
			assert.Equal(t, retrytrace.RefusedShed, g.refusals[0].Reason)
			assert.Equal(t, retrytrace.Gauges{ConcurrencyLimit: 1, InFlight: 1}, g.refusals[0].Gauges)
			assert.Contains(t, g.text.String(), "reason=admission concurrency_limit=1 in_flight=1")
			assert.Contains(t, g.text.String(), "reason=shed concurrency_limit=1 in_flight=1")
			assert.False(t, strings.Contains(g.text.String(), "pace_rate"), "no pace")
		})
	})
}
