package redisfleet

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
)

// storeError is an error reply of the store, as go-redis gives them.
type storeError string

func (e storeError) Error() string { return string(e) }
func (storeError) RedisError()     {}

var _ redis.Error = storeError("")

func TestAnswerOf(t *testing.T) {
	ctx := context.Background()
	timeout := &net.OpError{Op: "read", Err: errors.New("i/o timeout")}
	// cmd returns a command with a reply (val) or none, and an error.
	cmd := func(val any, err error) redis.Cmder {
		c := redis.NewCmd(ctx, "evalsha")
		if val != nil {
			c.SetVal(val)
		}
		c.SetErr(err)
		return c
	}
	fetched := redis.NewMapStringStringCmd(ctx, "hgetall", "k")
	fetched.SetVal(map[string]string{})
	loaded := redis.NewStringCmd(ctx, "script", "load", "x")
	loaded.SetVal("sha")
	tests := []struct {
		name    string
		cmd     redis.Cmder
		execErr error
		want    answer
	}{
		{"a reply", cmd(int64(5), nil), nil, answered},
		{"a reply, then the deadline of go-redis's retries on every command", cmd(int64(5), context.DeadlineExceeded), context.DeadlineExceeded, answered},
		{"an empty map", fetched, nil, answered},
		{"a digest", loaded, nil, answered},
		{"no digest", redis.NewStringCmd(ctx, "script", "load", "x"), timeout, unanswered},
		{"the store's error on the connection, on no command", cmd(nil, nil), storeError("WRONGPASS invalid username-password pair"), refused},
		{"no reply, no error, Exec failed", cmd(nil, nil), timeout, unanswered},
		{"NOSCRIPT", cmd(nil, storeError("NOSCRIPT No matching script")), storeError("NOSCRIPT No matching script"), noScript},
		{"an error reply", cmd(nil, storeError("LOADING Redis is loading the dataset in memory")), nil, refused},
		{"a missing password", cmd(nil, storeError("NOAUTH Authentication required.")), nil, refused},
		{"a key of another type", cmd(nil, storeError("WRONGTYPE Operation against a key holding the wrong kind of value")), nil, rejected},
		{"a key of another type, in a script",
			cmd(nil, storeError("ERR Error running script (call to f_1): @user_script:3: WRONGTYPE Operation against a key holding the wrong kind of value")),
			nil, rejected},
		{"the store's error on the connection, naming WRONGTYPE", cmd(nil, nil), storeError("WRONGTYPE on the connection"), refused},
		{"a timeout", cmd(nil, timeout), timeout, unanswered},
		{"the deadline", cmd(nil, context.DeadlineExceeded), context.DeadlineExceeded, unanswered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, answerOf(tt.cmd, tt.execErr))
		})
	}
}
