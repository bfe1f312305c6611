// Package redisfleet shares the retry budget and the holds of a fleet of
// processes through Redis or Valkey, as a [retryhttp.Fleet]. It lives in
// a module of its own, so that the core module never imports go-redis.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "redis:6379"}) // or a ClusterClient, a Ring
//	fleet := redisfleet.New(rdb, redisfleet.Options{Prefix: "myservice:retryhttp:"})
//	defer fleet.Close()
//	client := &http.Client{Transport: &retryhttp.Transport{Fleet: fleet}}
//
// A per-process budget cannot protect a server from a fleet of small
// clients: each spends about a third of its tokens on a host that is
// down before its own bucket reacts. A Fleet keeps one bucket per host
// for the whole fleet, with the accounting of gRPC's retry throttling,
// so that the fleet as a whole stops retrying once that bucket is half
// empty, and a hold that one member meets (a Retry-After, a spent quota)
// holds every member.
//
// # The request path never waits
//
// Report and Look, which the Transport calls for every attempt, read and
// write the member's memory only: no I/O, no lock held across anything
// slow, no allocation for a host already met. Two goroutines do the
// rest. The flusher sends, in one pipelined round trip, each host's
// deltas summed since the last one, the holds the member met, and
// fetches of holds; a failure or a hold goes at once, unless a round
// trip that carried one went out less than FlushInterval (100 ms) ago
// (a fetch alone, which waits FlushInterval, holds none back). Successes are
// sampled: one in 16 is sent, as promptly, with a weight of 16. The
// count is per host and deterministic, from a random phase, so that
// every success has the same chance to be the one sent: nothing is lost
// on average, even for a member that sends a host fewer than 16
// requests (from a phase of zero, its successes would never go while
// its failures all do), and a healthy member makes at most one round
// trip per 16 successful requests, whatever its rate. Successes are
// sent even while the fleet's bucket is full, or the other members'
// failures would go unbalanced. The listener keeps the member
// subscribed to the holds channel.
//
// Look answers from what the store last said: Spent when the bucket the
// script returned for the host, at most StaleAfter (2 s) ago, held half
// its capacity or less (exactly half is not enough, as in gRPC), and the
// latest hold known for the host and rule while it lasts. A member reads
// a host's bucket with each of its own reports on it, so a member that
// sends to a host that is down, which reports a failure per request,
// reads it every round trip. When the store has not answered, or its
// answer is stale, Look answers "allow, no hold", and the Transport's
// own budget decides, as if there were no fleet.
//
// # What the store holds
//
// Every key and the channel begin with Options.Prefix ("retryhttp:" by
// default). For a host (a URL host, lowercased, port kept):
//
//	PREFIX budget:HOST  a string: the bucket in milli-tokens, only while
//	                    below its capacity (absent: full), expiring
//	                    Options.Expiry (10 min) after its last update
//	PREFIX hold:HOST    a hash: rule -> "END STATUS", END in Unix ms;
//	                    expiring with its longest hold, never earlier
//	PREFIX holds        the pub/sub channel: "END STATUS HOST RULE"
//
// Two Lua scripts, run by EVALSHA (EVAL when the store answers
// NOSCRIPT, after a restart say), update them: one applies a delta to a
// bucket, clamps it to [0, capacity], deletes it when full and sets its
// expiry; the other extends a hold, never shortens it, and raises the
// key's expiry to its longest hold. Each touches one key, so the layout
// suits Redis Cluster whatever the prefix. The capacity and refill come
// from each report's Throttle; a report without one changes no budget.
//
// # How holds travel, and why
//
// A hold is published on the channel in the same round trip that writes
// it, and every member's listener applies the holds of the hosts it has
// met. A member fetches a host's holds (one HGETALL, in a flush) when it
// first meets the host, for holds set before, and again for every host
// it tracks after each (re)subscription, for holds set while it was not
// listening. So a hold reaches every member that has sent to the host
// within FlushInterval plus two trips through the store: well within
// 200 ms when the store answers.
//
// Polling for holds on the flushes would have cost a round trip per
// FlushInterval for a member with nothing else to send, more than one
// per ten requests for a member sending slowly; pub/sub costs one
// connection per member and nothing per request. Holds are rare, so
// the channel carries little; a member ignores the holds of hosts it has
// not met. On a Ring, the message is routed by the channel's name, to
// the shard the members subscribe on; Redis Cluster carries it to every
// node. Holds are Unix times, so members' clocks should agree, as they
// do under NTP.
//
// # Faults
//
// A store that is down, refusing, slow or frozen costs the request path
// nothing: the flusher's round trips fail or take long, the readings go
// stale, and Look answers "allow". The flusher keeps the deltas it could
// not send (up to one bucket's swing per host; more would be clamped at
// the store anyway) and tries again after a backoff that grows from
// FlushInterval to 1 s with jitter. go-redis reconnects by itself; the
// scripts are sent whole when the store answers NOSCRIPT, the listener
// subscribes again (go-redis redials, or the listener does after a ping
// goes unanswered for 5 s) and then fetches every tracked host's holds.
// A round trip whose answer was lost may have been applied: its deltas
// are sent again and may count twice.
//
// The first round trip loads the scripts through the same pipeline the
// flushes use, so the connection it opens is the one they reuse: a
// member's first flush during an outage of the HTTP server does not wait
// to dial the store.
//
// Close stops the flusher and the listener and returns within 100 ms,
// even when the store is frozen; a command then in flight ends by the
// client's own timeouts (its context deadline, Options.Timeout, applies
// only with go-redis's ContextTimeoutEnabled), and nothing follows it.
// Close never closes the client.
//
// # Memory
//
// A Fleet keeps at most MaxHosts hosts (4096), forgetting idle ones
// with nothing to send first; per host, a few words, the pending delta
// clamped to one bucket's swing, and at most 16 holds. Nothing queues:
// the wake-ups of the flusher are channels of one slot.
package redisfleet
