package redisfleet_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/policy"
	"github.com/retryhttp/retryhttp/redisfleet"
)

// wiring says whether a member's Transport shares a Fleet.
type wiring int

const (
	// alone: no Fleet, each Transport its own budget: the baseline.
	alone wiring = iota
	// fleet: the Fleet set as Transport.Fleet.
	fleet
)

func (w wiring) String() string {
	return [...]string{"alone", "fleet"}[w]
}

// member is one process of a fleet: a Transport with its own Fleet over
// its own go-redis client, as a process of a service would have.
type member struct {
	client *http.Client
	tr     *retryhttp.Transport
	fleet  *redisfleet.Fleet
	store  redis.UniversalClient
}

// storeAt returns a function that makes a member's own client of the
// one server at addr.
func storeAt(addr string) func() redis.UniversalClient {
	return func() redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1,
			DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	}
}

// newFleetMember returns a member that sends with pol (nil:
// policy.Default) and shares a fleet, made with opts, through its own
// client of the store, made by store.
func newFleetMember(w wiring, store func() redis.UniversalClient, pol *policy.Config, opts redisfleet.Options) *member {
	tr := &retryhttp.Transport{Policy: pol}
	m := &member{tr: tr, client: &http.Client{Transport: tr}}
	if w == alone {
		return m
	}
	m.store = store()
	m.fleet = redisfleet.New(m.store, opts)
	tr.Fleet = m.fleet
	return m
}

// close closes the member's Fleet, store client and connections.
func (m *member) close() {
	m.tr.CloseIdleConnections()
	if m.fleet != nil {
		_ = m.fleet.Close()
		_ = m.store.Close()
	}
}

// outcome is what a fleet's run gave.
type outcome struct {
	requests, ok, failed int64
	longest              time.Duration // the slowest request
}

// runFleet has each member send m GETs to target one after the other,
// all members at once, and returns what came back. onHalf, when not nil,
// runs once when half the requests have ended.
func runFleet(members []*member, m int, target string, onHalf func()) outcome {
	var o outcome
	var ended, ok, failed atomic.Int64
	var longest atomic.Int64
	half := int64(len(members) * m / 2)
	var once sync.Once
	var wg sync.WaitGroup
	for _, mb := range members {
		wg.Go(func() {
			for range m {
				start := time.Now()
				status, err := send(mb.client, target)
				d := int64(time.Since(start))
				for old := longest.Load(); d > old && !longest.CompareAndSwap(old, d); old = longest.Load() {
				}
				switch {
				case err != nil:
					failed.Add(1)
				case status == http.StatusOK:
					ok.Add(1)
				}
				if ended.Add(1) == half && onHalf != nil {
					once.Do(onHalf)
				}
			}
		})
	}
	wg.Wait()
	o.requests, o.ok, o.failed, o.longest = ended.Load(), ok.Load(), failed.Load(), time.Duration(longest.Load())
	return o
}

// send sends one GET and drains and closes its response.
func send(c *http.Client, target string) (int, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, target, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// quickPolicy is policy.Default with backoffs a tenth as long (10 ms
// doubling to 200 ms), so that a test's retries take little time. A
// fleet that sends with it is given a flush interval a tenth as long
// too (quickFleet), which keeps the two in the proportion of the
// defaults.
func quickPolicy() *policy.Config {
	p := policy.Default()
	p.Rules[0].Retry.InitialBackoff = 10 * time.Millisecond
	p.Rules[0].Retry.MaxBackoff = 200 * time.Millisecond
	return p
}

// quickFleet is the Options of a fleet sending with quickPolicy.
var quickFleet = redisfleet.Options{FlushInterval: 10 * time.Millisecond}
