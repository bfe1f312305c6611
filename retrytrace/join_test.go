package retrytrace_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp/retrytrace"
)

// JoinHooks calls each set of hooks in turn, skipping what is nil.
func TestJoinHooks(t *testing.T) {
	var got []string
	a := &retrytrace.Hooks{Wait: func(retrytrace.WaitInfo) { got = append(got, "a wait") }}
	b := &retrytrace.Hooks{
		Wait: func(retrytrace.WaitInfo) { got = append(got, "b wait") },
		Done: func(retrytrace.DoneInfo) { got = append(got, "b done") },
	}
	j := retrytrace.JoinHooks(a, nil, b)
	j.Wait(retrytrace.WaitInfo{})
	j.Done(retrytrace.DoneInfo{})
	assert.Nil(t, j.AttemptStart, "no hooks of that kind: none")
	assert.Equal(t, []string{"a wait", "b wait", "b done"}, got)
	assert.Nil(t, retrytrace.JoinHooks().Done)
}
