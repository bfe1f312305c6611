package status_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	rt "github.com/retryhttp/retryhttp/retryhttptest"
)

// Under the default policy, which has a throttle, every host the page
// lists shows that throttle's capacity, maxTokens being 0 only when the
// policy has none (the HTML says "no throttle" then): a host whose state
// the Transport forgot, having met more hosts than it keeps, shows the
// full budget its next request gets.
func TestAForgottenHostShowsAFullBudget(t *testing.T) {
	tr := &retryhttp.Transport{Base: &rt.Server{Choose: func(int, *http.Request) rt.Step { return rt.Step{} }}}
	client := &http.Client{Transport: tr}
	for i := range 4200 {
		get(t, client, "https://h"+strconv.Itoa(i)+".test/")
	}
	st := tr.Stats()
	hs, ok := st.Hosts["h0.test"]
	require.True(t, ok, "the first host's counters are kept")
	require.Equal(t, uint64(1), hs.Requests)
	assert.Positive(t, hs.MaxTokens, "h0.test is under the default throttle, yet Stats gives MaxTokens 0")
	assert.Equal(t, hs.MaxTokens, hs.Tokens, "a forgotten host's budget is full")

	p := pageOf(t, tr)
	noThrottle := 0
	for _, h := range p.Hosts {
		if h.MaxTokens == 0 {
			noThrottle++
		}
	}
	assert.Zero(t, noThrottle, "hosts listed with maxTokens 0 (\"no throttle\") under a policy with a throttle")
}
