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
// The full run is `go run ./cmd/figures`, which runs the benchmarks of this
// package, and the redisfleet module's BenchmarkFleet where redis-server is
// installed, and writes tables and charts into the repository's docs/.
package benchmarks
