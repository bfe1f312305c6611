package policy

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// constant is a caller's own Backoff: the same wait before every retry,
// however negative.
type constant time.Duration

func (c constant) Duration(int) time.Duration { return time.Duration(c) }

func TestRetrySchedule(t *testing.T) {
	t.Parallel()
	table := Table{Steps: []time.Duration{time.Second, 2 * time.Second}}
	tests := []struct {
		name string
		r    *Retry
		want Backoff
	}{
		{"nil", nil, Exponential{}},
		{"fields", &Retry{InitialBackoff: time.Second, MaxBackoff: time.Minute, BackoffMultiplier: 1.5, Jitter: 0.1},
			Exponential{Initial: time.Second, Max: time.Minute, Multiplier: 1.5, Jitter: 0.1}},
		{"jitter 0 is DefaultJitter", &Retry{InitialBackoff: time.Second, MaxBackoff: time.Minute, BackoffMultiplier: 2},
			Exponential{Initial: time.Second, Max: time.Minute, Multiplier: 2, Jitter: DefaultJitter}},
		{"jitter 1", &Retry{InitialBackoff: time.Second, MaxBackoff: time.Minute, BackoffMultiplier: 2, Jitter: 1},
			Exponential{Initial: time.Second, Max: time.Minute, Multiplier: 2, Jitter: 1}},
		{"an Exponential's jitter 0 is literal", &Retry{Backoff: Exponential{Initial: time.Second, Multiplier: 2}},
			Exponential{Initial: time.Second, Multiplier: 2}},
		{"default", Default().Rules[0].Retry,
			Exponential{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2, Jitter: 0.2}},
		{"GoogleAPI", &Retry{Backoff: GoogleAPI{}}, GoogleAPI{}},
		{"Table", &Retry{Backoff: table}, table},
		{"FullJitter pointer", &Retry{Backoff: &FullJitter{Initial: time.Second}}, &FullJitter{Initial: time.Second}},
		{"caller's own", &Retry{Backoff: constant(-time.Second)}, constant(-time.Second)},
		{"Backoff wins over the fields", &Retry{Backoff: GoogleAPI{Max: time.Second}, InitialBackoff: time.Hour},
			GoogleAPI{Max: time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.r.Schedule()
			assert.Equal(t, tt.want, got, "got %#v, want %#v", got, tt.want)
		})
	}
}

// TestRetryScheduleOneJitterDefault checks that a retry policy that says
// nothing about jitter waits alike however it was built.
func TestRetryScheduleOneJitterDefault(t *testing.T) {
	t.Parallel()
	c, err := ParseConfig([]byte(`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2,
		"initialBackoff": "1s", "maxBackoff": "10s", "backoffMultiplier": 2}}]}`))
	require.NoError(t, err, "got %v, want nil", err)
	fromJSON := c.Rules[0].Retry.Schedule()
	fromGo := (&Retry{MaxAttempts: 2, InitialBackoff: time.Second, MaxBackoff: 10 * time.Second, BackoffMultiplier: 2}).Schedule()
	assert.Equal(t, fromJSON, fromGo, "got %#v from JSON and %#v from Go, want them equal", fromJSON, fromGo)
	want := Exponential{Initial: time.Second, Max: 10 * time.Second, Multiplier: 2, Jitter: DefaultJitter}
	assert.Equal(t, want, fromGo, "got %#v, want %#v", fromGo, want)
}

func TestRetryableAndNonFatal(t *testing.T) {
	t.Parallel()
	r := &Retry{RetryableStatusCodes: []int{429, 503}}
	h := &Hedge{NonFatalStatusCodes: []int{502}}
	tests := []struct {
		status              int
		retryable, nonFatal bool
	}{
		{status: 200},
		{status: 429, retryable: true},
		{status: 500},
		{status: 502, nonFatal: true},
		{status: 503, retryable: true},
		{status: 0},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			t.Parallel()
			got := r.Retryable(tt.status)
			assert.Equal(t, tt.retryable, got, "Retryable(%d): got %v, want %v", tt.status, got, tt.retryable)
			got = h.NonFatal(tt.status)
			assert.Equal(t, tt.nonFatal, got, "NonFatal(%d): got %v, want %v", tt.status, got, tt.nonFatal)
			var nr *Retry
			var nh *Hedge
			assert.False(t, nr.Retryable(tt.status), "nil Retry: got true, want false")
			assert.False(t, nh.NonFatal(tt.status), "nil Hedge: got true, want false")
		})
	}
}

func TestServerDelayLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    *Config
		want time.Duration
	}{
		{"nil", nil, DefaultMaxServerDelay},
		{"zero", &Config{}, DefaultMaxServerDelay},
		{"negative", &Config{MaxServerDelay: -time.Second}, DefaultMaxServerDelay},
		{"set", &Config{MaxServerDelay: 5 * time.Second}, 5 * time.Second},
		{"default config", Default(), 60 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.c.ServerDelayLimit()
			assert.Equal(t, tt.want, got, "got %v, want %v", got, tt.want)
		})
	}
}

// The predicates say what the Transport does: a listed status below 400
// is never retried nor non-fatal, while a listed 4xx or 5xx is.
func TestPredicatesIgnoreStatusesBelow400(t *testing.T) {
	t.Parallel()
	listed := []int{100, 200, 302, 304, 399, 400, 429, 599}
	r := &Retry{RetryableStatusCodes: listed}
	h := &Hedge{NonFatalStatusCodes: listed}
	tests := []struct {
		status int
		want   bool
	}{
		{100, false},
		{200, false},
		{302, false},
		{304, false},
		{399, false},
		{400, true},
		{429, true},
		{599, true},
		{404, false}, // not listed
		{503, false}, // not listed
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			t.Parallel()
			got := r.Retryable(tt.status)
			assert.Equal(t, tt.want, got, "Retryable(%d): got %v, want %v", tt.status, got, tt.want)
			got = h.NonFatal(tt.status)
			assert.Equal(t, tt.want, got, "NonFatal(%d): got %v, want %v", tt.status, got, tt.want)
		})
	}
	t.Run("lists below 400 stay valid", func(t *testing.T) {
		t.Parallel()
		c := &Config{Rules: []Rule{
			{Name: []Name{{}}, Retry: &Retry{MaxAttempts: 2, InitialBackoff: time.Second, MaxBackoff: time.Second,
				BackoffMultiplier: 1, RetryableStatusCodes: []int{100, 302}}},
			{Name: []Name{{}}, Hedge: &Hedge{MaxAttempts: 2, NonFatalStatusCodes: []int{100, 302}}},
		}}
		err := c.Validate()
		assert.NoError(t, err, "got %v, want nil", err)
	})
}

// A retry policy's attempts are bounded, as gRPC bounds them, with room
// for Google's schedule of six.
func TestRetryAttempts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		retry *Retry
		want  int
	}{
		{nil, 1},
		{&Retry{MaxAttempts: 2}, 2},
		{&Retry{MaxAttempts: 6}, 6},
		{&Retry{MaxAttempts: MaxRetryAttempts}, MaxRetryAttempts},
		{&Retry{MaxAttempts: MaxRetryAttempts + 1}, MaxRetryAttempts},
		{&Retry{MaxAttempts: 1_000_000}, MaxRetryAttempts},
		{&Retry{MaxAttempts: math.MaxInt}, MaxRetryAttempts},
	}
	for _, tt := range tests {
		got := tt.retry.Attempts()
		assert.Equal(t, tt.want, got, "%+v: got %d attempts, want %d", tt.retry, got, tt.want)
	}
	c, err := ParseConfig([]byte(coreReporting))
	require.NoError(t, err)
	assert.Equal(t, 6, c.Rules[0].Retry.Attempts(), "Google's schedule: got %d attempts, want 6", c.Rules[0].Retry.Attempts())
	c, err = ParseConfig([]byte(`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 1000000,
	  "backoff": {"googleApi": {}}, "retryableStatusCodes": [503]}}]}`))
	require.NoError(t, err, "a large figure loads, as gRPC loads it")
	assert.Equal(t, MaxRetryAttempts, c.Rules[0].Retry.Attempts())
}
