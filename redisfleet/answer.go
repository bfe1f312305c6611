package redisfleet

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// answer is what became of one command of a round trip, worst last: a
// piece of work is settled by the worst answer among its commands.
type answer uint8

const (
	// answered: the store replied, and did the work.
	answered answer = iota
	// noScript: the store lacked the script; it is to be sent whole.
	noScript
	// rejected: the store replied that the command's key holds a value
	// of another type (WRONGTYPE: a key under the prefix that something
	// else wrote), which no round trip mends. The work is dropped and
	// counted, and the round trip not failed for it: sent again, it
	// would hold every other host's work behind the backoff of a store
	// that fails.
	rejected
	// refused: the store replied with an error instead (a password it
	// does not take, LOADING, OOM, a cluster moving slots): the work was
	// not done.
	refused
	// unanswered: no reply (the store down, slow or frozen, the round
	// trip's deadline passed): the work may or may not have been done.
	unanswered
)

// answerOf returns what became of cmd in a round trip whose Exec
// returned execErr.
//
// A command whose reply was read is answered, whatever error go-redis
// put on it afterwards: when its own retries of a Cluster pipeline
// outlast the context, go-redis puts the context's error on every
// command of the pipeline, the ones the live nodes answered included.
//
// A command may carry no error and no reply: go-redis does not put on
// the commands an error the store gave the connection rather than them
// (a wrong password, met when the connection is opened), and Exec
// returns it alone. Such a command was never sent; execErr says why.
func answerOf(cmd redis.Cmder, execErr error) answer {
	if replied(cmd) {
		return answered
	}
	err := cmd.Err()
	switch {
	case err == nil && isReply(execErr):
		return refused
	case err == nil:
		return unanswered
	case redis.HasErrorPrefix(err, "NOSCRIPT"):
		return noScript
	case isReply(err) && strings.Contains(err.Error(), "WRONGTYPE"):
		// As the command's own error, or quoted in a script's: a key
		// written by something else.
		return rejected
	case isReply(err):
		return refused
	}
	return unanswered
}

// replied reports whether the store's reply to cmd, one of the kinds the
// Fleet sends, was read: go-redis sets a command's value from its reply
// only, and an error reply sets none. A reply is never empty: a script
// returns an integer, PUBLISH an integer, HGETALL a map, SCRIPT LOAD a
// digest.
func replied(cmd redis.Cmder) bool {
	switch c := cmd.(type) {
	case *redis.Cmd:
		return c.Val() != nil
	case *redis.MapStringStringCmd:
		return c.Val() != nil
	case *redis.StringCmd:
		return c.Val() != ""
	}
	return false
}

// isReply reports whether err is the store's own answer (such as
// NOSCRIPT, OOM or WRONGPASS), as opposed to no answer at all.
func isReply(err error) bool {
	var e redis.Error
	return errors.As(err, &e)
}
