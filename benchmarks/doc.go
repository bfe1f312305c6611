// Package benchmarks measures retryhttp beside its peers on loopback: bare
// net/http, retryhttp (retry, retry with its budget, hedge),
// go-retryablehttp, failsafe-go (retry, retry with its budget, hedge) and
// hedgedhttp ([Peers]); and, on a heavy tail, every hedger with each way
// it sets or bounds its delay: a fixed delay, a quantile, retryhttp's hedge
// budget (policy.Hedge.MaxExtraLoad) alone and beside a fixed delay, and
// failsafe-go's budget ([HedgePeers]).
//
// Each scenario has one [Spec], the policy every peer in it follows, and
// each [Peer] maps that Spec into its own configuration. What a peer cannot
// express is part of its description ([Caps]), shown beside its figures
// rather than papered over. The mapping is tested: `go test ./...` checks
// that each peer built from a Spec makes the attempts, waits and choices
// the Spec asks for, and runs every scenario once at a tiny size.
//
// Beside them, the overload scenarios S0-S5 ([Scenarios]) measure what
// each client does to a host that is limited, slowed or down, in virtual
// time: scripted hosts in memory ([Host]: [TailHost], [BucketHost],
// [WorkerHost], [OutageHost]) serve open and closed loads ([Group]) from
// clients built by each [Contender] (bare net/http, retryhttp's zero
// Transport or any policy, a static retry loop, go-retryablehttp,
// failsafe-go's retry policy alone and around its adaptive throttler or
// limiter), and each run ([Scenario.Run]) returns a [Trial] to read the
// figures and the goodput over time from. BenchmarkOverload reports them:
//
//	go test -run XXX -bench Overload -benchtime 1x .
//
// The full run is `go run ./cmd/figures`, which runs the benchmarks of this
// package, and the redisfleet module's BenchmarkFleet where redis-server is
// installed, and writes tables and charts into the repository's docs/.
package benchmarks
