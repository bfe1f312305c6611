package retryhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"slices"
	"strings"

	"github.com/retryhttp/retryhttp/policy"
)

// codePeek is the most of a body read for its error code: an API's error
// answer is small, and a body larger than this is no error document worth
// holding in memory to find out.
const codePeek = 64 << 10

// codeVerdict is the verdict the rule's error table e gives resp, an
// answer of status 400 or above: the verdict of the list its code is in,
// or UsePolicy when no code is found or it is listed nowhere. The body is
// read, when it must be, within ctx, the attempt's, and left whole for
// whoever reads it next.
func codeVerdict(ctx context.Context, resp *http.Response, e *policy.ErrorCodes) Verdict {
	code, ok := errorCode(ctx, resp, e)
	switch {
	case !ok:
		return UsePolicy
	case slices.Contains(e.Retryable, code):
		return Retryable
	case slices.Contains(e.Throttled, code):
		return Throttled
	case slices.Contains(e.Unprocessed, code):
		return RetryableUnprocessed
	case slices.Contains(e.Final, code):
		return Final
	}
	return UsePolicy
}

// errorCode reads resp's error code where e says: its header first, which
// costs no read of the body; else the body, as JSON or XML by its first
// byte, when e reads that form.
func errorCode(ctx context.Context, resp *http.Response, e *policy.ErrorCodes) (string, bool) {
	if e.Header != "" {
		if vs := resp.Header.Values(e.Header); len(vs) > 0 {
			if code := cleanCode(vs[0]); code != "" {
				return code, true
			}
		}
	}
	if e.JSON == "" && e.XML == "" {
		return "", false
	}
	body, _ := peekBody(ctx, resp, codePeek) // a body cut short may still hold its code
	body = bytes.TrimLeft(bytes.TrimPrefix(body, []byte("\uFEFF")), " \t\r\n")
	switch {
	case len(body) == 0:
	case body[0] == '{' && e.JSON != "":
		return jsonCode(body, e.JSON)
	case body[0] == '<' && e.XML != "":
		return xmlCode(body, e.XML)
	}
	return "", false
}

// cleanCode reads a code as the AWS SDKs do: cut at its first ":"
// (X-Amzn-ErrorType's "ValidationException:http://..."), read after its
// "#" (the "com.amazonaws.dynamodb.v20120810#" of a __type; after the
// last, should there be several), and trimmed.
func cleanCode(v string) string {
	v, _, _ = strings.Cut(v, ":")
	if i := strings.LastIndexByte(v, '#'); i >= 0 {
		v = v[i+1:]
	}
	return strings.TrimSpace(v)
}

// jsonCode reads the string (or number) at path, keys joined by ".", in
// the JSON document that body starts with. It walks the document's tokens
// and holds none of it but the keys on the path, so that a body cut short
// by the peek still gives a code that came before the cut. A key given
// twice counts the first time.
func jsonCode(body []byte, path string) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for key := range strings.SplitSeq(path, ".") {
		if !jsonMember(dec, key) {
			return "", false
		}
	}
	t, err := dec.Token()
	if err != nil {
		return "", false
	}
	var code string
	switch v := t.(type) {
	case string:
		code = cleanCode(v)
	case json.Number:
		code = v.String()
	}
	return code, code != ""
}

// jsonMember reads, from dec, the start of an object and its members up
// to key's, leaving dec before key's value; false when the next value is
// no object, has no such key, or is malformed.
func jsonMember(dec *json.Decoder, key string) bool {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		if t == key {
			return true
		}
		if !skipJSON(dec) {
			return false
		}
	}
	return false
}

// skipJSON reads one value from dec, however deeply nested, with a count
// of depth rather than recursion.
func skipJSON(dec *json.Decoder) bool {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return true
		}
	}
}

// xmlCode reads the text of the first element at path, element names
// joined by "/", matched against the innermost elements by their local
// names: "Error/Code" is the text of a Code element whose parent is an
// Error element, at any depth. Text inside an element nested in it is not
// read. A body that is not well formed gives what came before the fault.
func xmlCode(body []byte, path string) (string, bool) {
	want := strings.Split(path, "/")
	dec := xml.NewDecoder(bytes.NewReader(body))
	var open []string // the local names of the elements open
	at := -1          // the depth of the element whose text is read; -1: none
	var text strings.Builder
	for {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch t := t.(type) {
		case xml.StartElement:
			open = append(open, t.Name.Local)
			if at < 0 && len(open) >= len(want) && slices.Equal(open[len(open)-len(want):], want) {
				at = len(open)
			}
		case xml.CharData:
			if len(open) == at {
				text.Write(t)
			}
		case xml.EndElement:
			if len(open) == at {
				code := cleanCode(text.String())
				return code, code != ""
			}
			open = open[:len(open)-1]
		}
	}
}
