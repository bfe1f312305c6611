package retryhttp_test

import (
	"testing"

	"github.com/retryhttp/retryhttp"
	"github.com/stretchr/testify/assert"
)

// JoinHooks calls each set of hooks in turn, skipping what is nil.
func TestJoinHooks(t *testing.T) {
	var got []string
	a := &retryhttp.Hooks{Wait: func(retryhttp.Wait) { got = append(got, "a wait") }}
	b := &retryhttp.Hooks{
		Wait: func(retryhttp.Wait) { got = append(got, "b wait") },
		Done: func(retryhttp.Done) { got = append(got, "b done") },
	}
	j := retryhttp.JoinHooks(a, nil, b)
	j.Wait(retryhttp.Wait{})
	j.Done(retryhttp.Done{})
	assert.Nil(t, j.AttemptStart, "no hooks of that kind: none")
	assert.Equal(t, []string{"a wait", "b wait", "b done"}, got)
	assert.Nil(t, retryhttp.JoinHooks().Done)
}
