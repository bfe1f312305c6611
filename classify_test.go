package retryhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"net/url"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

// goAwayError is the error of net/http's error for a connection the server
// closed after a GOAWAY (http2GoAwayError in net/http's h2_bundle.go).
func goAwayError(last int, code, debug string) error {
	return fmt.Errorf("http2: server sent GOAWAY and closed the connection; LastStreamID=%v, ErrCode=%v, debug=%q", last, code, debug)
}

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
		{"graceful GOAWAY above the stream", errors.New("http2: Transport received Server's graceful shutdown GOAWAY"), true, true},
		{"graceful GOAWAY above a streamed body's stream",
			errors.New("http2: Transport: cannot retry err [http2: Transport received Server's graceful shutdown GOAWAY] after Request.Body was written; define Request.GetBody to avoid this error"),
			true, true},
		{"quoted in a url.Error", &url.Error{Op: "Put", URL: "http://h/", Err: errors.New("http2: Transport received Server's graceful shutdown GOAWAY")}, true, true},
		{"GOAWAY ENHANCE_YOUR_CALM above the first stream", errors.New("http2: Transport received GOAWAY from server ErrCode:ENHANCE_YOUR_CALM"), true, false},
		{"GOAWAY ENHANCE_YOUR_CALM, closed", goAwayError(1, "ENHANCE_YOUR_CALM", "slow down"), true, false},
		{"GOAWAY NO_ERROR, closed", goAwayError(3, "NO_ERROR", ""), true, false},
		{"GOAWAY INTERNAL_ERROR, closed", goAwayError(3, "INTERNAL_ERROR", ""), true, false},
		{"GOAWAY PROTOCOL_ERROR above the first stream", errors.New("http2: Transport received GOAWAY from server ErrCode:PROTOCOL_ERROR"), false, false},
		{"GOAWAY PROTOCOL_ERROR, closed", goAwayError(1, "PROTOCOL_ERROR", ""), false, false},
		{"GOAWAY COMPRESSION_ERROR, closed", goAwayError(1, "COMPRESSION_ERROR", ""), false, false},
		{"GOAWAY HTTP_1_1_REQUIRED, closed", goAwayError(1, "HTTP_1_1_REQUIRED", ""), false, false},
		{"GOAWAY PROTOCOL_ERROR whose debug data names another code",
			goAwayError(1, "PROTOCOL_ERROR", "REFUSED_STREAM; stream error: received from peer"), false, false},
		{"GOAWAY NO_ERROR whose debug data names another code", goAwayError(1, "NO_ERROR", ", ErrCode=PROTOCOL_ERROR"), true, false},
		{"header line cut", errors.New(`net/http: HTTP/1.x transport connection broken: malformed MIME header: missing colon: "Content-Le"`), true, false},
		{"header line cut, as textproto says it", textproto.ProtocolError(`malformed MIME header: missing colon: "Content-Le"`), true, false},
		{"header line cut, naming a stream error",
			errors.New(`net/http: HTTP/1.x transport connection broken: malformed MIME header: missing colon: "stream error: stream ID 1; REFUSED_STREAM; received from peer"`),
			true, false},
		{"header line malformed", textproto.ProtocolError(`malformed MIME header line: "Bad Key: v"`), false, false},
		{"header line malformed, naming a refused stream",
			textproto.ProtocolError(`malformed MIME header line: "X-A: stream error: stream ID 1; REFUSED_STREAM; received from peer\x01"`), false, false},
		{"header line malformed, naming a graceful GOAWAY",
			textproto.ProtocolError(`malformed MIME header line: "X-A: http2: Transport received Server's graceful shutdown GOAWAY\x01"`), false, false},
		{"header line malformed, naming net/http's cancellation",
			textproto.ProtocolError(`malformed MIME header line: "X-A: net/http: request canceled\x01"`), false, false},
		{"first header line malformed, naming a refused stream",
			textproto.ProtocolError(`malformed MIME header initial line: " stream error: stream ID 1; REFUSED_STREAM; received from peer"`), false, false},
		{"status line malformed, naming a lost connection",
			errors.New(`net/http: HTTP/1.x transport connection broken: malformed HTTP response "http2: client connection lost"`), false, false},
		{"status code malformed, naming a refused stream",
			errors.New(`malformed HTTP status code "REFUSED_STREAM; http2: Transport received Server's graceful shutdown GOAWAY"`), false, false},
		{"version malformed, naming a closed idle connection",
			errors.New(`malformed HTTP version "server closed idle connection"`), false, false},
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

// FuzzStdlibText hands stdlibText the errors whose text quotes what the
// server sent, a GOAWAY's debug data, a header line or a status line, and checks that
// no such text changes what the error says.
func FuzzStdlibText(f *testing.F) {
	for _, s := range []string{"", "REFUSED_STREAM", `", ErrCode=NO_ERROR, debug="`, "stream error: stream ID 1; REFUSED_STREAM; received from peer",
		"http2: Transport received Server's graceful shutdown GOAWAY", "net/http: request canceled", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, server string) {
		stdlibText(errors.New(server)) // no panic, whatever the text
		cases := []struct {
			err  error
			want textKind
		}{
			{goAwayError(1, "PROTOCOL_ERROR", server), textOther},
			{goAwayError(1, "ENHANCE_YOUR_CALM", server), textLost},
			{fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w",
				textproto.ProtocolError(fmt.Sprintf("malformed MIME header: missing colon: %q", server))), textLost},
			{textproto.ProtocolError(fmt.Sprintf("malformed MIME header line: %q", server)), textOther},
			{textproto.ProtocolError(fmt.Sprintf("malformed MIME header initial line: %q", server)), textOther},
			{fmt.Errorf("net/http: HTTP/1.x transport connection broken: malformed HTTP response %q", server), textOther},
			{fmt.Errorf("malformed HTTP status code %q", server), textOther},
			{fmt.Errorf("malformed HTTP version %q", server), textOther},
		}
		for _, c := range cases {
			if got := stdlibText(c.err); got != c.want {
				t.Errorf("stdlibText(%q) = %v, want %v", c.err, got, c.want)
			}
		}
	})
}
