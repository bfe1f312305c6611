package policy

import "strings"

// Key returns the name a Transport knows r by: the key of its counters in
// Stats.Rules, the rule its hooks report, and, with the host, the key of
// its holds and of a fleet's shared state. It is made from r's Name
// patterns, not from r's place in a Config, so that a policy whose rules
// are reordered (by Transport.SetPolicy, or across a fleet rolling a new
// policy out) keeps each rule's holds on that rule.
//
// Each pattern reads "METHOD host/path" with the parts it sets, its host
// lowercased, as it matches: "GET", "api.example.com",
// "GET api.example.com/v3", "POST /upload"; a pattern that matches every
// request reads "*". Patterns are joined by ", " in their order. Key only
// reads r, so it is safe for concurrent use.
func (r *Rule) Key() string {
	var b strings.Builder
	for i, n := range r.Name {
		if i > 0 {
			b.WriteString(", ")
		}
		n.key(&b)
	}
	return b.String()
}

// key writes n as Rule.Key reads it.
func (n Name) key(b *strings.Builder) {
	if n == (Name{}) {
		b.WriteByte('*')
		return
	}
	b.WriteString(n.Method)
	if n.Method != "" && (n.Host != "" || n.Path != "") {
		b.WriteByte(' ')
	}
	b.WriteString(strings.ToLower(n.Host))
	b.WriteString(n.Path)
}
