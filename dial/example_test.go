package dial_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/retryhttp/retryhttp/dial"
	"github.com/retryhttp/retryhttp/policy"
)

// A Dialer refuses dials to an address in its backoff window without
// touching the network, until the window ends or Reset cuts it short.
func ExampleDialer_ResetBackoff() {
	up := false
	d := &dial.Dialer{
		// A stand-in for the network: refused until the server is up.
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if !up {
				return nil, errors.New("connection refused")
			}
			c, server := net.Pipe()
			server.Close()
			return c, nil
		},
	}
	ctx := context.Background()

	_, err := d.DialContext(ctx, "tcp", "db.internal:5432")
	fmt.Println(err)
	_, err = d.DialContext(ctx, "tcp", "db.internal:5432")
	fmt.Println("backing off:", errors.Is(err, dial.ErrBackoff))

	// The application learns out of band that the server is back.
	up = true
	d.ResetBackoff("db.internal:5432")
	conn, err := d.DialContext(ctx, "tcp", "db.internal:5432")
	if err == nil {
		fmt.Println("connected")
		conn.Close()
	}
	// Output:
	// connection refused
	// backing off: true
	// connected
}

// With Stubby, a Dialer waits 1 s, 2 s, 4 s and so on up to 120 s
// after each failed attempt, counted from the moment the attempt failed,
// however long it took.
func ExampleAlgorithm() {
	d := &dial.Dialer{
		Algorithm: dial.Stubby,
		// A stand-in for a server that is down.
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return nil, errors.New("connection refused")
		},
	}
	ctx := context.Background()

	_, err := d.DialContext(ctx, "tcp", "db.internal:5432")
	fmt.Println(err)
	_, err = d.DialContext(ctx, "tcp", "db.internal:5432")
	var be *dial.BackoffError
	if errors.As(err, &be) {
		fmt.Println("next attempt in", be.Remaining.Round(time.Second))
	}
	// Output:
	// connection refused
	// next attempt in 1s
}

// Under an http.Transport, a Dialer backs off per address for both HTTP and
// HTTPS; ForceAttemptHTTP2 keeps HTTP/2 working through DialTLSContext.
func ExampleDialer_DialTLSContext() {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()

	d := &dial.Dialer{
		// Trust the test server; a real client leaves TLSConfig nil.
		TLSConfig: srv.Client().Transport.(*http.Transport).TLSClientConfig,
	}
	tr := &http.Transport{
		DialContext:       d.DialContext,
		DialTLSContext:    d.DialTLSContext,
		ForceAttemptHTTP2: true,
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(string(body))
	// Output: HTTP/2.0
}

// A reconnect loop in the stateless style: the policy only maps a retry
// number to a wait, and the loop owns the counter. It starts the counter
// again after a connection, and a hint that the server is back or a
// shutdown cuts a wait short.
func Example_reconnectLoop() {
	// Two quick retries, then a wait so long that only a hint ends it.
	var backoff policy.Backoff = policy.Table{Steps: []time.Duration{time.Millisecond, 2 * time.Millisecond, time.Hour}}
	reset := make(chan struct{})
	done := make(chan struct{})
	connect := func(attempt int) error {
		switch attempt {
		case 3:
			go func() { reset <- struct{}{} }() // the server is back
		case 4:
			return nil
		case 7:
			close(done) // the application shuts down
		}
		return errors.New("connection refused")
	}

	n := 0 // consecutive failures: the next wait is backoff.Duration(n)
	for attempt := 1; ; attempt++ {
		if err := connect(attempt); err == nil {
			fmt.Printf("attempt %d: connected\n", attempt)
			n = 0 // a real client would use the connection until it drops
			continue
		}
		fmt.Printf("attempt %d: failed, retry %d\n", attempt, n)
		wait := time.NewTimer(backoff.Duration(n))
		select {
		case <-wait.C:
			n++
		case <-reset:
			wait.Stop()
			fmt.Println("wait cut short")
			n = 0
		case <-done:
			wait.Stop()
			fmt.Println("stopped")
			return
		}
	}
	// Output:
	// attempt 1: failed, retry 0
	// attempt 2: failed, retry 1
	// attempt 3: failed, retry 2
	// wait cut short
	// attempt 4: connected
	// attempt 5: failed, retry 0
	// attempt 6: failed, retry 1
	// attempt 7: failed, retry 2
	// stopped
}
