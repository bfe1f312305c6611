package policy

import "fmt"

// path is where a value sits in a configuration, spelled as its author
// wrote it: by JSON keys ("methodConfig[0].retryPolicy.maxAttempts") for
// what ParseConfig decoded, and by Go field names
// ("Rules[0].Retry.MaxAttempts") for a value built in Go, whose author
// may never have seen the JSON names and looks for the field in the
// source. Validation walks a Config once, with either spelling.
type path struct {
	at string
	// goNames spells keys by their Go field names.
	goNames bool
}

// jsonPath starts a path in JSON spelling at at ("" for the top).
func jsonPath(at string) path { return path{at: at} }

// goPath starts a path in Go spelling at at ("" for the top).
func goPath(at string) path { return path{at: at, goNames: true} }

// key returns the path to the field of p's value named jsonKey in JSON and
// goField in Go.
func (p path) key(jsonKey, goField string) path {
	return path{at: join(p.at, p.name(jsonKey, goField)), goNames: p.goNames}
}

// index returns the path to element i of p's list.
func (p path) index(i int) path {
	return path{at: fmt.Sprintf("%s[%d]", p.at, i), goNames: p.goNames}
}

// name returns jsonKey or goField, as p spells names: for reasons that
// name another field than the one at fault.
func (p path) name(jsonKey, goField string) string {
	if p.goNames {
		return goField
	}
	return jsonKey
}

// String returns the path as a FieldError's Field gives it.
func (p path) String() string { return p.at }
