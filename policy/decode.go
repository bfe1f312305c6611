package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// decodeObject decodes raw, which must be a JSON object, into dst, a
// pointer to a mirror struct. It first walks the keys in document order to
// refuse unknown and repeated ones by their exact spelling: encoding/json
// alone would accept "MaxAttempts" for "maxAttempts", keep the last of two
// repeated keys, and name an unknown key without its path.
func decodeObject(path string, raw json.RawMessage, dst any) error {
	fields, err := objectFields(path, raw, dst)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return fmt.Errorf("%w: %s: %w", ErrInvalid, path, err)
		}
		// Nested objects are raw in the mirrors, so the field is always a
		// key of this object.
		key, _, _ := strings.Cut(te.Field, ".")
		t, _ := fieldType(dst, key)
		return &FieldError{Field: join(path, key), Value: excerpt(fields[key]), Reason: "must be " + describe(t)}
	}
	return nil
}

// objectFields returns the members of the JSON object raw, checking each
// key against the json tags of *dst.
func objectFields(path string, raw json.RawMessage, dst any) (map[string]json.RawMessage, error) {
	notObject := &FieldError{Field: path, Value: excerpt(raw), Reason: "must be an object"}
	if path == "" {
		notObject.Reason = "config must be a JSON object"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, notObject
	}
	fields := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		var val json.RawMessage
		if err != nil || !ok || dec.Decode(&val) != nil {
			// raw was checked as a whole by ParseConfig; this is
			// unreachable unless that changes.
			return nil, notObject
		}
		if _, known := fieldType(dst, key); !known {
			return nil, &FieldError{Field: join(path, key), Value: excerpt(val), Reason: "unknown field"}
		}
		if _, dup := fields[key]; dup {
			return nil, &FieldError{Field: join(path, key), Value: excerpt(val), Reason: "repeated field"}
		}
		fields[key] = val
	}
	return fields, nil
}

// fieldType returns the type of the field of the struct *dst whose json
// tag names key exactly.
func fieldType(dst any, key string) (reflect.Type, bool) {
	t := reflect.TypeOf(dst).Elem()
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == key {
			return f.Type, true
		}
	}
	return nil, false
}

// describe names the JSON a mirror field of type t accepts.
func describe(t reflect.Type) string {
	if t == nil {
		return "valid"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[durationJSON]():
		return `a duration string such as "0.1s"`
	case t == reflect.TypeFor[json.RawMessage]():
		return "an object"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Int:
		return "an array of integers"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return "an array of strings"
	case t.Kind() == reflect.Slice:
		return "an array"
	case t.Kind() == reflect.Int, t.Kind() == reflect.Int64:
		return "an integer"
	case t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.String:
		return "a string"
	}
	return "of type " + t.String()
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func isNull(raw json.RawMessage) bool {
	return raw == nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// excerpt returns raw compacted, for an error message; the message's
// value is cut to length on the way out, by clipped.
func excerpt(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// asWritten sets the Value of a *FieldError in err, found by checking
// values already decoded from raw (the object at path), to the JSON text
// its Field names in raw, so that the author reads what they wrote: a
// duration as "0.05s", not Go's 50ms, a number as 1e4, not 10000. An
// error whose Field names no scalar in raw (a key left out, a count of a
// list), or that has no Value, keeps its own. Only errors whose Field is
// spelled by the package's own JSON keys may come here: an unknown key
// could spell the path to another value.
func asWritten(path string, raw json.RawMessage, err error) error {
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Value == "" {
		return err
	}
	rel := fe.Field
	if path != "" {
		var ok bool
		if rel, ok = strings.CutPrefix(rel, path+"."); !ok {
			return err
		}
	}
	if v, ok := scalarAt(raw, rel); ok {
		fe.Value = excerpt(v)
	}
	return err
}

// scalarAt returns the JSON value at rel in raw, a path of keys and
// indices as a FieldError spells it ("retryPolicy.retryableStatusCodes[1]"),
// when there is one and it is neither an object nor an array.
func scalarAt(raw json.RawMessage, rel string) (json.RawMessage, bool) {
	v := raw
	for seg := range strings.SplitSeq(rel, ".") {
		key, indices, _ := strings.Cut(seg, "[")
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil {
			return nil, false
		}
		var ok bool
		if v, ok = obj[key]; !ok {
			return nil, false
		}
		for indices != "" {
			n, rest, found := strings.Cut(indices, "]")
			i, err := strconv.Atoi(n)
			var list []json.RawMessage
			if !found || err != nil || json.Unmarshal(v, &list) != nil || i < 0 || i >= len(list) {
				return nil, false
			}
			v, indices = list[i], strings.TrimPrefix(rest, "[")
		}
	}
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] == '{' || v[0] == '[' {
		return nil, false
	}
	return v, true
}

// syntaxPlace returns, for a syntax error found after reading offset
// bytes of data, the path of the value it lies in as a FieldError's Field
// spells it, and the text there, each cut as clipped cuts them and
// followed by ": " when not empty. It reads data token by token up to
// the error, so a document nested too deep for encoding/json's decoder
// costs no more than its length.
func syntaxPlace(data []byte, offset int64) (field, value string) {
	type level struct {
		object, wantKey bool
		key             string
		index           int
	}
	var stack []level
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.InputOffset() < offset {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		top := len(stack) - 1
		d, delim := tok.(json.Delim)
		switch {
		case delim && (d == '}' || d == ']'):
			stack = stack[:top]
			continue
		case top >= 0 && stack[top].wantKey:
			stack[top].key, _ = tok.(string)
			stack[top].wantKey = false
			continue
		case top >= 0 && stack[top].object:
			stack[top].wantKey = true
		case top >= 0:
			stack[top].index++
		}
		if delim {
			stack = append(stack, level{object: d == '{', wantKey: d == '{', index: -1})
		}
	}
	var b strings.Builder
	for i, l := range stack {
		last := i == len(stack)-1
		switch {
		case l.object && !(last && l.wantKey):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(l.key)
		case !l.object && last:
			fmt.Fprintf(&b, "[%d]", l.index+1) // the element being read
		case !l.object:
			fmt.Fprintf(&b, "[%d]", l.index)
		}
		if b.Len() > maxFieldLen {
			break
		}
	}
	if b.Len() > 0 {
		field = cut(b.String(), maxFieldLen) + ": "
	}
	if v := tokenAt(data, offset-1); v != "" {
		value = cut(v, maxValueLen) + ": "
	}
	return field, value
}

// tokenAt returns the text of data around index i, from the delimiter
// before it to the one after: the value a syntax error met there, such as
// NaN or -Infinity.
func tokenAt(data []byte, i int64) string {
	if i < 0 || i >= int64(len(data)) {
		return ""
	}
	start, end := i, i
	for start > 0 && strings.IndexByte(" \t\r\n,:[{", data[start-1]) < 0 {
		start--
	}
	for end < int64(len(data)) && end-start <= maxValueLen && strings.IndexByte(" \t\r\n,:]}", data[end]) < 0 {
		end++
	}
	if end == start {
		end = i + 1 // the delimiter that was not expected, alone
	}
	return string(data[start:end])
}
