package benchmarks

import "time"

// Sizes are the dimensions of a run of the scenarios.
type Sizes struct {
	// Storm is the load of the outage and flaky scenarios, Tail of the
	// heavy tail, KeepAlive of the keep-alive scenario.
	Storm, Tail, KeepAlive Load
	// Deadline is the caller's deadline in the Retry-After scenario.
	Deadline time.Duration
	// Upload is the size of the streamed upload, in bytes.
	Upload int64
}

// Full are the sizes of the benchmarks, and of the figures.
var Full = Sizes{
	Storm:     Load{Requests: 2000, Workers: 32},
	Tail:      Load{Requests: 2000, Workers: 16},
	KeepAlive: Load{Requests: 960, Workers: 16},
	Deadline:  2 * time.Second,
	Upload:    64 << 20,
}

// Smoke are sizes small enough for `go test`, large enough that every
// scenario does what it is for: retries, budgets, hedges, a deadline, a
// body over the 1 MiB buffer.
var Smoke = Sizes{
	Storm:     Load{Requests: 64, Workers: 8},
	Tail:      Load{Requests: 40, Workers: 4},
	KeepAlive: Load{Requests: 32, Workers: 4},
	Deadline:  200 * time.Millisecond,
	Upload:    2 << 20,
}
