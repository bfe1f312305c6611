package benchmarks

import (
	"net/http"
	"runtime"
	"testing"
)

// The benchmarks run the scenarios at the Full sizes; cmd/figures runs
// them and turns their output into tables and charts. Each load scenario
// is one iteration: run it with -benchtime 1x and -count for the spread.

// BenchmarkSuccess is the cost of each peer when every request is answered
// 200 at once: a GET, and POSTs of 1 KiB and 1 MiB made by http.NewRequest
// (with GetBody). Hedgers whose hedges share the body are left out of the
// POSTs.
func BenchmarkSuccess(b *testing.B) {
	srv := NewServer(Discard())
	defer srv.Close()
	for _, op := range []struct {
		name string
		size int
	}{{"GET", 0}, {"POST-1KiB", 1 << 10}, {"POST-1MiB", 1 << 20}} {
		data := make([]byte, op.size)
		for _, p := range Peers() {
			if op.size > 0 && p.Caps.Body == BodyShared {
				continue
			}
			b.Run(op.name+"/"+p.Name, func(b *testing.B) {
				base := newBase(4)
				defer base.close()
				client := &http.Client{Transport: p.New(EverydaySpec(), base)}
				b.SetBytes(int64(op.size))
				b.ReportAllocs()
				for b.Loop() {
					if err := successOp(client, srv.URL, data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// successOp sends a GET when data is empty, a POST of data otherwise.
func successOp(client *http.Client, url string, data []byte) error {
	if len(data) > 0 {
		return Post(client, url, data)
	}
	status, err := get(client, url)
	if err == nil && status != http.StatusOK {
		return &statusError{status}
	}
	return err
}

type statusError struct{ status int }

func (e *statusError) Error() string { return "unexpected status " + http.StatusText(e.status) }

// reportLoad reports what a load scenario saw. extra% is the server
// requests beyond one per request, in percent, fine enough to read
// against a budget of a few percent.
func reportLoad(b *testing.B, r Result) {
	b.ReportMetric(r.PerRequest(), "srv-req/req")
	b.ReportMetric(100*(r.PerRequest()-1), "extra%")
	b.ReportMetric(100*r.Success(), "ok%")
	b.ReportMetric(100*float64(r.Errors)/float64(r.Requests), "err%")
	b.ReportMetric(float64(r.Conns), "conns")
}

// benchLoad runs one load scenario per iteration through each of peers,
// and reports the last run.
func benchLoad(b *testing.B, peers []Peer, run func(Peer) Result) {
	for _, p := range peers {
		b.Run(p.Name, func(b *testing.B) {
			var r Result
			for b.Loop() {
				r = run(p)
			}
			reportLoad(b, r)
			if len(r.Latencies) > 0 {
				b.ReportMetric(r.Quantile(0.5), "p50-ms")
				b.ReportMetric(r.Quantile(0.99), "p99-ms")
				b.ReportMetric(r.Quantile(0.999), "p99.9-ms")
			}
		})
	}
}

// BenchmarkOutage: the server answers every request 503.
func BenchmarkOutage(b *testing.B) {
	benchLoad(b, Peers(), func(p Peer) Result { return Outage(p, Full.Storm) })
}

// BenchmarkFlaky: the server answers 10% of requests 503 (seeded).
func BenchmarkFlaky(b *testing.B) {
	benchLoad(b, Peers(), func(p Peer) Result { return Flaky(p, Full.Storm) })
}

// BenchmarkTail: 98% of answers in 2 ms, 2% in 200 ms (seeded), under
// TailSpec (a 10 ms or 0.95-quantile delay, a 2% hedge budget); the
// hedgers, each way each sets its delay, and bare net/http.
func BenchmarkTail(b *testing.B) {
	benchLoad(b, HedgePeers(), func(p Peer) Result { return TailLatency(p, TailSpec(), Full.Tail) })
}

// BenchmarkTailShortDelay: the heavy tail under ShortDelaySpec, a fixed
// delay of 1 ms, under every answer; the hedgers whose delay is fixed.
func BenchmarkTailShortDelay(b *testing.B) {
	benchLoad(b, fixedDelay(HedgePeers()), func(p Peer) Result { return TailLatency(p, ShortDelaySpec(), Full.Tail) })
}

// BenchmarkTailShift: the heavy tail whose fast answers slow from 2 ms to
// 15 ms halfway through, under TailSpec; the same peers as BenchmarkTail.
func BenchmarkTailShift(b *testing.B) {
	benchLoad(b, HedgePeers(), func(p Peer) Result { return TailShift(p, Full.Tail) })
}

// fixedDelay returns the hedgers among peers whose delay is fixed.
func fixedDelay(peers []Peer) []Peer {
	var out []Peer
	for _, p := range peers {
		if p.Caps.Hedges && p.Delay == DelayFixed {
			out = append(out, p)
		}
	}
	return out
}

// BenchmarkKeepAlive: GETs under http.Client.Timeout, over each peer's own
// default base and over the same pooled base; conns is what the server
// accepted.
func BenchmarkKeepAlive(b *testing.B) {
	for _, def := range []bool{true, false} {
		name := "pooled-base"
		if def {
			name = "default-base"
		}
		b.Run(name, func(b *testing.B) {
			benchLoad(b, Peers(), func(p Peer) Result { return KeepAlive(p, def, Full.KeepAlive) })
		})
	}
}

// BenchmarkRetryAfter: one GET under a 2 s deadline to a server that
// answers 429 with Retry-After: 120. status is the answer's (0 for an
// error), deadline is 1 when the request failed with the deadline, ms the
// time it took.
func BenchmarkRetryAfter(b *testing.B) {
	for _, p := range Peers() {
		b.Run(p.Name, func(b *testing.B) {
			var o Outcome
			for b.Loop() {
				o = RetryAfterDeadline(p, Full.Deadline)
			}
			b.ReportMetric(float64(o.Status), "status")
			deadline := 0.0
			if o.DeadlineExceeded() {
				deadline = 1
			}
			b.ReportMetric(deadline, "deadline")
			b.ReportMetric(float64(o.Elapsed.Microseconds())/1000, "ms")
			b.ReportMetric(float64(o.ServerRequests), "srv-req")
		})
	}
}

// BenchmarkUpload sends a 64 MiB body made as it is read, without
// GetBody, of unknown length and of declared length, answered 200. B/op
// counts every allocation in the process, the server's included;
// peak-heap-B is how far the heap grew above where it stood, after a
// collection, when the upload began.
func BenchmarkUpload(b *testing.B) {
	srv := NewServer(Discard())
	defer srv.Close()
	for _, known := range []bool{false, true} {
		name := "unknown-length"
		if known {
			name = "known-length"
		}
		for _, p := range Peers() {
			if p.Caps.Body == BodyShared {
				continue
			}
			b.Run(name+"/"+p.Name, func(b *testing.B) { benchUpload(b, srv, p, known) })
		}
	}
}

func benchUpload(b *testing.B, srv *Server, p Peer, known bool) {
	base := newBase(1)
	defer base.close()
	client := &http.Client{Transport: p.New(EverydaySpec(), base)}
	hits0 := srv.Hits()
	var peak uint64
	b.SetBytes(Full.Upload)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
		grew, err := Upload(client, srv.URL, Full.Upload, known, true)
		if err != nil {
			b.Fatal(err)
		}
		peak = max(peak, grew)
	}
	b.ReportMetric(float64(peak), "peak-heap-B")
	b.ReportMetric(float64(srv.Hits()-hits0)/float64(b.N), "srv-req/op")
}
