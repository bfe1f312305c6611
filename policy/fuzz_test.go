package policy

import (
	"errors"
	"math"
	"net/http"
	"reflect"
	"testing"
)

func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		designExample,
		coreReporting,
		`{}`,
		`{"maxServerDelay": "1.5s"}`,
		`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1, "jitter": 0}}]}`,
		`{"methodConfig": [{"name": [{"host": "[::1]:80", "path": "/"}], "hedgingPolicy": {"maxAttempts": 2}}]}`,
		`{"methodConfig": [{"retryPolicy": {"maxAttempts": 1}}]}`,
		`{"methodConfig": [{"retryPolicy": {}, "hedgingPolicy": {}}]}`,
		`{"methodConfig": [{"retryPolicy": {"MaxAttempts": 2}}]}`,
		`{"methodConfig": [{"retryPolicy": {"initialBackoff": 0.1}}]}`,
		retryWith(`"backoff": {"exponential": {"initial": "0.1s", "max": "2s", "multiplier": 2, "jitter": 0}}`),
		retryWith(`"backoff": {"fullJitter": {"initial": "0.1s", "max": "0s", "multiplier": 1.5}}`),
		retryWith(`"backoff": {"table": {"steps": ["0s", "1s", "5s"]}}`),
		retryWith(`"backoff": {"googleApi": {"max": "1m"}}`),
		retryWith(`"jitter": 0.1, "backoff": {"googleApi": {}}`),
		`{"serverDelayHeaders": [{"name": "X-RateLimit-Reset", "format": "seconds"}, {"name": "x-amz-retry-after", "format": "unixSeconds"}]}`,
		`{"serverDelayHeaders": [{"name": "Retry-After", "format": "httpDate"}]}`,
		`{"serverDelayHeaders": [{"name": "A", "format": "seconds"}, {"name": "a", "format": "milliseconds"}]}`,
		`{"maxServerDelay": "-1s"}`,
		`{"hold": {}}`,
		`{"methodConfig": [{"name": [{}], "errorCodes": {"json": "error.code", "xml": "Error/Code", "header": "X-Amzn-ErrorType", "retryable": ["a"], "throttled": ["b"], "unprocessed": ["c"], "final": ["d"]}}]}`,
		`{"methodConfig": [{"name": [{}], "errorCodes": {"json": "a..b", "final": ["a", "a"]}}]}`,
		retryWith(`"readAhead": 1048576, "backoff": {"googleApi": {}}`),
		`{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 3, "maxExtraLoad": 0.02}}]}`,
		`{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 3, "maxExtraLoad": 1.5}}]}`,
		`{"hold": {"maxWait": "1s"}}`,
		`{"hold": {"off": true}}`,
		`{"retryThrottling": {"off": true}}`,
		`{"retryThrottling": {"off": true, "maxTokens": 0}}`,
		`{"retryThrottling": {"off": false, "maxTokens": 10, "tokenRatio": 0.5}}`,
		`{"retryThrottling": {"maxTokens": 1001, "tokenRatio": 0}}`,
		`{"a": 1, "a": 2}`,
		`{} {}`,
		`[]`,
		`null`,
		``,
		`{"methodConfig": [`,
		`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3, "jitter": -Infinity}}]}`,
		`{"retryThrottling": {"maxTokens": [[[[NaN]]]]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParse(t, data)
	})
}

// FuzzBackoffJSON reads its input as the "backoff" of a retry policy,
// where the forms of the package's backoffs are parsed.
func FuzzBackoffJSON(f *testing.F) {
	for _, seed := range []string{
		`{"exponential": {"initial": "0.1s", "max": "2s", "multiplier": 2, "jitter": 0.2}}`,
		`{"exponential": {"initial": "1s", "max": "0s", "multiplier": 1, "jitter": 0}}`,
		`{"fullJitter": {"initial": "250ms", "max": "10s", "multiplier": 3}}`,
		`{"googleApi": {}}`,
		`{"googleApi": {"max": "1.5s"}}`,
		`{"table": {"steps": ["1s", "2s", "5s"]}}`,
		`{"table": {"steps": ["0s", null, 5]}}`,
		`{"googleApi": {}, "table": {"steps": ["1s"]}}`,
		`{"linear": {}}`,
		`{}`,
		`null`,
		`[]`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, backoff string) {
		c := checkParse(t, []byte(retryWith(`"backoff": `+backoff)))
		if c == nil || len(c.Rules) == 0 || c.Rules[0].Retry == nil {
			return
		}
		switch b := c.Rules[0].Retry.Backoff; b.(type) {
		case Exponential, FullJitter, GoogleAPI, Table:
		default:
			t.Errorf("got Backoff %#v, want one of the package's backoffs", b)
		}
	})
}

// FuzzDelayHeadersJSON reads its input as a config's "serverDelayHeaders".
func FuzzDelayHeadersJSON(f *testing.F) {
	for _, seed := range []string{
		`[{"name": "X-RateLimit-Reset", "format": "seconds"}]`,
		`[{"name": "RateLimit-Reset", "format": "milliseconds"}, {"name": "x-amz-retry-after", "format": "unixSeconds"}]`,
		`[{"name": "X-Retry-At", "format": "httpDate"}]`,
		`[{"name": "X-RateLimit-Reset", "format": "unixSeconds", "remaining": "X-RateLimit-Remaining"}]`,
		`[{"name": "x-ratelimit-reset-requests", "format": "duration", "remaining": "x-ratelimit-remaining-requests"}]`,
		`[{"name": "anthropic-ratelimit-requests-reset", "format": "rfc3339"}]`,
		`[{"name": "A", "format": "seconds", "remaining": "a"}]`,
		`[{"name": "A", "format": "seconds", "remaining": "Retry-After"}]`,
		`[{"name": "Retry-After", "format": "seconds"}]`,
		`[{"name": "A", "format": "seconds"}, {"name": "a", "format": "seconds"}]`,
		`[{"name": "A B", "format": "seconds"}]`,
		`[{"name": "A", "format": "minutes"}]`,
		`[{"name": "A"}]`,
		`["A"]`,
		`[]`,
		`null`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, list string) {
		c := checkParse(t, []byte(`{"serverDelayHeaders": `+list+`}`))
		if c == nil {
			return
		}
		if len(c.DelayHeaders) > maxDelayHeaders {
			t.Errorf("got %d headers, want at most %d", len(c.DelayHeaders), maxDelayHeaders)
		}
		canon := c.ServerDelayHeaders()
		if len(canon) != len(c.DelayHeaders) {
			t.Fatalf("got %d canonical headers, want %d", len(canon), len(c.DelayHeaders))
		}
		seen := make(map[string]bool)
		for i, h := range canon {
			if h.Name != http.CanonicalHeaderKey(c.DelayHeaders[i].Name) || h.Format != c.DelayHeaders[i].Format {
				t.Errorf("header %d: got %+v, want the canonical form of %+v", i, h, c.DelayHeaders[i])
			}
			if h.Remaining != http.CanonicalHeaderKey(c.DelayHeaders[i].Remaining) {
				t.Errorf("header %d: got remaining %q, want the canonical form of %q", i, h.Remaining, c.DelayHeaders[i].Remaining)
			}
			if h.Remaining != "" && h.Remaining == h.Name {
				t.Errorf("header %d: got remaining %q equal to its name, want it refused", i, h.Remaining)
			}
			if seen[h.Name] {
				t.Errorf("header %d: got %q twice, want names unique", i, h.Name)
			}
			seen[h.Name] = true
		}
	})
}

// checkParse parses data and checks what every input must give: an error
// matching ErrInvalid with a short value and no Config, or a Config that
// validates, matches requests and waits no negative time.
func checkParse(t *testing.T, data []byte) *Config {
	t.Helper()
	c, err := ParseConfig(data)
	if err != nil {
		if c != nil {
			t.Errorf("got a config with error %v, want nil", err)
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("got %v, want an error matching ErrInvalid", err)
		}
		if len(err.Error()) > 512 {
			t.Errorf("got a message of %d bytes, want the input cut short in it", len(err.Error()))
		}
		var fe *FieldError
		if errors.As(err, &fe) && len(fe.Value) > maxValueLen+len("...") {
			t.Errorf("got a value of %d bytes, want at most %d", len(fe.Value), maxValueLen+len("..."))
		}
		return nil
	}
	if c == nil {
		t.Fatal("got nil config and nil error, want a config")
	}
	if err := c.Validate(); err != nil {
		t.Errorf("ParseConfig accepted a config that Validate refuses: %v", err)
	}
	if d := c.Clone(); !reflect.DeepEqual(c, d) {
		t.Errorf("Clone: got %+v, want %+v", d, c)
	}
	if in := c.InForce(); in.Validate() != nil || len(in.Rules) != len(c.Rules) {
		t.Errorf("InForce: got %+v, want a valid copy of %+v", in, c)
	}
	req, err := http.NewRequest(http.MethodGet, "https://api.example.com:443/v3/x", nil)
	if err != nil {
		t.Fatalf("got %v, want a request", err)
	}
	c.Match(req)
	for _, r := range c.Rules {
		b := r.Retry.Schedule()
		for _, n := range []int{-1, 0, 1, 4, 63, 64, 1 << 20, math.MaxInt} {
			if d := b.Duration(n); d < 0 {
				t.Errorf("%#v.Duration(%d): got %v, want at least 0", b, n, d)
			}
		}
	}
	return c
}
