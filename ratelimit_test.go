package retryhttp

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Retry-After-Ms is Retry-After in milliseconds, read after
// X-Retry-Pushback-Ms and before Retry-After.
func TestParseServerDelayRetryAfterMs(t *testing.T) {
	t.Parallel()
	ra := func(d time.Duration) serverDelay { return serverDelay{Kind: delayRetryAfter, Wait: d} }
	tests := []struct {
		name string
		h    http.Header
		want serverDelay
	}{
		{"ms", http.Header{"Retry-After-Ms": {"250"}}, ra(250 * time.Millisecond)},
		{"zero", http.Header{"Retry-After-Ms": {"0"}}, ra(0)},
		{"fraction", http.Header{"Retry-After-Ms": {"1.5"}}, ra(1500 * time.Microsecond)},
		{"long fraction", http.Header{"Retry-After-Ms": {"0.0000019"}}, ra(time.Nanosecond)},
		{"whitespace", http.Header{"Retry-After-Ms": {" 20\t"}}, ra(20 * time.Millisecond)},
		{"first of several", http.Header{"Retry-After-Ms": {"20", "30"}}, ra(20 * time.Millisecond)},
		{"largest representable", http.Header{"Retry-After-Ms": {"9223372036854"}}, ra(9223372036854 * time.Millisecond)},
		{"saturates", http.Header{"Retry-After-Ms": {"9223372036855"}}, ra(tooLong)},
		{"saturates with a fraction", http.Header{"Retry-After-Ms": {"99999999999999999999.5"}}, ra(tooLong)},
		{"wins over Retry-After", http.Header{"Retry-After-Ms": {"20"}, "Retry-After": {"1"}}, ra(20 * time.Millisecond)},
		{"pushback wins over it", http.Header{"X-Retry-Pushback-Ms": {"100"}, "Retry-After-Ms": {"20"}},
			serverDelay{Kind: delayPushback, Wait: 100 * time.Millisecond}},
		{"negative skipped", http.Header{"Retry-After-Ms": {"-20"}, "Retry-After": {"1"}}, ra(time.Second)},
		{"garbage skipped", http.Header{"Retry-After-Ms": {"soon"}, "Retry-After": {"1"}}, ra(time.Second)},
		{"unit skipped", http.Header{"Retry-After-Ms": {"20ms"}, "Retry-After": {"1"}}, ra(time.Second)},
		{"trailing point skipped", http.Header{"Retry-After-Ms": {"20."}}, serverDelay{}},
		{"leading point skipped", http.Header{"Retry-After-Ms": {".5"}}, serverDelay{}},
		{"exponent skipped", http.Header{"Retry-After-Ms": {"1e3"}}, serverDelay{}},
		{"empty skipped", http.Header{"Retry-After-Ms": {""}}, serverDelay{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := parseServerDelay(tt.h, fixedNow, nil)
			assert.Equal(t, tt.want, got, "got %+v, want %+v", got, tt.want)
		})
	}
}
