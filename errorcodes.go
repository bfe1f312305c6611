package retryhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/retryhttp/retryhttp/policy"
)

// codePeek is the most of a body read for its error code: an API's error
// answer is small, and a body larger than this is no error document worth
// holding in memory to find out.
const codePeek = 64 << 10

// codeWait is how long the code is waited for: as long as a drain waits
// for a body that is discarded, so that an error table does not let a
// body that trickles or stalls hold up the retry that its status asks
// for any longer than it would without one.
const codeWait = drainTimeout

// codeVerdict reads resp's error code, an answer of status 400 or above,
// as the rule's error table e says, and returns it ("" when none is found)
// with its verdict: that of the list it is in, or UsePolicy when it is
// listed nowhere or none is found. The body is read, when it must be,
// within ctx, the attempt's, and left whole for whoever reads it next.
func codeVerdict(ctx context.Context, resp *http.Response, e *policy.ErrorCodes) (string, Verdict) {
	code, ok := errorCode(ctx, resp, e)
	switch {
	case !ok:
		return "", UsePolicy
	case slices.Contains(e.Retryable, code):
		return code, Retryable
	case slices.Contains(e.Throttled, code):
		return code, Throttled
	case slices.Contains(e.Unprocessed, code):
		return code, RetryableUnprocessed
	case slices.Contains(e.Final, code):
		return code, Final
	}
	return code, UsePolicy
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
	// A body cut short may still hold its code; one that has not come
	// within codeWait is read by status alone.
	body, ok := peekWithin(ctx, resp, codePeek, codeWait)
	if !ok {
		return "", false
	}
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
// the JSON object that body starts with. A key met on an array is looked
// for in its elements, in order, the first that leads to a code giving
// it, as Google's APIs put the reason in "error.errors" and
// "error.details"; a key that is a decimal number picks that element of
// an array, from 0 (on an object it is a key as any other). It walks the
// document's tokens and holds none of it but the keys on the path, so
// that a body cut short by the peek still gives a code that came before
// the cut. A key given twice in an object counts the first time.
func jsonCode(body []byte, path string) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	code, _ := jsonFind(dec, json.Delim('{'), strings.Split(path, "."))
	return code, code != ""
}

// jsonFind reads the value that starts with token t from dec and returns
// the code at keys within it, if any. When it finds none it has read the
// whole value, and ok says dec can go on; when it finds one, it stops
// there.
func jsonFind(dec *json.Decoder, t json.Token, keys []string) (code string, ok bool) {
	if len(keys) == 0 {
		switch v := t.(type) {
		case string:
			code = cleanCode(v)
		case json.Number:
			code = v.String()
		}
		if code != "" || !isDelim(t) {
			return code, true
		}
		return "", skipRest(dec)
	}
	switch t {
	case json.Delim('{'):
		return jsonFindMember(dec, keys)
	case json.Delim('['):
		return jsonFindElement(dec, keys)
	}
	return "", true // a scalar on the way: no code in it
}

// jsonFindMember reads the rest of an object from dec, its "{" read, and
// returns the code at keys within the value of its first member keys[0].
func jsonFindMember(dec *json.Decoder, keys []string) (string, bool) {
	seen := false
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "", false
		}
		v, err := dec.Token()
		if err != nil {
			return "", false
		}
		if seen || k != keys[0] {
			if isDelim(v) && !skipRest(dec) {
				return "", false
			}
			continue
		}
		seen = true
		if code, ok := jsonFind(dec, v, keys[1:]); code != "" || !ok {
			return code, ok
		}
	}
	_, err := dec.Token() // the "}"
	return "", err == nil
}

// jsonFindElement reads the rest of an array from dec, its "[" read, and
// returns the code at keys within it: within its element keys[0] when
// that is an index, else within the first of its objects that has one.
func jsonFindElement(dec *json.Decoder, keys []string) (string, bool) {
	index, err := strconv.Atoi(keys[0])
	pick := err == nil && index >= 0 && strconv.Itoa(index) == keys[0]
	for n := 0; dec.More(); n++ {
		v, err := dec.Token()
		if err != nil {
			return "", false
		}
		var code string
		ok := true
		switch {
		case pick && n == index:
			code, ok = jsonFind(dec, v, keys[1:])
		case !pick && v == json.Delim('{'):
			code, ok = jsonFindMember(dec, keys)
		case isDelim(v):
			ok = skipRest(dec)
		}
		if code != "" || !ok {
			return code, ok
		}
	}
	_, err = dec.Token() // the "]"
	return "", err == nil
}

// isDelim reports whether t opens an object or an array.
func isDelim(t json.Token) bool { return t == json.Delim('{') || t == json.Delim('[') }

// skipRest reads from dec the rest of a value whose opening "{" or "["
// was read, however deeply nested, with a count of depth rather than
// recursion.
func skipRest(dec *json.Decoder) bool {
	for depth := 1; depth > 0; {
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
	}
	return true
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
