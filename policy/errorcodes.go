package policy

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// ErrorCodes, set in [Rule.ErrorCodes], says where an API puts the code
// of its errors and what each code means, so that an SDK declares its
// API's error table as data, in Go or in JSON, with no code of its own:
// DynamoDB's ProvisionedThroughputExceededException in a 400, S3's
// SlowDown in a 503, Stripe's lock_timeout in a 429.
//
// The code is read from an answer whose status is 400 or above, never
// from a success, which costs nothing: from the Header when it is set and
// present, and otherwise from the body, as JSON when it starts with "{"
// and JSON is set, as XML when it starts with "<" and XML is set. Only the
// first 64 KiB of a body are read, and they stay the body's, for whoever
// reads it next (as with the Transport's PeekBody). They are waited for
// 100 ms at most, as long as a discarded answer's drain: an answer whose
// code has not come by then is judged by its status alone, and its body,
// still arriving, stays whole for the caller. A body that trickles or
// stalls thus delays a retry no more with an error table than without
// one. A code read is cut at
// its first ":", read after its "#" when it has one (the last, should it
// have several), and trimmed of whitespace, as the AWS SDKs read theirs:
// "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"
// reads as ProvisionedThroughputExceededException, and X-Amzn-ErrorType's
// "ValidationException:http://internal.amazon.com/..." as
// ValidationException.
//
// The code is then looked up, exactly, case included, in the four lists,
// each the Transport's verdict of the same meaning: Retryable (retried
// under the idempotency rules), Throttled (the host refused for load: any
// method is retried, as after a 429, and the host's requests of the rule
// are paced, see [Pace]), Unprocessed (the server did not act on it: any
// method is retried) and Final (handed back at once). The Transport's
// classifier is asked first; a listed code's verdict comes next, before
// the server's own X-Should-Retry and before the rule's status lists. A
// code listed nowhere, or none found, leaves the answer to them.
//
// At least one of JSON, XML and Header must be set, and at least one code
// listed; no code may be listed twice, nor be one that a code read could
// never be (empty, with whitespace around it, or with a ":" or a "#").
// JSON: "errorCodes" in a methodConfig entry, as
//
//	{"header": "X-Amzn-ErrorType", "json": "__type", "xml": "Error/Code",
//	 "throttled": ["ThrottlingException", "SlowDown"], "retryable": ["RequestTimeout"]}
type ErrorCodes struct {
	// JSON is where the code sits in a JSON body: the keys of nested
	// objects from the top, joined by ".", as "__type" (AWS's JSON
	// protocols) or "error.code" (Stripe's). A key met on an array is
	// looked for in the array's objects, in order, the first that leads
	// to a code giving it: "error.errors.reason" reads Google's
	// {"error": {"errors": [{"reason": "userRateLimitExceeded"}]}}, and
	// "error.details.reason" the reason of its google.rpc.ErrorInfo,
	// wherever it sits among the details. A decimal number picks that
	// element of an array instead, from 0 ("errors.0.reason"); on an
	// object it is a key as any other. The value there is a string, or a
	// number read as written. A key with a "." in it cannot be named.
	// Empty means the body is not read as JSON. JSON: "json".
	JSON string
	// XML is where the code sits in an XML body: element names joined by
	// "/", matched against the innermost elements wherever they are, by
	// their local names: "Error/Code" is the text of the first Code
	// element whose parent is an Error element, as in S3's
	// <Error><Code>SlowDown</Code>, EC2's <Response><Errors><Error><Code>
	// and SQS's <ErrorResponse><Error><Code>. Empty means the body is not
	// read as XML. JSON: "xml".
	XML string
	// Header is a response header whose value is the code, as AWS's
	// X-Amzn-ErrorType, read before the body; its first value counts.
	// Empty means none. JSON: "header".
	Header string
	// Retryable, Throttled, Unprocessed and Final list the codes that
	// have the Transport's verdicts Retryable, Throttled,
	// RetryableUnprocessed and Final. JSON: "retryable", "throttled",
	// "unprocessed", "final".
	Retryable   []string
	Throttled   []string
	Unprocessed []string
	Final       []string
}

// errorCodesJSON mirrors ErrorCodes as written in JSON.
type errorCodesJSON struct {
	JSON        string   `json:"json"`
	XML         string   `json:"xml"`
	Header      string   `json:"header"`
	Retryable   []string `json:"retryable"`
	Throttled   []string `json:"throttled"`
	Unprocessed []string `json:"unprocessed"`
	Final       []string `json:"final"`
}

func parseErrorCodes(path string, raw json.RawMessage) (*ErrorCodes, error) {
	var m errorCodesJSON
	if err := decodeObject(path, raw, &m); err != nil {
		return nil, err
	}
	e := ErrorCodes(m)
	return &e, nil
}

// clone returns a copy of e whose lists are its own.
func (e *ErrorCodes) clone() *ErrorCodes {
	if e == nil {
		return nil
	}
	c := *e
	for _, l := range c.lists() {
		*l.codes = slices.Clone(*l.codes)
	}
	return &c
}

// codeList is one of an ErrorCodes' lists, with its names.
type codeList struct {
	json, goName string
	codes        *[]string
}

// lists returns e's four lists, in the order they are checked.
func (e *ErrorCodes) lists() [4]codeList {
	return [4]codeList{
		{"retryable", "Retryable", &e.Retryable},
		{"throttled", "Throttled", &e.Throttled},
		{"unprocessed", "Unprocessed", &e.Unprocessed},
		{"final", "Final", &e.Final},
	}
}

// validate checks e at p: where the code is, and the codes listed.
func (e *ErrorCodes) validate(p path) error {
	if e.JSON == "" && e.XML == "" && e.Header == "" {
		return &FieldError{Field: p.String(), Reason: "must say where the code is: set " + p.name("json, xml or header", "JSON, XML or Header")}
	}
	if e.JSON != "" && !segments(e.JSON, ".", func(s string) bool { return true }) {
		return &FieldError{Field: p.key("json", "JSON").String(), Value: strconv.Quote(e.JSON),
			Reason: `must be object keys or array indexes joined by ".", none empty`}
	}
	if e.XML != "" && !segments(e.XML, "/", isXMLName) {
		return &FieldError{Field: p.key("xml", "XML").String(), Value: strconv.Quote(e.XML),
			Reason: `must be element names joined by "/", none empty`}
	}
	if e.Header != "" && !isToken(e.Header) {
		return &FieldError{Field: p.key("header", "Header").String(), Value: strconv.Quote(e.Header),
			Reason: "must be an HTTP field name"}
	}
	seen := make(map[string]string)
	for _, l := range e.lists() {
		lp := p.key(l.json, l.goName)
		for i, code := range *l.codes {
			if err := validateCode(lp.index(i), code); err != nil {
				return err
			}
			if other, dup := seen[code]; dup {
				return &FieldError{Field: lp.index(i).String(), Value: strconv.Quote(code), Reason: "is listed in " + other + " already"}
			}
			seen[code] = p.name(l.json, l.goName)
		}
	}
	if len(seen) == 0 {
		return &FieldError{Field: p.String(),
			Reason: "must list a code in " + p.name("retryable, throttled, unprocessed or final", "Retryable, Throttled, Unprocessed or Final")}
	}
	return nil
}

// validateCode refuses a code that no code read can equal: a code read is
// cut at its first ":", read after its "#" and trimmed.
func validateCode(p path, code string) error {
	reason := ""
	switch {
	case code == "":
		reason = "must not be empty"
	case strings.TrimSpace(code) != code:
		reason = "can never match: a code read is trimmed of whitespace"
	case strings.ContainsAny(code, ":#"):
		reason = `can never match: a code read is cut at its first ":" and read after its "#"`
	default:
		return nil
	}
	return &FieldError{Field: p.String(), Value: strconv.Quote(code), Reason: reason}
}

// segments reports whether s is one or more parts joined by sep, each
// non-empty and passing ok.
func segments(s, sep string, ok func(string) bool) bool {
	for part := range strings.SplitSeq(s, sep) {
		if part == "" || !ok(part) {
			return false
		}
	}
	return true
}

// isXMLName reports whether s can be an element's local name: no
// whitespace, no markup and no namespace prefix, which matching ignores.
func isXMLName(s string) bool {
	return !strings.ContainsAny(s, " \t\r\n<>&\"'=:/")
}
