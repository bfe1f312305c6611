// Package policy holds the retry and hedging policies of retryhttp as
// plain data: backoff algorithms, retry and hedging policies, retry
// throttling, their JSON form and the matching of requests to them.
//
// Everything here is pure. Nothing does I/O, starts a goroutine, reads the
// clock or keeps state between calls; the functions that need randomness
// draw it from math/rand/v2 and nothing else. Policies are values, safe
// to share between goroutines once built; acting on them (sending,
// waiting, counting tokens) is left to the transport.
//
// # Backoffs
//
// Each [Backoff] maps a retry number n (0 for the first retry) to a wait,
// holding no state: the caller owns the counter.
//
//   - [Exponential]: gRPC's min(Initial*Multiplier^n, Max) * (1 ± Jitter).
//     [ConnectionBackoff] returns gRPC's connection backoff, 1s growing by
//     1.6 up to 120s, ±20%.
//   - [FullJitter]: a uniform wait in [0, min(Initial*Multiplier^n, Max)),
//     from the first gRPC retry draft.
//   - [GoogleAPI]: 2^n s plus 0 to 1000 ms, as Google's APIs ask of their
//     clients.
//   - [Table]: a fixed list of waits, the last one repeated, each scaled by
//     a factor in [0.5, 1.5).
//
// Any of them, or a caller's own, drives a retry policy's waits through
// [Retry.Backoff]; [Retry.Schedule] returns the one in force. Without
// one, a Retry's four numeric fields describe an Exponential, and a zero
// Jitter there means [DefaultJitter], ±20%, whether the Retry was built in
// Go or read from JSON.
//
// # Configuration
//
// A [Config] is a list of [Rule] values, each covering the requests that
// one of its [Name] patterns matches and carrying a [Retry] or a [Hedge]
// policy, plus the protections that hold for every request: a [Throttle],
// holds ([Hold]), a pace ([Pace]) and, when asked for, a concurrency
// limit per host ([Admission]). [ParseConfig] reads it from the JSON shape of gRPC's
// service config, adapted to HTTP:
//
//	{
//	  "methodConfig": [{
//	    "name": [{"host": "www.googleapis.com", "path": "/analytics/v3/"}],
//	    "retryPolicy": {
//	      "maxAttempts": 6, "backoff": {"googleApi": {}},
//	      "retryableStatusCodes": [500, 503]
//	    }
//	  }, {
//	    "name": [{"host": "api.example.com", "method": "GET", "path": "/v3/"}],
//	    "retryPolicy": {
//	      "maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "2s",
//	      "backoffMultiplier": 2, "jitter": 0.2,
//	      "retryableStatusCodes": [429, 502, 503, 504],
//	      "perAttemptTimeout": "5s", "retryNonIdempotent": false
//	    }
//	  }, {
//	    "name": [{"method": "GET"}],
//	    "hedgingPolicy": {
//	      "maxAttempts": 3, "hedgingDelay": "0.05s",
//	      "hedgingDelayQuantile": 0.95, "nonFatalStatusCodes": [502, 503, 504],
//	      "maxExtraLoad": 0.02
//	    }
//	  }],
//	  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1},
//	  "hold": {},
//	  "maxServerDelay": "60s",
//	  "serverDelayHeaders": [{
//	    "name": "X-RateLimit-Reset", "format": "unixSeconds",
//	    "remaining": "X-RateLimit-Remaining"
//	  }]
//	}
//
// The first rule is the schedule Google's APIs ask of their clients: five
// retries, waiting 2^n seconds plus up to one more; a "maxAttempts" above
// [MaxRetryAttempts], 10, counts as 10, as gRPC counts more than 5 as 5.
// A retryPolicy gives its
// waits either as "backoff", in the form of one of the backoffs above
// (see [ParseConfig]), or as the four numeric fields, never both. A
// hedgingPolicy's "maxExtraLoad" caps the hedges a host is sent at a
// fraction of its requests, here 2%, whatever sets the delay; see
// [Hedge.MaxExtraLoad].
//
// "retryThrottling", "hold" and "pace" are switches, and a config that
// says nothing of one has [Default]'s, so that writing a first config, for
// the sake of its retry policy, never turns off the protection a Transport
// has with none. Each is turned off explicitly, by {"off": true}; in Go,
// by &Throttle{Off: true}, &Hold{Off: true} and &Pace{Off: true}, a nil
// field meaning the default as a left-out key does. Holds ([Hold]): while
// a response says its host will refuse requests for a while, the requests
// that would meet the refusal wait for its end, or fail at once, instead
// of being sent. The pace ([Pace]): a host that throttles the requests of
// a rule is sent them no faster than the rate it takes. "admission" is
// off unless given ([Admission]).
//
// "serverDelayHeaders" names headers in which the server gives its own
// delay, read after X-Retry-Pushback-Ms, Retry-After-Ms,
// x-amz-retry-after, Retry-After and the IETF RateLimit field; see
// [Config.DelayHeaders]. The one shown is
// GitHub's: its X-RateLimit-Reset is a Unix time (read as "seconds", it
// would ask for a wait of decades), and it is sent on every response, so
// it counts only when X-RateLimit-Remaining reads 0.
//
// [Config.Validate] checks a Config however it was built, and
// [Config.Match] picks the rule for a request: the first rule with a
// matching name. Every rule must list at least one name; the empty name
// {} matches every request. [Rule.Validate] checks a rule used on its own,
// such as one given for a single request, which needs no names. Every
// error they return is a *[FieldError] naming the field by its Go name
// ("Rules[0].Retry.MaxAttempts"), as ParseConfig's name it by its JSON
// path ("methodConfig[0].retryPolicy.maxAttempts"), with the bad value cut
// to a readable length. [Config.Clone] copies a Config deeply, as a
// Transport does with the one it is given, and [Config.InForce] says
// which protections a Config puts in force.
//
// [Default] is the configuration a Transport uses when it is given none;
// it has a throttle, holds and a pace. [None] is a configuration with no
// rules, and its throttle, holds and pace turned off: the switch that turns retries
// and hedging off for a whole Transport: each request is sent once, and
// only an attempt that provably never reached the server is sent again.
//
// # An API's own errors
//
// An SDK that wraps a REST API declares the API's error table in its rule,
// as data: [Rule.ErrorCodes] (JSON "errorCodes") says where the API puts
// its error code (a JSON key path, an XML element path, a header) and which
// codes are retried, are throttles, were not processed, or are final, as
// "__type": "...#ProvisionedThroughputExceededException" in DynamoDB's 400s
// or <Code>SlowDown</Code> in S3's 503s. [Retry.ReadAhead] (JSON
// "readAhead") reads an answer's body before it is handed back, so that a
// body that breaks off is retried as a failed attempt.
package policy
