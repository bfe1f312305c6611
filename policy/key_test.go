package policy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp/policy"
)

// A rule's key is made from its patterns, as they match, and not from its
// place in a Config.
func TestRuleKey(t *testing.T) {
	for _, tc := range []struct {
		names []policy.Name
		want  string
	}{
		{[]policy.Name{{}}, "*"},
		{[]policy.Name{{Method: "GET"}}, "GET"},
		{[]policy.Name{{Host: "API.Example.com"}}, "api.example.com"},
		{[]policy.Name{{Host: "api.example.com:8443", Path: "/v3"}}, "api.example.com:8443/v3"},
		{[]policy.Name{{Method: "GET", Host: "api.example.com", Path: "/v3/"}}, "GET api.example.com/v3/"},
		{[]policy.Name{{Method: "POST", Path: "/upload"}}, "POST /upload"},
		{[]policy.Name{{Method: "GET"}, {Host: "h"}, {}}, "GET, h, *"},
		{nil, ""},
	} {
		r := policy.Rule{Name: tc.names}
		assert.Equal(t, tc.want, r.Key(), "%+v", tc.names)
	}
}
