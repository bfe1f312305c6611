package redisfleet

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBatchSentAgainAsItWas checks the member's half of counting a
// budget batch once: a batch the store did not answer goes again with
// its number and delta, the deltas reported since waiting behind it; an
// answered batch lets the next one go, numbered higher.
func TestBatchSentAgainAsItWas(t *testing.T) {
	f := idleFleet(t)
	var b batch
	budget := func() item {
		t.Helper()
		b.seq++
		f.collect(&b, true)
		for _, it := range b.items {
			if it.kind == budgetItem {
				return it
			}
		}
		t.Fatal("got no budget batch")
		return item{}
	}
	fail := retryhttp.FleetReport{Budget: retryhttp.FleetFailure, Throttle: throttle}
	f.Report("h", fail)
	f.Report("h", fail)
	f.Report("h", fail)
	h := f.host("h")
	first := budget()
	assert.Equal(t, item{h: h, kind: budgetItem, seq: 1, delta: -3000, capacity: 100_000}, first)

	f.Report("h", fail) // reported while the first batch is unanswered
	f.keep(&first)
	again := budget()
	assert.Equal(t, first, again, "got the unanswered batch changed")

	ok := again
	ok.cmd = redis.NewCmd(context.Background())
	ok.cmd.(*redis.Cmd).SetVal(int64(96_000))
	select { // the wake-ups of the reports, spent by the round trips
	case <-f.urgent:
	default:
	}
	f.apply(&ok)
	assert.Zero(t, h.inflight.Load(), "got the answered batch still in flight")
	assert.Len(t, f.urgent, 1, "got the deltas that waited behind the batch not due")
	assert.False(t, h.spent(f.sinceEpoch(time.Now()), time.Minute.Milliseconds()), "got 96 tokens read as spent")
	next := budget()
	assert.Equal(t, item{h: h, kind: budgetItem, seq: 3, delta: -1000, capacity: 100_000}, next)
}

func TestAHostWithABatchInFlightIsNotQuiet(t *testing.T) {
	f := idleFleet(t)
	h := f.host("h")
	assert.True(t, h.quiet(time.Now().UnixMilli()))
	h.inflight.Store(-1000)
	assert.False(t, h.quiet(time.Now().UnixMilli()), "got a host whose batch the store has not answered evictable without loss")
}

// pipeClient records the commands of every pipeline the Fleet executes
// through it.
type pipeClient struct {
	redis.UniversalClient
	mu    sync.Mutex // guards pipes: a warm-up may run beside a round trip
	pipes []string
}

func (c *pipeClient) Pipeline() redis.Pipeliner {
	return recordedPipe{c.UniversalClient.Pipeline(), c}
}

// executed returns the pipelines executed so far, each as its commands'
// names, sorted.
func (c *pipeClient) executed() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(slices.Values(c.pipes))
}

// recordedPipe is a pipeline of pipeClient's.
type recordedPipe struct {
	redis.Pipeliner
	c *pipeClient
}

func (p recordedPipe) Exec(ctx context.Context) ([]redis.Cmder, error) {
	var names []string
	for _, cmd := range p.Cmds() {
		names = append(names, cmd.Name())
	}
	p.c.mu.Lock()
	p.c.pipes = append(p.c.pipes, strings.Join(names, ", "))
	p.c.mu.Unlock()
	return p.Pipeliner.Exec(ctx)
}

// TestWarmUpAloneRunsAlone checks what a round trip sends with and
// without a warm-up and work: a warm-up with nothing else to send is
// the scripts' pipelines alone (two at once, and two more when they
// left one connection: the kinds are compared, not the count), with no
// pipeline of work beside them, empty; with work, both kinds go.
func TestWarmUpAloneRunsAlone(t *testing.T) {
	const scripts, work = "script, script", "evalsha, hgetall" // the failure, and the fetch of its new host
	tests := []struct {
		name     string
		warm     bool // the member warmed up already
		failure  bool // a failure waits
		want     []string
		wantWhat carried
	}{
		{"a warm-up alone", false, false, []string{scripts}, carriedWarmUp},
		{"a warm-up beside work", false, true, []string{work, scripts}, carriedUrgent},
		{"work alone", true, true, []string{work}, carriedUrgent},
		{"nothing", true, false, nil, carriedNothing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, rc := newMini(t)
			// The budget script loaded already, as by another member:
			// no NOSCRIPT, whichever pipeline goes first.
			require.NoError(t, rc.ScriptLoad(t.Context(), budgetLua).Err())
			c := &pipeClient{UniversalClient: rc}
			f := newFleet(c, Options{})
			t.Cleanup(func() { require.NoError(t, f.Close()) })
			if tt.failure {
				f.Report("h", retryhttp.FleetReport{Budget: retryhttp.FleetFailure, Throttle: throttle})
			}
			b := batch{warm: tt.warm}
			ok, what := f.flush(&b)
			assert.True(t, ok, "got the round trip failed")
			assert.Equal(t, tt.wantWhat, what)
			assert.True(t, b.warm, "got the member not warmed up")
			assert.Equal(t, tt.want, slices.Compact(c.executed()), "got the kinds of pipelines executed")
		})
	}
}
