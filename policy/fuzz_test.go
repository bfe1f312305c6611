package policy

import (
	"errors"
	"net/http"
	"testing"
)

func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		designExample,
		`{}`,
		`{"maxServerDelay": "1.5s"}`,
		`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1, "jitter": 0}}]}`,
		`{"methodConfig": [{"name": [{"host": "[::1]:80", "path": "/"}], "hedgingPolicy": {"maxAttempts": 2}}]}`,
		`{"methodConfig": [{"retryPolicy": {"maxAttempts": 1}}]}`,
		`{"methodConfig": [{"retryPolicy": {}, "hedgingPolicy": {}}]}`,
		`{"methodConfig": [{"retryPolicy": {"MaxAttempts": 2}}]}`,
		`{"methodConfig": [{"retryPolicy": {"initialBackoff": 0.1}}]}`,
		`{"maxServerDelay": "-1s"}`,
		`{"retryThrottling": {"maxTokens": 1001, "tokenRatio": 0}}`,
		`{"a": 1, "a": 2}`,
		`{} {}`,
		`[]`,
		`null`,
		``,
		`{"methodConfig": [`,
	} {
		f.Add([]byte(seed))
	}
	req, err := http.NewRequest(http.MethodGet, "https://api.example.com:443/v3/x", nil)
	if err != nil {
		f.Fatalf("got %v, want a request", err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			if c != nil {
				t.Errorf("got a config with error %v, want nil", err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("got %v, want an error matching ErrInvalid", err)
			}
			return
		}
		if c == nil {
			t.Fatal("got nil config and nil error, want a config")
		}
		if err := c.Validate(); err != nil {
			t.Errorf("ParseConfig accepted a config that Validate refuses: %v", err)
		}
		c.Match(req)
	})
}
