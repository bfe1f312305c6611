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
// (a fetch alone, which waits FlushInterval, holds none back: it goes on
// a round trip of its own, which a failure does not wait behind). Successes are
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
//	PREFIX budget:HOST  a hash, while the bucket is below its capacity
//	                    and for an expiry after it refilled (absent:
//	                    full): "level" -> the bucket in milli-tokens
//	                    (absent: full), and MEMBER -> "NUMBER AT", the
//	                    last batch each member sent and when; expiring
//	                    Options.Expiry (10 min) after the last batch
//	                    that found the bucket in debt or left it so
//	PREFIX hold:HOST    a hash: rule -> "END STATUS", END in Unix ms;
//	                    expiring with its longest hold, never earlier
//	PREFIX holds        the pub/sub channel: "END STATUS HOST RULE", the
//	                    host and the rule escaped as URL path segments
//
// Two Lua scripts, run by EVALSHA (EVAL when the store answers
// NOSCRIPT, after a restart or a failover say), update them: one applies
// a batch of deltas to a bucket, clamps it to [0, capacity], drops its
// level when full and sets its expiry; the other extends a hold, never
// shortens it, and raises the key's expiry to its longest hold. Each
// touches one key, so the layout suits Redis Cluster whatever the
// prefix. The capacity and refill come from each report's Throttle; a
// report without one changes no budget.
//
// A batch counts once, however often it is sent. A member numbers its
// batches and sends one the store did not answer again as it was, the
// deltas reported since waiting behind it; the script remembers each
// member's last number for an expiry (Redis 6.2 or newer forgets it
// then; an older store, when the key goes), and applies a batch numbered
// no higher as a no-op. So neither the member's own resending nor
// go-redis's (it retries a pipeline whose replies came late, and
// reports the commands of a Cluster pipeline as failed, answered ones
// included, once its retries outlast the context) counts a failure
// twice. A bucket that refills to full keeps the records for an expiry,
// so that a batch of failures applied just before, whose answer was
// lost, counts once when sent again after the refill; a batch that
// leaves a full bucket full records nothing where there is no key, so a
// host never in debt costs nothing, and a batch of successes so applied,
// its answer lost, refills twice if the bucket falls into debt before it
// is sent again.
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
// the shard the members subscribe on, which they follow when the Ring
// maps the channel elsewhere; Redis Cluster carries it to every node.
// Holds are Unix times, so members' clocks should agree, as they do
// under NTP.
//
// # Faults
//
// A store that is down, refusing, slow or frozen costs the request path
// nothing: the flusher's round trips fail or take long, the readings go
// stale, and Look answers "allow". Each command of a round trip is
// settled by its own answer: when one server of several does not answer,
// the others' answers count. The flusher keeps the work the store did
// not take (a batch in flight and the deltas since, each clamped to one
// bucket's swing per host; more would be clamped at the store anyway),
// and tries again after a backoff that grows from FlushInterval to
// 500 ms with jitter. A store that refuses (a password it does not take,
// LOADING, OOM) keeps the work waiting too, and Stats says so
// (StoreRefusals). go-redis reconnects by itself; the scripts are sent
// whole when the store answers NOSCRIPT, the listener subscribes again
// (go-redis redials, or the listener does after a ping goes unanswered
// for 5 s, or sends SUBSCRIBE again, after its backoff, when the store
// refused it: BUSY with a script, NOAUTH) and then fetches every
// tracked host's holds.
//
// The warm-up, at the start and after a round trip whose work did not
// all go through, loads the scripts into every server that serves keys
// (each primary of a Cluster, each live shard of a Ring), through that
// server's own pipelines, so the connections it opens are the ones the
// flushes reuse: a member's first flush during an outage of the HTTP
// server does not wait to dial the store, whichever server holds the
// host's keys. It opens two to each server, one for the flusher's round
// trips and one for a round trip of fetches aside, so that a failure
// reported while fetches are in flight does not dial either: a member
// keeps two connections to each server, and one for its subscription,
// and while the store is down each warm-up tries two dials.
//
// A Cluster failover: while the primary of a host's slot is dead, its
// round trips fail (the rest of the fleet's work goes through), and
// every member falls back to its own budget for that host. The Fleet
// has go-redis read the slot map anew after each failed round trip, and
// every 200 ms while one is in flight, and the listener before it
// redials, so that the fleet shares its bucket and holds again within
// about a second of the replica's promotion (0.9 s in the tests, on
// loopback) instead of the minute after which go-redis would reload the
// map by itself. A Sentinel failover (go-redis's FailoverClient) takes
// about half a second after the Sentinel switches.
//
// A Ring's dead shard: go-redis takes it out of the Ring after three
// failed heartbeats (1.5 s by default); until then the round trips of
// its hosts fail. Then its hosts' keys map to the other shards, where
// their buckets start full and their holds are gone from the store (the
// members that knew them keep them); a Ring has no replicas. When it
// answers again, the Ring puts it back, and the hosts go back to what it
// still holds: nothing after a restart without persistence, the buckets
// and holds of before otherwise. The listener follows the channel to
// whichever shard the Ring maps it to, within a second.
//
// Options.Timeout bounds a round trip: its commands carry a context
// with that deadline. go-redis honours it between its own retries
// (MaxRetries of a pipeline, MaxRedirects of a Cluster's, each after a
// backoff from MinRetryBackoff to MaxRetryBackoff, and its dial retries)
// and, with the client's ContextTimeoutEnabled, while it reads and
// writes; without it, a read waits for the client's ReadTimeout. Set
// ContextTimeoutEnabled on any client. Over a *redis.Client (a
// FailoverClient too) without it, the Fleet's commands go through a
// clone of it whose ReadTimeout and WriteTimeout are Timeout, so its
// reads are bounded all the same, but none of the client's hooks sees
// them (go-redis's clone keeps none). go-redis's retries within the
// deadline are welcome: a retried budget batch counts once.
//
// Close stops the flusher and the listener and returns once neither can
// touch the client, so the client may be closed right after it: it
// cancels the round trip in flight and waits for it, within Timeout even
// when the store is frozen (within the client's ReadTimeout over a
// ClusterClient or a Ring without ContextTimeoutEnabled). Close never
// closes the client.
//
// # Memory
//
// A Fleet keeps at most MaxHosts hosts (4096), forgetting idle ones
// with nothing to send first; per host, a few words, the batch in
// flight and the pending delta, each clamped to one bucket's swing, and
// at most 16 holds. Nothing queues:
// the wake-ups of the flusher are channels of one slot.
//
// Most of a member's memory is its client's: go-redis v9.23 gives each
// pipeline connection 128 KiB buffers each way, and a Fleet keeps two
// pipeline connections to each server. ClusterOptions (or Options, or
// RingOptions) with PipelineReadBufferSize and PipelineWriteBufferSize
// of 16 KiB take a member over a Cluster of three primaries from about
// 1.8 MiB to 0.5 MiB; the Fleet's round trips need no more.
package redisfleet
