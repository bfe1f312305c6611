package redisfleet

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// budgetLua applies one batch of a member's deltas to a host's bucket,
// once however often it is sent.
//
// KEYS[1] is the host's budget key, a hash; ARGV[1] is the member's id,
// ARGV[2] the batch's number, ARGV[3] its delta in milli-tokens
// (negative for failures), ARGV[4] the bucket's capacity in
// milli-tokens, ARGV[5] the key's expiry in milliseconds, ARGV[6] the
// member's clock in Unix milliseconds. It returns the bucket's level
// after the batch, in milli-tokens, within [0, capacity].
//
// The hash holds the level under "level" and, under each member's id,
// "NUMBER AT": the number of the member's last batch it applied, and
// when. A member numbers its batches in the order it sends them and
// sends a batch again, as it was, until the store answers it; a batch
// numbered no higher than the member's last is one applied already,
// whose answer was lost (or which go-redis sent twice, retrying a
// pipeline whose replies came late), and changes nothing. A member's
// record is forgotten an expiry after its last batch: two fields drawn
// at random are checked at every call that writes (HRANDFIELD, Redis
// 6.2 or newer; an older store keeps the records until the key goes),
// so that the members that come and go do not grow the hash while the
// bucket stays in debt.
//
// An absent level is a full bucket, and so is an absent key: a host
// never in debt costs the store nothing. A bucket that reaches its
// capacity loses its level but keeps the records, for an expiry from
// then, so that a batch applied before the refill and sent again after
// it, its answer lost, still counts once; the batches that leave a full
// bucket full add their records to a key that holds some, without
// putting off its expiry, and store nothing where there is no key. So a
// full bucket is a key for an expiry after it refilled at most, and then
// none. (A batch of successes that found no key is so not recorded: sent
// again after the bucket fell into debt, it refills twice. Recording it
// would make every healthy host a key.) A stored level above the
// capacity (a member with a smaller throttle than the one that wrote it)
// reads as the capacity, as the core's bucket does. A batch that finds
// the bucket in debt or leaves it so sets the expiry, so a host nobody
// has reported on for that long is full again: the fleet forgets old
// debt rather than refusing retries forever.
const budgetLua = `
local capacity = tonumber(ARGV[4])
local stored = redis.call('HGET', KEYS[1], 'level')
local level = tonumber(stored or '')
if level == nil or level > capacity then
  level = capacity
end
local last = redis.call('HGET', KEYS[1], ARGV[1])
local applied = last and tonumber(string.match(last, '^%d+') or '')
if applied and applied >= tonumber(ARGV[2]) then
  return level
end
level = math.max(level + tonumber(ARGV[3]), 0)
local record = ARGV[2] .. ' ' .. ARGV[6]
if level < capacity then
  redis.call('HSET', KEYS[1], 'level', level, ARGV[1], record)
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
elseif stored then
  redis.call('HSET', KEYS[1], ARGV[1], record)
  redis.call('HDEL', KEYS[1], 'level')
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
elseif redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], ARGV[1], record)
else
  return capacity
end
local forget = tonumber(ARGV[6]) - tonumber(ARGV[5])
local some = redis.pcall('HRANDFIELD', KEYS[1], 2, 'WITHVALUES')
if type(some) == 'table' and not some.err then
  for i = 1, #some, 2 do
    local at = tonumber(string.match(some[i + 1], ' (%d+)$') or '')
    if at and at < forget then
      redis.call('HDEL', KEYS[1], some[i])
    end
  end
end
return math.min(level, capacity)
`

// holdLua records a hold on a host's rule, extending it only.
//
// KEYS[1] is the host's hold key, a hash from rule to "end status" (end
// in Unix milliseconds); ARGV[1] is the rule, ARGV[2] the hold's end,
// ARGV[3] its status, ARGV[4] the hold's time left in milliseconds. It
// returns 1 when the hold was extended, 0 when the store already held one
// that ends as late or later.
//
// The key's expiry is raised to the longest hold it carries and never
// lowered, so a short hold set after a long one does not cut the long one
// short; a field whose hold has ended stays until the key expires, and
// readers skip it by its end.
const holdLua = `
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  local oldEnd = tonumber(string.match(old, '^%d+'))
  if oldEnd and oldEnd >= tonumber(ARGV[2]) then
    return 0
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. ARGV[3])
local ttl = tonumber(ARGV[4])
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
`

// script is a Lua script and its SHA-1 digest, for EVALSHA.
type script struct{ src, sha string }

// The scripts, with their digests computed once. They are never changed
// after initialisation.
var (
	budgetScript = script{budgetLua, redis.NewScript(budgetLua).Hash()}
	holdScript   = script{holdLua, redis.NewScript(holdLua).Hash()}
)

// Key and channel names under Options.Prefix. One script call touches one
// key, so the layout is safe for Redis Cluster whatever the prefix: no
// call needs two keys in one slot.
const (
	budgetKeyPart = "budget:" // + host: hash of "level" -> the bucket in milli-tokens (absent: full), member -> its last batch
	holdKeyPart   = "hold:"   // + host: hash of rule -> "end status"
	holdChannel   = "holds"   // pub/sub: every hold a member sets
)

// holdMessage is the payload published for a hold: "END STATUS HOST
// RULE", the host and the rule escaped as URL path segments are
// (url.PathEscape), so that no field holds a space and any string goes
// through whole: a host with an IPv6 zone may hold a space (Windows
// names interfaces so), a rule anything.
func holdMessage(end int64, status int, host, rule string) string {
	return strconv.FormatInt(end, 10) + " " + strconv.Itoa(status) + " " +
		url.PathEscape(host) + " " + url.PathEscape(rule)
}

// parseHoldMessage reads a payload of holdMessage; ok is false for
// anything else, which the listener ignores. A message of a host and a
// rule that need no escaping reads the same unescaped.
func parseHoldMessage(p string) (end int64, status int, host, rule string, ok bool) {
	e, rest, _ := strings.Cut(p, " ")
	s, rest, _ := strings.Cut(rest, " ")
	h, r, found := strings.Cut(rest, " ")
	if !found || strings.Contains(r, " ") {
		return 0, 0, "", "", false
	}
	end, status, ok = parseEndStatus(e, s)
	if !ok {
		return 0, 0, "", "", false
	}
	host, herr := url.PathUnescape(h)
	rule, rerr := url.PathUnescape(r)
	if herr != nil || rerr != nil {
		return 0, 0, "", "", false
	}
	return end, status, host, rule, true
}

// parseHoldValue reads a field of a hold key, "end status"; ok is false
// for anything else.
func parseHoldValue(v string) (end int64, status int, ok bool) {
	e, s, found := strings.Cut(v, " ")
	if !found {
		return 0, 0, false
	}
	return parseEndStatus(e, s)
}

// parseEndStatus reads a hold's end, in Unix ms, and its status; ok is
// false for anything else.
func parseEndStatus(e, s string) (end int64, status int, ok bool) {
	end, err := strconv.ParseInt(e, 10, 64)
	if err != nil || end <= 0 {
		return 0, 0, false
	}
	status, err = strconv.Atoi(s)
	if err != nil {
		return 0, 0, false
	}
	return end, status, true
}
