package policy

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// awsCodes is an error table in the AWS SDKs' manner, for tests to break
// one field at a time.
func awsCodes() *ErrorCodes {
	return &ErrorCodes{
		JSON: "__type", XML: "Error/Code", Header: "X-Amzn-ErrorType",
		Retryable: []string{"RequestTimeout"}, Throttled: []string{"ThrottlingException", "SlowDown"},
		Unprocessed: []string{"PriorRequestNotComplete"}, Final: []string{"ValidationException"},
	}
}

// The JSON form reads into the same ErrorCodes as the Go form, under a
// retry rule, a hedging rule, or a rule with neither; with readAhead.
func TestParseErrorCodes(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(`{"methodConfig": [{
	  "name": [{}],
	  "retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s", "maxBackoff": "20s", "backoffMultiplier": 2,
	    "retryableStatusCodes": [500], "readAhead": 1048576},
	  "errorCodes": {"json": "__type", "xml": "Error/Code", "header": "X-Amzn-ErrorType",
	    "retryable": ["RequestTimeout"], "throttled": ["ThrottlingException", "SlowDown"],
	    "unprocessed": ["PriorRequestNotComplete"], "final": ["ValidationException"]}
	}, {
	  "name": [{"method": "GET"}], "hedgingPolicy": {"maxAttempts": 2},
	  "errorCodes": {"json": "error.code", "final": ["card_declined"]}
	}, {
	  "name": [{"method": "HEAD"}], "errorCodes": {"header": "X-Error", "unprocessed": ["busy"]}
	}]}`))
	require.NoError(t, err)
	assert.Equal(t, awsCodes(), cfg.Rules[0].ErrorCodes)
	assert.Equal(t, int64(1<<20), cfg.Rules[0].Retry.ReadAhead)
	assert.Equal(t, &ErrorCodes{JSON: "error.code", Final: []string{"card_declined"}}, cfg.Rules[1].ErrorCodes)
	assert.Equal(t, &ErrorCodes{Header: "X-Error", Unprocessed: []string{"busy"}}, cfg.Rules[2].ErrorCodes)
	assert.NoError(t, (&Rule{ErrorCodes: awsCodes()}).Validate(), "a rule on its own")
}

// Each mistake in an error table, or in readAhead, is named by its field
// and value, in Go's words for a Config built in Go and in JSON's for one
// read from JSON.
func TestErrorCodesRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		mutate  func(e *ErrorCodes)
		goErr   string
		json    string // the errorCodes object, for the same mistake
		jsonErr string
	}{
		{"nowhere to read", func(e *ErrorCodes) { e.JSON, e.XML, e.Header = "", "", "" },
			"policy: Rules[0].ErrorCodes: must say where the code is: set JSON, XML or Header",
			`{"final": ["x"]}`, "policy: methodConfig[0].errorCodes: must say where the code is: set json, xml or header"},
		{"empty JSON key", func(e *ErrorCodes) { e.JSON = "error..code" },
			`policy: Rules[0].ErrorCodes.JSON: "error..code": must be object keys or array indexes joined by ".", none empty`,
			`{"json": ".code", "final": ["x"]}`, `policy: methodConfig[0].errorCodes.json: ".code": must be object keys or array indexes joined by ".", none empty`},
		{"empty XML element", func(e *ErrorCodes) { e.XML = "/Error/Code" },
			`policy: Rules[0].ErrorCodes.XML: "/Error/Code": must be element names joined by "/", none empty`,
			`{"xml": "Error/", "final": ["x"]}`, `policy: methodConfig[0].errorCodes.xml: "Error/": must be element names joined by "/", none empty`},
		{"XML markup", func(e *ErrorCodes) { e.XML = "Error/<Code>" },
			`policy: Rules[0].ErrorCodes.XML: "Error/<Code>": must be element names joined by "/", none empty`,
			`{"xml": "s3:Error", "final": ["x"]}`, `policy: methodConfig[0].errorCodes.xml: "s3:Error": must be element names joined by "/", none empty`},
		{"header not a field name", func(e *ErrorCodes) { e.Header = "X Error" },
			`policy: Rules[0].ErrorCodes.Header: "X Error": must be an HTTP field name`,
			`{"header": "X-Error:", "final": ["x"]}`, `policy: methodConfig[0].errorCodes.header: "X-Error:": must be an HTTP field name`},
		{"no code listed", func(e *ErrorCodes) { e.Retryable, e.Throttled, e.Unprocessed, e.Final = nil, nil, nil, []string{} },
			"policy: Rules[0].ErrorCodes: must list a code in Retryable, Throttled, Unprocessed or Final",
			`{"json": "code", "final": []}`, "policy: methodConfig[0].errorCodes: must list a code in retryable, throttled, unprocessed or final"},
		{"code in two lists", func(e *ErrorCodes) { e.Final = append(e.Final, "SlowDown") },
			`policy: Rules[0].ErrorCodes.Final[1]: "SlowDown": is listed in Throttled already`,
			`{"json": "code", "retryable": ["a"], "throttled": ["b", "a"]}`,
			`policy: methodConfig[0].errorCodes.throttled[1]: "a": is listed in retryable already`},
		{"code twice in a list", func(e *ErrorCodes) { e.Throttled = append(e.Throttled, "SlowDown") },
			`policy: Rules[0].ErrorCodes.Throttled[2]: "SlowDown": is listed in Throttled already`,
			`{"json": "code", "final": ["a", "a"]}`, `policy: methodConfig[0].errorCodes.final[1]: "a": is listed in final already`},
		{"empty code", func(e *ErrorCodes) { e.Retryable = []string{""} },
			`policy: Rules[0].ErrorCodes.Retryable[0]: "": must not be empty`,
			`{"json": "code", "final": [""]}`, `policy: methodConfig[0].errorCodes.final[0]: "": must not be empty`},
		{"code with a prefix", func(e *ErrorCodes) { e.Throttled = []string{"com.amazonaws.dynamodb#ThrottlingException"} },
			`policy: Rules[0].ErrorCodes.Throttled[0]: "com.amazonaws.dynamodb#ThrottlingException": can never match: a code read is cut at its first ":" and read after its "#"`,
			`{"json": "code", "unprocessed": ["Busy:soon"]}`,
			`policy: methodConfig[0].errorCodes.unprocessed[0]: "Busy:soon": can never match: a code read is cut at its first ":" and read after its "#"`},
		{"code with spaces", func(e *ErrorCodes) { e.Final = []string{" card_declined"} },
			`policy: Rules[0].ErrorCodes.Final[0]: " card_declined": can never match: a code read is trimmed of whitespace`,
			`{"json": "code", "final": ["x "]}`, `policy: methodConfig[0].errorCodes.final[0]: "x ": can never match: a code read is trimmed of whitespace`},
		{"unknown key", nil, "", `{"json": "code", "final": ["x"], "fatal": ["y"]}`,
			`policy: methodConfig[0].errorCodes.fatal: ["y"]: unknown field`},
		{"not a list", nil, "", `{"json": "code", "final": "x"}`, `policy: methodConfig[0].errorCodes.final: "x": must be an array of strings`},
		{"a list of numbers", nil, "", `{"json": "code", "retryable": [5]}`, `policy: methodConfig[0].errorCodes.retryable: [5]: must be an array of strings`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.mutate != nil {
				c := validConfig()
				c.Rules[0].ErrorCodes = awsCodes()
				tt.mutate(c.Rules[0].ErrorCodes)
				err := c.Validate()
				require.Error(t, err)
				assert.Equal(t, tt.goErr, err.Error())
				assert.True(t, errors.Is(err, ErrInvalid))
			}
			_, err := ParseConfig([]byte(`{"methodConfig": [{"name": [{}], "errorCodes": ` + tt.json + `}]}`))
			require.Error(t, err)
			assert.Equal(t, tt.jsonErr, err.Error())
			assert.True(t, errors.Is(err, ErrInvalid))
		})
	}
}

// ReadAhead is in [0, MaxReadAhead], in Go and in JSON.
func TestReadAheadBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n     int64
		goErr string
	}{
		{0, ""},
		{MaxReadAhead, ""},
		{MaxReadAhead + 1, "policy: Rules[0].Retry.ReadAhead: 8388609: must be in [0, 8388608] bytes (0 for none)"},
		{-1, "policy: Rules[0].Retry.ReadAhead: -1: must be in [0, 8388608] bytes (0 for none)"},
	} {
		c := validConfig()
		c.Rules[0].Retry.ReadAhead = tc.n
		if tc.goErr == "" {
			assert.NoError(t, c.Validate(), "ReadAhead %d", tc.n)
			continue
		}
		assert.EqualError(t, c.Validate(), tc.goErr)
	}
	_, err := ParseConfig([]byte(`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2,
	  "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1, "readAhead": 9000000}}]}`))
	assert.EqualError(t, err, "policy: methodConfig[0].retryPolicy.readAhead: 9000000: must be in [0, 8388608] bytes (0 for none)")
	_, err = ParseConfig([]byte(`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2,
	  "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1, "readAhead": "1MiB"}}]}`))
	assert.EqualError(t, err, `policy: methodConfig[0].retryPolicy.readAhead: "1MiB": must be an integer`)
}
