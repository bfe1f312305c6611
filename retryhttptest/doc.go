// Package retryhttptest is a test kit for code that sends HTTP requests
// through a retrying client such as retryhttp.Transport: a scripted server
// that answers with statuses, server delays and faults, and records every
// attempt it receives.
//
// A [Server] plays a script of [Step]s, one per attempt, the last one
// repeating:
//
//	srv := &retryhttptest.Server{Script: []retryhttptest.Step{
//		{Status: 503, Header: http.Header{"Retry-After": {"30"}}},
//		{Fault: retryhttptest.Reset},
//		{Body: `{"id": 1}`},
//	}}
//
// The same script runs two ways. In memory, the Server is itself an
// [http.RoundTripper]: set it as a retryhttp.Transport's Base, and run
// the test inside testing/synctest's bubble, where the 30 seconds of
// Retry-After pass in virtual time and the test takes microseconds:
//
//	synctest.Test(t, func(t *testing.T) {
//		client := &http.Client{Transport: &retryhttp.Transport{Base: srv}}
//		resp, err := client.Get("https://api.example.com/v1/items/1")
//		// ... check resp and err ...
//		srv.WantHeader(t, "X-Retry-Attempts", "", "1", "2")
//	})
//
// On loopback, [Server.Start] serves it over HTTP/1.1 and
// [Server.StartHTTP2] over HTTP/2, for what must cross a real socket.
// Each [Fault] documents what the client sees in each mode; in memory,
// faults give the errors of an HTTP/1.1 connection: a reset is a
// *net.OpError wrapping syscall.ECONNRESET, a truncated body ends in
// io.ErrUnexpectedEOF, a hang ends with the request context.
//
// Every attempt is recorded as an [Attempt]: method, path, headers, the
// request body (whole, or its size and SHA-256), and when it arrived. The
// Want methods check the records and report mismatches through any
// testing.TB, in the test's words ("got 3 attempts, want 2"), so that no
// assertion library is needed.
//
// The package imports nothing outside the standard library.
package retryhttptest
