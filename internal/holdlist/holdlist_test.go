package holdlist

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// entry is a hold with a note beside it, as a holder keeps one.
type entry struct {
	Hold
	note string
}

// at returns the time s seconds after a fixed epoch.
func at(s int) time.Time { return time.Unix(1_000_000, 0).Add(time.Duration(s) * time.Second) }

func TestSet(t *testing.T) {
	t.Parallel()
	type step struct {
		rule          string
		until         int  // seconds
		capped        bool // the hold matters past its end
		now           int  // seconds
		wantOK        bool
		wantDisplaced string // the note of the entry displaced
	}
	tests := []struct {
		name  string
		bound int
		steps []step
		want  map[string]int // rule: until, of the holds kept
	}{
		{"a new hold is taken", 4, []step{{"r", 5, false, 0, true, ""}}, map[string]int{"r": 5}},
		{"a longer hold extends", 4, []step{
			{"r", 5, false, 0, true, ""}, {"r", 6, false, 1, true, "r@5"}}, map[string]int{"r": 6}},
		{"a shorter or equal hold never shortens", 4, []step{
			{"r", 5, false, 0, true, ""}, {"r", 4, false, 1, false, ""}, {"r", 5, false, 1, false, ""}},
			map[string]int{"r": 5}},
		{"a hold already over is not taken", 4, []step{{"r", 5, false, 5, false, ""}, {"s", 4, false, 5, false, ""}},
			map[string]int{}},
		{"a capped hold over is taken: it matters until settled", 4, []step{{"r", 5, true, 6, true, ""}},
			map[string]int{"r": 5}},
		{"rules are held apart", 4, []step{{"r", 5, false, 0, true, ""}, {"s", 3, false, 0, true, ""}},
			map[string]int{"r": 5, "s": 3}},
		{"a hold over gives its slot", 2, []step{
			{"r", 5, false, 0, true, ""}, {"s", 9, false, 0, true, ""}, {"t", 7, false, 6, true, "r@5"}},
			map[string]int{"s": 9, "t": 7}},
		{"a capped hold over keeps its slot", 3, []step{
			{"r", 5, true, 0, true, ""}, {"s", 9, false, 0, true, ""}, {"t", 7, false, 6, true, ""}},
			map[string]int{"r": 5, "s": 9, "t": 7}},
		{"full: the hold ending first makes room for a longer one", 2, []step{
			{"r", 5, false, 0, true, ""}, {"s", 9, false, 0, true, ""}, {"t", 7, false, 1, true, "r@5"}},
			map[string]int{"s": 9, "t": 7}},
		{"full: a hold ending no later than all kept is not taken", 2, []step{
			{"r", 5, false, 0, true, ""}, {"s", 9, false, 0, true, ""}, {"t", 5, false, 1, false, ""}},
			map[string]int{"r": 5, "s": 9}},
		{"a bound below one is one", 0, []step{{"r", 5, false, 0, true, ""}, {"s", 7, false, 0, true, "r@5"}},
			map[string]int{"s": 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var l List[entry]
			for i, s := range tt.steps {
				e := entry{Hold{Rule: s.rule, Until: at(s.until), Status: 429, Capped: s.capped}, fmt.Sprintf("%s@%d", s.rule, s.until)}
				in, displaced, ok := l.Set(e, at(s.now), tt.bound)
				require.Equal(t, s.wantOK, ok, "step %d: got taken %v, want %v", i, ok, s.wantOK)
				assert.Equal(t, s.wantDisplaced, displaced.note, "step %d: got %q displaced, want %q", i, displaced.note, s.wantDisplaced)
				if ok {
					assert.Equal(t, e, in, "step %d: got %v in force, want the hold set", i, in)
				}
			}
			got := map[string]int{}
			l.Edit(func(list []entry) []entry {
				for _, e := range list {
					if !e.Until.IsZero() && (e.Capped || e.Until.After(at(tt.steps[len(tt.steps)-1].now))) {
						got[e.Rule] = int(e.Until.Sub(at(0)) / time.Second)
					}
				}
				return list
			})
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestSetKeepsTheLongerHold checks what Set reports for a hold that does
// not extend the rule's: the one in force.
func TestSetKeepsTheLongerHold(t *testing.T) {
	t.Parallel()
	var l List[entry]
	first := entry{Hold{Rule: "r", Until: at(9), Status: 503}, "first"}
	l.Set(first, at(0), 4)
	in, displaced, ok := l.Set(entry{Hold{Rule: "r", Until: at(5), Status: 429}, "second"}, at(1), 4)
	assert.False(t, ok)
	assert.Equal(t, first, in, "got %v in force, want the longer hold", in)
	assert.Zero(t, displaced)
}

func TestGetAnyAndInForce(t *testing.T) {
	t.Parallel()
	var l List[entry]
	assert.False(t, l.Any(at(0)), "got a hold on an empty list")
	_, ok := l.Get("r", at(0))
	assert.False(t, ok)
	assert.Nil(t, l.InForce(at(0)))

	l.Set(entry{Hold: Hold{Rule: "r", Until: at(5), Status: 429}}, at(0), 4)
	l.Set(entry{Hold: Hold{Rule: "s", Until: at(9), Status: 503}}, at(0), 4)
	tests := []struct {
		now      int
		rule     string
		wantAny  bool
		wantGet  bool
		wantRule []string // in force
	}{
		{0, "r", true, true, []string{"r", "s"}},
		{4, "s", true, true, []string{"r", "s"}},
		{5, "r", true, true, []string{"s"}}, // over, still listed while another may matter
		{6, "none", true, false, []string{"s"}},
		{9, "s", false, false, nil}, // at its end, nothing matters: no lock taken
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.now, tt.rule), func(t *testing.T) {
			assert.Equal(t, tt.wantAny, l.Any(at(tt.now)), "got Any %v at %d", !tt.wantAny, tt.now)
			e, ok := l.Get(tt.rule, at(tt.now))
			assert.Equal(t, tt.wantGet, ok, "got Get(%q) %v at %d", tt.rule, ok, tt.now)
			if ok {
				assert.Equal(t, tt.rule, e.Rule)
			}
			var rules []string
			for _, e := range l.InForce(at(tt.now)) {
				rules = append(rules, e.Rule)
			}
			assert.ElementsMatch(t, tt.wantRule, rules)
		})
	}
}

// TestAnEndPastNanoseconds checks that a hold ending past the last
// instant an int64 of nanoseconds holds, as a shared store may hand one
// over, matters, and is listed, like any other, and is not taken for a
// capped hold.
func TestAnEndPastNanoseconds(t *testing.T) {
	t.Parallel()
	for _, until := range []time.Time{time.Unix(0, math.MaxInt64), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)} {
		t.Run(until.String(), func(t *testing.T) {
			var l List[entry]
			_, _, ok := l.Set(entry{Hold: Hold{Rule: "r", Until: until, Status: 429}}, at(0), 4)
			require.True(t, ok)
			assert.True(t, l.Any(at(0)))
			assert.False(t, l.Capping())
			e, ok := l.Get("r", at(0))
			require.True(t, ok)
			assert.Equal(t, until, e.Until)
			assert.Len(t, l.InForce(at(0)), 1)
		})
	}
}

// TestCapping checks that a capped hold makes the list read as held after
// its end, until an edit settles it.
func TestCapping(t *testing.T) {
	t.Parallel()
	var l List[entry]
	l.Set(entry{Hold: Hold{Rule: "s", Until: at(3)}}, at(0), 4)
	l.Set(entry{Hold: Hold{Rule: "r", Until: at(5), Capped: true}}, at(0), 4)
	assert.True(t, l.Capping())
	assert.True(t, l.Any(at(100)), "got a capped hold not mattering after its end")
	e, ok := l.Get("r", at(100))
	require.True(t, ok)
	assert.True(t, e.Capped)
	assert.Empty(t, l.InForce(at(100)), "got a capped hold over listed in force")
	if m := l.Matter(at(100)); assert.Len(t, m, 1, "the capped hold, unsettled, still matters") {
		assert.Equal(t, "r", m[0].Rule)
	}
	assert.Len(t, l.Matter(at(2)), 2, "both holds matter before their ends")

	l.Edit(func(list []entry) []entry {
		for i := range list {
			if list[i].Rule == "r" {
				list[i] = entry{} // settled: the slot is empty
			}
		}
		return list
	})
	assert.False(t, l.Capping())
	assert.True(t, l.Any(at(2)), "got s's hold forgotten by the edit")
	assert.False(t, l.Any(at(3)))
	_, _, ok = l.Set(entry{Hold: Hold{Rule: "t", Until: at(7)}}, at(4), 2)
	assert.True(t, ok, "got the emptied slot, or s's ended one, not taken")
}

func TestEditClears(t *testing.T) {
	t.Parallel()
	var l List[entry]
	for i := range 3 {
		l.Set(entry{Hold: Hold{Rule: fmt.Sprint(i), Until: at(10 + i)}}, at(0), 4)
	}
	require.True(t, l.Any(at(0)))
	l.Edit(func(list []entry) []entry { return list[:0] })
	assert.False(t, l.Any(at(0)), "got a hold after the list was cleared")
	_, ok := l.Get("0", at(0))
	assert.False(t, ok)
}

// TestConcurrentUse sets, reads and edits holds at once, for the race
// detector, and checks that the list stays within its bound with one
// entry per rule.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	const goroutines, rules, bound = 8, 6, 4
	var l List[entry]
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range 500 {
				rule := fmt.Sprint(i % rules)
				l.Set(entry{Hold: Hold{Rule: rule, Until: at(10 + g*1000 + i)}}, at(0), bound)
				l.Get(rule, at(0))
				l.InForce(at(i))
				l.Edit(func(list []entry) []entry { return list })
			}
		})
	}
	wg.Wait()
	var kept []string
	l.Edit(func(list []entry) []entry {
		for _, e := range list {
			kept = append(kept, e.Rule)
		}
		return list
	})
	assert.Len(t, kept, bound, "got %v kept, want the list full", kept)
	seen := map[string]bool{}
	for _, r := range kept {
		assert.False(t, seen[r], "got rule %s twice in %v", r, kept)
		seen[r] = true
	}
	assert.True(t, l.Any(at(0)))
}
