package retryhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTransientError(t *testing.T) {
	cases := []struct {
		name               string
		err                error
		transient, refused bool
	}{
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true, true},
		{"reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, true, false},
		{"EOF", fmt.Errorf("read: %w", io.EOF), true, false},
		{"per-attempt timeout", errAttemptTimeout, true, false},
		{"lost to another's cancellation", &lostError{err: context.Canceled}, true, false},
		{"h2 refused stream", errors.New("http2: stream error: stream ID 3; REFUSED_STREAM; received from peer"), true, true},
		{"h2 reset by the server", errors.New("stream error: stream ID 1; INTERNAL_ERROR; received from peer"), true, false},
		{"h2 overloaded server", errors.New("stream error: stream ID 5; ENHANCE_YOUR_CALM; received from peer"), true, false},
		{"h2 HTTP/1.1 required", errors.New("stream error: stream ID 1; HTTP_1_1_REQUIRED; received from peer"), false, false},
		{"h2 reset here", errors.New("stream error: stream ID 1; PROTOCOL_ERROR"), false, false},
		{"GOAWAY", errors.New("http2: server sent GOAWAY and closed the connection"), true, false},
		{"something else", errors.New("boom"), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			transient, refused := transientError(tc.err)
			assert.Equal(t, tc.transient, transient, "got transient %v, want %v", transient, tc.transient)
			assert.Equal(t, tc.refused, refused, "got refused %v, want %v", refused, tc.refused)
		})
	}
}
