// Command demo shows retryhttp at work against a misbehaving server on
// loopback: a flaky endpoint, a rate limit with Retry-After, a streamed
// upload replayed after a failure, a slow tail cut by hedging, and an
// outage that the retry budget keeps from becoming a retry storm. The
// Transport's status page is served on a loopback port of its own while
// the scenarios run.
//
// Run it with: go run ./cmd/demo
//
// With -serve, the status page stays up after the scenarios, until the
// demo is interrupted.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/status"
)

const config = `{
  "methodConfig": [
    {
      "name": [{"path": "/search"}],
      "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "30ms", "nonFatalStatusCodes": [502, 503]}
    },
    {
      "name": [{}],
      "retryPolicy": {
        "maxAttempts": 4, "initialBackoff": "0.05s", "maxBackoff": "1s",
        "backoffMultiplier": 2, "retryableStatusCodes": [429, 502, 503, 504]
      }
    }
  ],
  "retryThrottling": {"maxTokens": 20, "tokenRatio": 0.25}
}`

func main() {
	serve := flag.Bool("serve", false, "keep serving the status page after the scenarios, until interrupted")
	flag.Parse()
	cfg, err := policy.ParseConfig([]byte(config))
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(newServer())
	defer srv.Close()
	tr := &retryhttp.Transport{Policy: cfg}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	page, stop := serveStatus(tr)
	defer stop()

	fmt.Println("retryhttp demo, server at", srv.URL)
	fmt.Println("status page at", page, "(add ?format=json for tools)")
	flaky(client, srv.URL)
	rateLimited(client, srv.URL)
	upload(client, srv.URL)
	hedged(client, srv.URL)
	outage(client, srv.URL)

	st := tr.Stats().Total
	fmt.Printf("\nstats: %d requests, %d extra attempts (%d failed), %d hedges sent, %d won, %d cancelled, %d refused by the budget\n",
		st.Requests, st.ExtraAttempts, st.ExtraAttemptsFailed, st.Hedges, st.HedgesWon, st.HedgesCancelled, st.BudgetRefusals)
	fmt.Println("\nside by side with go-retryablehttp, failsafe-go and hedgedhttp, with charts:")
	fmt.Println("  docs/benchmarks.md (made anew with: cd benchmarks && go run ./cmd/figures)")
	if !*serve {
		fmt.Println("\nthe status page was at", page, "(run with -serve to keep it up)")
		return
	}
	fmt.Println("\nthe status page is at", page, "until interrupted (Ctrl-C)")
	interrupt := make(chan os.Signal, 1)
	signal.Notify(interrupt, os.Interrupt)
	<-interrupt
}

// serveStatus serves tr's status page on a loopback port of its own,
// mounted as an application would mount it beside its other admin
// pages, and returns its URL and a func that stops it.
func serveStatus(tr *retryhttp.Transport) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/retryhttp", status.Handler(tr))
	s := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go s.Serve(ln)
	return "http://" + ln.Addr().String() + "/debug/retryhttp", func() { s.Close() }
}

// get fetches url and reports the status, the attempts and the time taken.
func get(client *http.Client, url string) (*http.Response, time.Duration) {
	start := time.Now()
	resp, err := client.Get(url)
	if err != nil {
		log.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, time.Since(start)
}

func attempts(resp *http.Response) string {
	if n := resp.Header.Get(retryhttp.AttemptsHeader); n != "" {
		return n
	}
	return "0"
}

func flaky(client *http.Client, base string) {
	resp, took := get(client, base+"/flaky")
	fmt.Printf("\n1. GET /flaky fails twice with 503, then answers.\n   -> %d after %s earlier attempts, in %v\n",
		resp.StatusCode, attempts(resp), took.Round(10*time.Millisecond))
}

func rateLimited(client *http.Client, base string) {
	resp, took := get(client, base+"/limited")
	fmt.Printf("\n2. GET /limited answers 429 with Retry-After: 1 once.\n   -> %d after %s earlier attempt, in %v (the server's wait, not the backoff)\n",
		resp.StatusCode, attempts(resp), took.Round(100*time.Millisecond))
}

func upload(client *http.Client, base string) {
	payload := strings.Repeat("retryhttp streams and replays request bodies. ", 20000) // ~900 KiB
	sum := sha256.Sum256([]byte(payload))
	// A body with no GetBody: it is streamed to the first attempt and
	// replayed from the bounded buffer for the second.
	req, _ := http.NewRequest("POST", base+"/upload", io.NopCloser(strings.NewReader(payload)))
	req.Header.Set("Idempotency-Key", "demo-upload-1")
	resp, err := client.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("\n3. POST /upload (%d KiB streamed, Idempotency-Key set) drops the first attempt mid-body.\n   -> %d after %s earlier attempt; server saw sha256 %s, sent %s\n",
		len(payload)>>10, resp.StatusCode, attempts(resp), strings.TrimSpace(string(got))[:12], hex.EncodeToString(sum[:])[:12])
}

func hedged(client *http.Client, base string) {
	var lat []time.Duration
	for range 30 {
		_, took := get(client, base+"/search")
		lat = append(lat, took)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Printf("\n4. 30 x GET /search, one in five takes 400ms; hedged after 30ms.\n   -> slowest %v, median %v\n",
		lat[len(lat)-1].Round(time.Millisecond), lat[len(lat)/2].Round(100*time.Microsecond))
}

func outage(client *http.Client, base string) {
	var sent atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 25 {
				get(client, base+"/down")
				sent.Add(1)
			}
		})
	}
	wg.Wait()
	fmt.Printf("\n5. 200 x GET /down, always 503, maxAttempts 4.\n   -> the server saw %d attempts: %.2f per request (without a budget: 4.00)\n",
		downHits.Load(), float64(downHits.Load())/float64(sent.Load()))
}

var downHits atomic.Int64

func newServer() http.Handler {
	var flakyN, limitedN, uploadN, searchN atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/flaky", func(w http.ResponseWriter, r *http.Request) {
		if flakyN.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("/limited", func(w http.ResponseWriter, r *http.Request) {
		if limitedN.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		if uploadN.Add(1) == 1 {
			io.CopyN(h, r.Body, 100<<10)
			panic(http.ErrAbortHandler) // drop the connection mid-body
		}
		io.Copy(h, r.Body)
		fmt.Fprintln(w, hex.EncodeToString(h.Sum(nil)))
	})
	mux.HandleFunc("/search", func(w http.ResponseWriter, r *http.Request) {
		if searchN.Add(1)%5 == 0 {
			select {
			case <-time.After(400 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		io.WriteString(w, "results")
	})
	mux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) {
		downHits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	return mux
}
