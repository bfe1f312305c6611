package benchmarks

import (
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/retrytrace"
)

func TestZZDebugPace(t *testing.T) {
	name := os.Getenv("SC")
	if name == "" {
		t.Skip()
	}
	var sc Scenario
	for _, s := range Scenarios() {
		if s.Name == name {
			sc = s
		}
	}
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		waits := map[string]int{}
		waitT := map[string]time.Duration{}
		var trs []*retryhttp.Transport
		c := ZeroTransport()
		c.New = func(base http.RoundTripper) http.RoundTripper {
			tr := &retryhttp.Transport{Base: base, Hooks: &retrytrace.Hooks{
				Wait: func(w retrytrace.WaitInfo) {
					mu.Lock()
					waits[string(w.Reason)]++
					waitT[string(w.Reason)] += w.Delay
					mu.Unlock()
				},
				Refused: func(r retrytrace.RefusedInfo) {
					mu.Lock()
					waits["refused-"+string(r.Reason)]++
					mu.Unlock()
				},
			}}
			mu.Lock()
			trs = append(trs, tr)
			mu.Unlock()
			return tr
		}
		done := make(chan struct{})
		go func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				case <-time.After(time.Second):
				}
				mu.Lock()
				line := fmt.Sprintf("t=%2ds", i+1)
				for _, tr := range trs[:min(len(trs), 4)] {
					for h, hs := range tr.Stats().Hosts {
						_ = h
						line += fmt.Sprintf(" rate=%6.2f waits=%5d refused=%5d holds=%d", hs.PaceRate, hs.PaceWaits, hs.PaceRefusals, hs.HoldsSet)
					}
				}
				mu.Unlock()
				fmt.Println(line)
			}
		}()
		tr := sc.Run(c)
		close(done)
		fmt.Println(waits)
		for k, v := range waitT {
			fmt.Println(k, v/time.Duration(max(waits[k], 1)))
		}
		fmt.Printf("goodput %.1f 429-frac %.3f\n", tr.Goodput(sc.Window), tr.StatusShare(sc.Window, 429))
		var per [60][2]int
		for _, a := range tr.Attempts {
			i := int((a.Arrived - 10*time.Second) / (time.Second / 10))
			if i < 0 {
				continue
			}
			if i < 60 {
				per[i][0]++
				if a.Status == 429 {
					per[i][1]++
				}
			}
		}
		for i := 0; i < 60; i++ {
			fmt.Printf("%.1fs: %d/%d  ", float64(i)/10+10, per[i][1], per[i][0])
			if i%10 == 9 {
				fmt.Println()
			}
		}
	})
}
