package sfv

import (
	"errors"
	"testing"
)

// FuzzParseList checks what holds for every input: no panic, an error
// matching ErrMalformed with the zero List, or a List whose canonical form
// parses back to itself, with parameters read alike by Get and All.
func FuzzParseList(f *testing.F) {
	for _, s := range []string{
		"sugar, tea, rum",
		`("foo"; a=1;b=2);lvl=5, ("bar" "baz");lvl=1`,
		`abc;a=1;b=2; cde_456, (ghi;jk=4 l);q="9";r=w`,
		`"burst";r=50;t=10, "day";r=0;t=3600`,
		`"default";r=999;pk=:dHJpYWwxMjEzMjM=:`,
		":cHJldGVuZCB0aGlzIGlzIGJpbmFyeSBjb250ZW50Lg==:, :aGVsbG8:, :iZ==:, :YQ=:",
		`%"This is intended for display to %c3%bc%c3%bcsers.", %"%f0%9f%98%80"`,
		"@1659578233, @-1, ?1, ?0, 4.5, -0.0, 123456789012.123, -123456789012345",
		`"a \"b\" \\ c", *, foo123/456, a;x;y=?0;x=3`,
		"(  1   2  );a, ();b",
		"1, 42,", "1,,42", "(1 42", "1.1234", "1234567890123456", `%"%c3%28"`, ":a=b:", "a;A=1", "\t1", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseList(s)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseList(%q): got %v, want an error matching ErrMalformed", s, err)
			}
			if l != (List{}) {
				t.Fatalf("ParseList(%q): got %+v with an error, want the zero List", s, l)
			}
			return
		}
		for m := range l.Members() {
			checkParams(t, s, m.Params)
			for it, ps := range m.Items() {
				checkParams(t, s, ps)
				if it.Kind == 0 {
					t.Fatalf("ParseList(%q): got an inner item of no kind", s)
				}
			}
			if !m.IsInnerList() && m.Item.Kind == 0 {
				t.Fatalf("ParseList(%q): got an item of no kind", s)
			}
		}
		c := canon(l)
		again, err := ParseList(c)
		if err != nil {
			t.Fatalf("ParseList(%q) wrote %q, which does not parse: %v", s, c, err)
		}
		if c2 := canon(again); c2 != c {
			t.Fatalf("ParseList(%q) wrote %q, which reads back as %q", s, c, c2)
		}
		if l2, err := ParseList(" " + s); err != nil || canon(l2) != c {
			t.Fatalf("ParseList(%q) with a leading space: got %q, %v, want %q", s, canon(l2), err, c)
		}
	})
}

// checkParams checks that Get gives the last value All yields for a key.
func checkParams(t *testing.T, s string, ps Params) {
	t.Helper()
	last := make(map[string]Item)
	for k, v := range ps.All() {
		if k == "" || v.Kind == 0 {
			t.Fatalf("ParseList(%q): got parameter %q = %+v", s, k, v)
		}
		last[k] = v
	}
	for k, want := range last {
		if got, ok := ps.Get(k); !ok || got != want {
			t.Fatalf("ParseList(%q): Get(%q) gives %+v, %v; All's last is %+v", s, k, got, ok, want)
		}
	}
}
