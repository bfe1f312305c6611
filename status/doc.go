// Package status serves an operator's page of a [retryhttp.Transport]'s
// live state, as gRPC's channelz and Envoy's admin page serve theirs: an
// HTML page for a person, and the same data as JSON, with ?format=json,
// for tools. Mount it where you choose, as net/http/pprof is mounted,
// behind whatever guards your other admin pages:
//
//	mux.Handle("/debug/retryhttp", status.Handler(tr))
//
// The page is made from [retryhttp.Transport.Stats] alone, and speaks its
// words: per host, the counters of [retryhttp.Counters], the retry budget
// and holds of [retryhttp.HostStats], the dial backoff of the addresses
// its attempts went to ([dial.Window]); for the Transport, its total, its
// request-body buffer, the addresses in dial backoff that no host claims
// and its last failures ([retryhttp.Failure]). [Handler] says what each
// answer holds, and its bounds.
//
// # JSON
//
// The JSON is an object of version 1: a later version may add fields,
// never change one. Its keys are the names of the Go fields they show,
// in lowerCamel case ("extraAttemptsFailed" is
// Counters.ExtraAttemptsFailed); a duration is a number of milliseconds,
// to the microsecond, under its field's name followed by "Ms"
// ("holdWaitTimeMs" is Counters.HoldWaitTime); a time is an RFC 3339
// string in UTC; a number is finite, and one that Go holds as a float
// (tokens) has up to three decimals; a list is never null; an error is
// its text, "" for none. Keys that no Go field has are derived: remainingMs is the time
// left until a hold or a dial window ends, and moreX counts the entries
// of the list X that are not listed. In full, with counters written once:
//
//	{"version": 1, "time": "2025-03-01T12:00:05Z", "used": true, "dialer": true, "policyErr": "",
//	 "total": {counters},
//	 "buffer": {"buffered": 0, "highWater": 65536, "committedForSize": 0},
//	 "hosts": [{"host": "api.example.com", counters...,
//	   "tokens": 4.5, "maxTokens": 10, "hedgeTokens": 0,
//	   "holds": [{"rule": "*", "status": 429, "since": "2025-03-01T12:00:00Z",
//	     "until": "2025-03-01T12:00:30Z", "remainingMs": 25000, "fleet": false}], "moreHolds": 0,
//	   "paceRate": 14.2, "concurrencyLimit": 0, "inFlight": 0,
//	   "latencySamples": 128, "latencyP50Ms": 2.1, "latencyP90Ms": 3.4, "latencyP99Ms": 201.3,
//	   "dialBackoff": [{"network": "tcp", "addr": "10.0.0.7:443", "failures": 3,
//	     "until": "2025-03-01T12:00:07.1Z", "remainingMs": 2100, "err": "dial tcp ..."}],
//	   "moreDialBackoff": 0, "recentFailures": 2}],
//	 "moreHosts": 0,
//	 "otherDialBackoff": [], "moreOtherDialBackoff": 0,
//	 "failures": [{"time": "2025-03-01T12:00:04Z", "host": "api.example.com", "method": "GET",
//	   "path": "/v1/items", "status": 503, "err": "", "attempts": 3}],
//	 "failed": 57}
//
// where counters, in "total" and spread into each host, are
//
//	"requests": 120, "extraAttempts": 9, "extraAttemptsFailed": 6, "transparentRetries": 0,
//	"hedges": 2, "hedgesWon": 1, "hedgesCancelled": 2, "budgetRefusals": 2,
//	"fleetRefusals": 0, "hedgeBudgetRefusals": 0, "holdsSet": 1, "holdWaits": 0,
//	"holdWaitTimeMs": 0, "holdRefusals": 1, "paceWaits": 12, "paceWaitTimeMs": 840,
//	"paceRefusals": 0, "admissionWaits": 0, "admissionWaitTimeMs": 0, "shed": 0,
//	"committedForSize": 0
//
// [Handler]'s documentation says what each key means.
package status
