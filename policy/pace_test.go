package policy_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/policy"
)

// "pace" is a switch, read as "hold" is; "admission" is opt-in, with its
// two figures optional.
func TestParsePaceAndAdmission(t *testing.T) {
	for _, tc := range []struct {
		json      string
		pace      *policy.Pace
		admission *policy.Admission
		err       string
	}{
		{json: `{}`},
		{json: `{"pace": {}}`, pace: &policy.Pace{}},
		{json: `{"pace": null}`},
		{json: `{"pace": {"off": true}}`, pace: &policy.Pace{Off: true}},
		{json: `{"pace": {"rate": 3}}`, err: "pace.rate: 3: unknown field"},
		{json: `{"admission": {}}`, admission: &policy.Admission{}},
		{json: `{"admission": {"maxConcurrency": 50, "maxWait": "0.25s"}}`,
			admission: &policy.Admission{MaxConcurrency: 50, MaxWait: 250 * time.Millisecond}},
		{json: `{"admission": {"maxConcurrency": -1}}`, err: "admission.maxConcurrency: -1"},
		{json: `{"admission": {"maxWait": 5}}`, err: "admission.maxWait"},
		{json: `{"admission": {"maxWait": "-1s"}}`, admission: &policy.Admission{MaxWait: -time.Second}},
		{json: `{"admission": {"maxWait": "soon"}}`, err: `admission.maxWait: "soon": must be a duration`},
		{json: `{"maxServerDelay": "-1s"}`, err: "maxServerDelay: \"-1s\": must not be negative"},
	} {
		t.Run(tc.json, func(t *testing.T) {
			c, err := policy.ParseConfig([]byte(tc.json))
			if tc.err != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, policy.ErrInvalid)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.pace, c.Pace)
			assert.Equal(t, tc.admission, c.Admission)
		})
	}
}

// A config that says nothing of pacing paces, as Default does; None does
// not; Admission is off unless set, and its figures have their defaults.
func TestPaceAndAdmissionInForce(t *testing.T) {
	assert.Equal(t, &policy.Pace{}, (&policy.Config{}).InForce().Pace)
	assert.Nil(t, policy.None().InForce().Pace)
	assert.Nil(t, policy.Default().InForce().Admission)
	a := &policy.Admission{}
	assert.Equal(t, policy.DefaultMaxConcurrency, a.Concurrency())
	assert.Equal(t, policy.DefaultMaxWait, a.Wait())
	assert.Equal(t, time.Duration(0), (&policy.Admission{MaxWait: -1}).Wait(), "a negative wait means none")
	c, err := policy.ParseConfig([]byte(`{"admission": {"maxWait": "-0.5s"}}`))
	require.NoError(t, err)
	assert.Equal(t, time.Duration(0), c.Admission.Wait(), "in JSON too")
	err = (&policy.Config{Admission: &policy.Admission{MaxConcurrency: -3}}).Validate()
	require.ErrorIs(t, err, policy.ErrInvalid)
	assert.Contains(t, err.Error(), "Admission.MaxConcurrency: -3")
}
