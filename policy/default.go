package policy

import "time"

// Default returns the configuration a Transport uses when it is given none.
// Each call returns a new Config that the caller may modify.
//
// It has one rule, matching every request, that retries statuses 429, 502,
// 503 and 504 up to 3 attempts in all: the first retry after 100ms, the
// second after 200ms, each wait jittered by ±20% (the backoff doubles up
// to a cap of 2s).
//
// Its throttle holds 100 tokens with a token ratio of 0.25:
//
//   - A total outage is cheap. The bucket starts full at 100 tokens, every
//     failed attempt takes one, and retries stop once 50 or fewer are left,
//     so a host that fails everything costs at most about 50 extra
//     attempts before retries stop: over 2000 requests, at most 1.025
//     attempts per request.
//   - Ordinary flakiness still retries. If a fraction p of attempts fails,
//     the bucket drifts by -p + (1-p)*0.25 tokens per attempt, which is
//     zero at p = 0.2: the bucket stays full while fewer than 20% of
//     attempts fail, so a host answering 10% of requests with 503 keeps
//     being retried. gRPC's commonly used ratio of 0.1 already drains the
//     bucket near p = 9% (0.1/1.1), cutting retries off in exactly the
//     weather they are for.
//
// It turns holds on ([Hold]): a host that says it will refuse requests
// for a while, by a 429 or 503 with a delay or by a spent quota, is not
// sent the requests it would refuse. It turns the pace on ([Pace]): a
// host that throttles the requests of a rule is sent them no faster than
// the rate it takes. It has no [Admission].
//
// Its throttle, holds and pace are also what any Config has where its
// Throttle, Hold or Pace is nil, as in a JSON config that says nothing of
// them: a first config, written for a retry policy, keeps them. Default
// spells them out, so that a caller who reads or edits them finds them
// set.
func Default() *Config {
	return &Config{
		Rules: []Rule{{
			Name: []Name{{}},
			Retry: &Retry{
				MaxAttempts:          3,
				InitialBackoff:       100 * time.Millisecond,
				MaxBackoff:           2 * time.Second,
				BackoffMultiplier:    2,
				Jitter:               DefaultJitter,
				RetryableStatusCodes: []int{429, 502, 503, 504},
			},
		}},
		Throttle: defaultThrottle(),
		Hold:     defaultHold(),
		Pace:     defaultPace(),
	}
}

// None returns a Config with no rules, and with its throttle, holds and
// pace turned off explicitly (&Throttle{Off: true}, &Hold{Off: true},
// &Pace{Off: true}; in JSON, {"retryThrottling": {"off": true}, "hold":
// {"off": true}, "pace": {"off": true}}): the switch,
// as in gRPC's retry design, that turns retries and hedging off for a
// whole Transport, for a caller that retries on its own. The zero Config
// is not the same: it has no rules either, but the default throttle,
// holds and pace. No request
// matches a rule, so each is sent once and its answer, whatever it is,
// goes back to the caller; server delay headers are not waited for, and
// no response holds the requests that follow it. Only the
// transparent resend remains: an attempt that provably never reached the
// server (a refused dial, a refused HTTP/2 stream) may be sent once more,
// at once, as under any Config.
//
// A nil Transport.Policy means [Default], not None. Each call returns a
// new Config that the caller may modify.
func None() *Config {
	return &Config{Throttle: &Throttle{Off: true}, Hold: &Hold{Off: true}, Pace: &Pace{Off: true}}
}
