package redisfleet

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// warmUp loads the scripts into the store, through the pipelines the
// flushes use, and returns the worst answer: a member's first flush,
// often during an outage of the HTTP server, then finds the scripts and
// an open connection instead of dialing (a connection opened by a plain
// command is not one the pipelines reuse).
func (f *Fleet) warmUp() answer {
	ctx, cancel := context.WithTimeout(f.ctx, f.opts.Timeout)
	defer cancel()
	return loadScripts(ctx, f.client)
}

// loadScripts loads both scripts into the server c talks to, in one
// pipeline, and returns the worst answer.
func loadScripts(ctx context.Context, c redis.Cmdable) answer {
	pipe := c.Pipeline()
	cmds := [...]*redis.StringCmd{pipe.ScriptLoad(ctx, budgetLua), pipe.ScriptLoad(ctx, holdLua)}
	_, err := pipe.Exec(ctx)
	worst := answered
	for _, cmd := range cmds {
		worst = max(worst, answerOf(cmd, err))
	}
	return worst
}
