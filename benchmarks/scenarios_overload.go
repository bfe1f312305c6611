package benchmarks

import (
	"time"
)

// The shared rate limit of S1 and S5: a bucket of BucketRate requests per
// second holding up to BucketBurst, a fifth of a second's worth. Its
// RateLimit-Policy announces the rate (q=100;w=1), not the burst: a
// client that sends a second's quota at once has all but BucketBurst of
// it refused, and its RateLimit field never shows more than BucketBurst
// remaining.
const (
	BucketRate  = 100
	BucketBurst = 20
)

// OverloadSeed seeds the hosts' draws and the clients' phases.
const OverloadSeed = 42

// Scenarios returns the overload scenarios at their full size, in the
// order of the design: S0, S1 under each signal, S5 under Retry-After and
// bare 429s, S2, S3, S4 with independent clients and with a fleet.
func Scenarios() []Scenario {
	return []Scenario{S0(),
		S1(SignalRetryAfter), S1(SignalRateLimit), S1(SignalBare),
		S5(SignalRetryAfter), S5(SignalBare),
		S2(), S3(), S4(false), S4(true)}
}

// S0 is a healthy host with a heavy tail ([TailHost]: 98% of answers in
// 2 ms, 2% in 200 ms), far from its capacity, offered 200 requests per
// second by one client for 20 s, each request under a 5 s deadline.
// Nothing should be paced or shed, and the p99 should be bare net/http's.
func S0() Scenario {
	return Scenario{Name: "S0-healthy", Title: "S0, healthy host with a heavy tail",
		Host:     func(sc Scenario) Host { return NewTailHost(sc.Seed) },
		Load:     []Group{{Clients: 1, Rate: 200, Deadline: 5 * time.Second}},
		Duration: 20 * time.Second, Window: Window{0, 20 * time.Second}, Seed: OverloadSeed,
		Metrics: []Metric{mGoodput, mP99, mPerRequest, mRefused}}
}

// S1 is a rate limit shared by separate clients at twice its rate: a
// [BucketHost] of [BucketRate] per second (burst [BucketBurst]) refusing
// with sig, and 10 clients, each a Transport of its own (a process of its
// own), sending 20 requests per second each for 40 s, each request under
// a 5 s deadline. The rates are read over the last 30 s.
func S1(sig Signal) Scenario {
	return Scenario{Name: "S1-" + sig.String(), Title: "S1, shared rate limit, " + sig.String() + " 429s",
		Host:     func(Scenario) Host { return NewBucketHost(BucketRate, BucketBurst, sig) },
		Load:     []Group{{Clients: 10, Rate: 20, Deadline: 5 * time.Second}},
		Duration: 40 * time.Second, Window: Window{10 * time.Second, 40 * time.Second}, Seed: OverloadSeed,
		Metrics: []Metric{mGoodput, m429, mPerRequest, mP99, mRefused, mDeadline}}
}

// S5 is a closed loop into the rate limit of S1: one client (one
// process) shared by 20 callers, each sending its next request as soon
// as its last ended, under a 5 s deadline, for 40 s. The rates are read
// over the last 30 s.
func S5(sig Signal) Scenario {
	return Scenario{Name: "S5-" + sig.String(), Title: "S5, closed loop into a rate limit, " + sig.String() + " 429s",
		Host:     func(Scenario) Host { return NewBucketHost(BucketRate, BucketBurst, sig) },
		Load:     []Group{{Clients: 1, Callers: 20, Deadline: 5 * time.Second}},
		Duration: 40 * time.Second, Window: Window{10 * time.Second, 40 * time.Second}, Seed: OverloadSeed,
		Metrics: []Metric{mAttemptRate, mGoodput, m429, mRefused}}
}

// S2 is a metastable failure: a [WorkerHost] of 8 workers at 10 ms each
// (800 per second), offered 640 per second (80%) by one client for 40 s,
// each request under a 1 s deadline, that loses 4 workers from 10 s to
// 20 s and serves the requests whose callers gave up all the same. The
// rates are read over the whole run; recovery is timed from 20 s.
func S2() Scenario {
	return Scenario{Name: "S2-metastable", Title: "S2, metastable: half the workers lost for 10 s",
		Host: func(sc Scenario) Host {
			return NewWorkerHost(8, 10*time.Millisecond, Loss{Workers: 4, From: sc.Trouble.From, To: sc.Trouble.To})
		},
		Load:     []Group{{Clients: 1, Rate: 640, Deadline: time.Second}},
		Duration: 40 * time.Second, Window: Window{0, 40 * time.Second},
		Trouble: Window{10 * time.Second, 20 * time.Second}, Seed: OverloadSeed,
		Metrics: []Metric{mRecovery, mPerRequest, {"drop-goodput/s", func(t Trial) float64 {
			return t.Goodput(t.Scenario.Trouble)
		}}, mGoodput, mDeadline}}
}

// S3Service is the service time of S3's workers: 8 of them make 640
// attempts per second, and an unloaded host answers in S3Service.
const S3Service = 12500 * time.Microsecond

// S3 is a latency collapse with no refusal: a [WorkerHost] of 8 workers
// at [S3Service] each (640 per second), never refusing, offered 960 per
// second (1.5 times) by one client for 30 s, each request under a 1 s
// deadline. The rates are read over the last 20 s.
func S3() Scenario {
	return Scenario{Name: "S3-collapse", Title: "S3, latency collapse: 1.5 times the capacity, never refused",
		Host:     func(Scenario) Host { return NewWorkerHost(8, S3Service, Loss{}) },
		Load:     []Group{{Clients: 1, Rate: 960, Deadline: time.Second}},
		Duration: 30 * time.Second, Window: Window{10 * time.Second, 30 * time.Second}, Seed: OverloadSeed,
		Metrics: []Metric{mGoodput, mHostP99, mDeadline, mRefused, mPerRequest}}
}

// S4 is an outage with sporadic clients: an [OutageHost] answering 503
// from 5 s to 35 s, offered, for 45 s, 0.2 requests per second by each of
// 1000 clients and 200 per second by one more, each request under a 5 s
// deadline; with fleet, the clients share one Fleet kept in memory
// (internal/memfleet). Attempts per request are read over the outage,
// and reported with the counts they are made of, as the target sits at
// the ratio's four printed figures (see figures' exact); recovery is
// timed from its end.
func S4(fleet bool) Scenario {
	sc := Scenario{Name: "S4-outage", Title: "S4, outage with sporadic clients, independent",
		Host: func(sc Scenario) Host { return NewOutageHost(sc.Trouble.From, sc.Trouble.To) },
		Load: []Group{{Clients: 1000, Rate: 0.2, Deadline: 5 * time.Second},
			{Clients: 1, Rate: 200, Deadline: 5 * time.Second}},
		Duration: 45 * time.Second, Window: Window{0, 45 * time.Second},
		Trouble: Window{5 * time.Second, 35 * time.Second}, Seed: OverloadSeed,
		Metrics: []Metric{{"outage-attempts/req", func(t Trial) float64 {
			return t.PerRequest(t.Scenario.Trouble)
		}}, {"outage-attempts", func(t Trial) float64 {
			a, _ := t.Counts(t.Scenario.Trouble)
			return float64(a)
		}}, {"outage-requests", func(t Trial) float64 {
			_, r := t.Counts(t.Scenario.Trouble)
			return float64(r)
		}}, mRecovery, mPerRequest, mGoodput}}
	if fleet {
		sc.Name, sc.Title, sc.Fleet = "S4-fleet", "S4, outage with sporadic clients, sharing a fleet", true
	}
	return sc
}

// The figures the scenarios report, over their Window unless said.
var (
	mGoodput     = Metric{"goodput/s", func(t Trial) float64 { return t.Goodput(t.Scenario.Window) }}
	mAttemptRate = Metric{"attempts/s", func(t Trial) float64 { return t.AttemptRate(t.Scenario.Window) }}
	m429         = Metric{"429-frac", func(t Trial) float64 { return t.StatusShare(t.Scenario.Window, 429) }}
	mPerRequest  = Metric{"attempts/req", func(t Trial) float64 { return t.PerRequest(t.Scenario.Window) }}
	mP99         = Metric{"p99-ms", func(t Trial) float64 { return t.Quantile(t.Scenario.Window, 0.99) }}
	mHostP99     = Metric{"host-p99-ms", func(t Trial) float64 { return t.HostQuantile(t.Scenario.Window, 0.99) }}
	mRefused     = Metric{"refused-frac", func(t Trial) float64 { return t.Share(t.Scenario.Window, Request.Refused) }}
	mDeadline    = Metric{"deadline-frac", func(t Trial) float64 {
		return t.Share(t.Scenario.Window, func(r Request) bool { return r.Failure == FailDeadline })
	}}
	// mRecovery is in seconds, -1 when goodput did not come back within
	// the run.
	mRecovery = Metric{"recovery-s", func(t Trial) float64 {
		if d, ok := t.Recovery(); ok {
			return d.Seconds()
		}
		return -1
	}}
)
