package sfv

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Lists that parse, with their canonical form: the examples of RFC 9651
// first, then the edges of each rule.
func TestParseList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		// RFC 9651's examples.
		{"3.1 tokens", "sugar, tea, rum", "sugar, tea, rum"},
		{"3.1.1 inner lists", `("foo" "bar"), ("baz"), ("bat" "one"), ()`, `("foo" "bar"), ("baz"), ("bat" "one"), ()`},
		{"3.1.1 inner list parameters", `("foo"; a=1;b=2);lvl=5, ("bar" "baz");lvl=1`, `("foo";a=1;b=2);lvl=5, ("bar" "baz");lvl=1`},
		{"3.1.2 parameters", `abc;a=1;b=2; cde_456, (ghi;jk=4 l);q="9";r=w`, `abc;a=1;b=2;cde_456, (ghi;jk=4 l);q="9";r=w`},
		{"3.1.2 boolean parameters", "1; a; b=?0", "1;a;b=?0"},
		{"3.3.1 integer", "42", "42"},
		{"3.3.2 decimal", "4.5", "4.5"},
		{"3.3.3 string", `"hello world"`, `"hello world"`},
		{"3.3.4 token", "foo123/456", "foo123/456"},
		{"3.3.5 byte sequence", ":cHJldGVuZCB0aGlzIGlzIGJpbmFyeSBjb250ZW50Lg==:", ":cHJldGVuZCB0aGlzIGlzIGJpbmFyeSBjb250ZW50Lg==:"},
		{"3.3.6 boolean", "?1", "?1"},
		{"3.3.7 date", "@1659578233", "@1659578233"},
		{"3.3.8 display string", `%"This is intended for display to %c3%bc%c3%bcsers."`,
			`%"This is intended for display to %c3%bc%c3%bcsers."`},
		// The RateLimit draft's examples.
		{"RateLimit", `"default";r=50;t=30`, `"default";r=50;t=30`},
		{"RateLimit with partition key", `"default";r=999;pk=:dHJpYWwxMjEzMjM=:`, `"default";r=999;pk=:dHJpYWwxMjEzMjM=:`},
		{"RateLimit, two policies", `"burst";r=50;t=10, "day";r=0;t=3600`, `"burst";r=50;t=10, "day";r=0;t=3600`},
		// Lists.
		{"empty", "", ""},
		{"only spaces", "   ", ""},
		{"leading spaces", "  1", "1"},
		{"no whitespace", "1,42", "1, 42"},
		{"whitespace around commas", "1 ,\t42\t, 3 ", "1, 42, 3"},
		// Numbers.
		{"zero", "0", "0"},
		{"leading zeros", "0042", "42"},
		{"negative zero", "-0", "0"},
		{"negative", "-42", "-42"},
		{"15 digits", "123456789012345", "123456789012345"},
		{"-15 digits", "-123456789012345", "-123456789012345"},
		{"decimal, 12 digits before the point", "123456789012.123", "123456789012.123"},
		{"decimal, three after", "1.123", "1.123"},
		{"decimal, trailing zeros", "1.500", "1.5"},
		{"decimal zero", "0.0", "0.0"},
		{"negative decimal", "-1.05", "-1.05"},
		{"negative decimal zero", "-0.0", "0.0"},
		// Strings and tokens.
		{"empty string", `""`, `""`},
		{"escapes", `"a \"b\" \\ c"`, `"a \"b\" \\ c"`},
		{"every visible character", `" !#$%&'()*+,-./0123456789:;<=>?@[]^_{|}~"`, `" !#$%&'()*+,-./0123456789:;<=>?@[]^_{|}~"`},
		{"token of one star", "*", "*"},
		{"token characters", "a!#$%&'*+-.^_`|~:/Z9", "a!#$%&'*+-.^_`|~:/Z9"},
		// Byte sequences.
		{"empty bytes", "::", "::"},
		{"padding left out", ":aGVsbG8:", ":aGVsbG8=:"},
		{"one pad of two", ":YQ=:", ":YQ==:"},
		{"non-zero pad bits", ":iZ==:", ":iQ==:"},
		{"non-ASCII bytes", ":/+Ah:", ":/+Ah:"},
		// Booleans, dates, display strings.
		{"false", "?0", "?0"},
		{"negative date", "@-62135596800", "@-62135596800"},
		{"display string, plain", `%"foo bar"`, `%"foo bar"`},
		{"display string, quote and percent", `%"%22%25"`, `%"%22%25"`},
		{"display string, BOM", `%"%ef%bb%bf"`, `%"%ef%bb%bf"`},
		{"display string, 4-byte rune", `%"%f0%9f%98%80"`, `%"%f0%9f%98%80"`},
		{"display string, encoded ASCII", `%"%61"`, `%"a"`},
		// Parameters and inner lists.
		{"parameter keys", "a;*=1;a1_-.*=2", "a;*=1;a1_-.*=2"},
		{"repeated key keeps its place and last value", "a;x=1;y=2;x=3", "a;x=3;y=2"},
		{"spaces after ';'", "a;   x=1", "a;x=1"},
		{"every type as a parameter", `a;i=1;d=1.5;s="s";t=t;b=:YQ==:;f=?0;t2=?1;e=@0;u=%"u"`,
			`a;i=1;d=1.5;s="s";t=t;b=:YQ==:;f=?0;t2;e=@0;u=%"u"`},
		{"inner list spaces", "(  1   2  )", "(1 2)"},
		{"empty inner list with parameters", "();a=1", "();a=1"},
		{"items of an inner list with parameters", "(a;x b;y=?0);z", "(a;x b;y=?0);z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, err := ParseList(tt.in)
			require.NoError(t, err, "ParseList(%q): got %v, want nil", tt.in, err)
			got := canon(l)
			assert.Equal(t, tt.want, got, "ParseList(%q): got %q, want %q", tt.in, got, tt.want)
		})
	}
}

// Lists that RFC 9651 refuses, each for one rule.
func TestParseListRejects(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in string }{
		// Lists.
		{"trailing comma", "1, 42,"},
		{"trailing comma and space", "1, 42, "},
		{"empty member", "1,,42"},
		{"leading comma", ",1"},
		{"leading tab", "\t1"},
		{"two items without a comma", "1 42"},
		{"non-ASCII after a member", "1, é"},
		{"NUL", "1\x00"},
		{"space before ';'", "a ;b"},
		// Numbers.
		{"sign only", "-"},
		{"double sign", "--1"},
		{"space after sign", "- 1"},
		{"sign out of place", "4-2"},
		{"16 digits", "1234567890123456"},
		{"-16 digits", "-1234567890123456"},
		{"13 digits before a point", "1234567890123.0"},
		{"four after a point", "1.1234"},
		{"trailing point", "1."},
		{"two points", "1.5.4"},
		{"adjacent points", "1..4"},
		{"point first", ".5"},
		{"exponent", "1e3"},
		// Strings.
		{"unclosed string", `"foo`},
		{"escape of another character", `"foo \n"`},
		{"escape at the end", `"foo \`},
		{"escaped end", `"foo \"`},
		{"tab in a string", "\"\t\""},
		{"DEL in a string", "\"\x7f\""},
		{"non-ASCII string", `"füü"`},
		{"single quotes", `'foo'`},
		// Tokens and items of no type.
		{"token starting with a digit is a number", "1a"},
		{"token with a space", "a b"},
		{"unknown start", "#a"},
		{"empty item in an inner list", "(1 ,2)"},
		// Byte sequences.
		{"unclosed bytes", ":aGVsbG8="},
		{"space in bytes", ":aGVsb G8=:"},
		{"base64url", ":_-Ah:"},
		{"character outside base64", ":aGVsbG!8=:"},
		{"padding first", ":=aGVsbG8=:"},
		{"padding inside", ":a=GVsbG8=:"},
		{"only padding", ":=:"},
		{"too much padding", ":YQ===:"},
		{"padding after a full group", ":YWJj=:"},
		{"one character left over", ":YWJjZ:"},
		// Booleans and dates.
		{"boolean 2", "?2"},
		{"boolean alone", "?"},
		{"boolean true", "?true"},
		{"decimal date", "@1.5"},
		{"date alone", "@"},
		{"date of a string", `@"1"`},
		// Display strings.
		{"unquoted display string", "%foo"},
		{"single-quoted display string", "%'foo'"},
		{"missing quote", `%foo"`},
		{"unclosed display string", `%"foo`},
		{"uppercase hex", `%"f%C3%BC"`},
		{"one hex digit", `%"%a"`},
		{"percent at the end", `%"foo %`},
		{"tab in a display string", "%\"\t\""},
		{"raw non-ASCII in a display string", `%"ü"`},
		{"invalid 2-byte sequence", `%"%c3%28"`},
		{"lone continuation", `%"%a0%a1"`},
		{"invalid 3-byte sequence", `%"%e2%28%a1"`},
		{"invalid 4-byte sequence", `%"%f0%28%8c%28"`},
		{"overlong", `%"%c0%af"`},
		{"surrogate", `%"%ed%a0%80"`},
		{"past U+10FFFF", `%"%f4%90%80%80"`},
		{"unfinished rune", `%"%e2%82"`},
		// Parameters.
		{"uppercase key", "a;A=1"},
		{"key starting with a digit", "a;1=1"},
		{"empty key", "a;=1"},
		{"space before '='", "a;q =1"},
		{"space after '='", "a;q= 1"},
		{"no value after '='", "a;q="},
		{"inner list as a value", "a;q=(1)"},
		// Inner lists.
		{"unclosed inner list", "(1 42"},
		{"unclosed before a comma", "(1 2, (42 43)"},
		{"tab in an inner list", "(1\t 42)"},
		{"items without spaces", `(abc"def"?0123*dXZ3*xyz)`},
		{"nested inner list", "((1))"},
		{"just '('", "("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, err := ParseList(tt.in)
			require.Error(t, err, "ParseList(%q): got %q, want an error", tt.in, canon(l))
			assert.ErrorIs(t, err, ErrMalformed, "ParseList(%q): got %v, want an error matching ErrMalformed", tt.in, err)
			assert.Equal(t, List{}, l, "ParseList(%q): got a list with the error, want the zero List", tt.in)
			assert.True(t, strings.HasPrefix(err.Error(), "sfv: "), "got %q, want the package's prefix", err)
		})
	}
}

// Each kind of bare item, with the values a reader takes from it.
func TestItems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		want  Item
		text  string
		bytes []byte
	}{
		{"42", Item{Kind: Integer, Int: 42}, "", nil},
		{"-999999999999999", Item{Kind: Integer, Int: -999999999999999}, "", nil},
		{"4.5", Item{Kind: Decimal, Int: 4500}, "", nil},
		{"-0.001", Item{Kind: Decimal, Int: -1}, "", nil},
		{"999999999999.999", Item{Kind: Decimal, Int: 999999999999999}, "", nil},
		{`"a \"b\" \\"`, Item{Kind: String, Raw: `a \"b\" \\`}, `a "b" \`, nil},
		{`"plain"`, Item{Kind: String, Raw: "plain"}, "plain", nil},
		{"foo123/456", Item{Kind: Token, Raw: "foo123/456"}, "foo123/456", nil},
		{":aGk=:", Item{Kind: ByteSequence, Raw: "aGk="}, "", []byte("hi")},
		{":aGk:", Item{Kind: ByteSequence, Raw: "aGk"}, "", []byte("hi")},
		{"::", Item{Kind: ByteSequence}, "", []byte{}},
		{"?1", Item{Kind: Boolean, Int: 1}, "", nil},
		{"?0", Item{Kind: Boolean}, "", nil},
		{"@1659578233", Item{Kind: Date, Int: 1659578233}, "", nil},
		{`%"f%c3%bc%c3%bc"`, Item{Kind: DisplayString, Raw: "f%c3%bc%c3%bc"}, "füü", nil},
		{`%"plain"`, Item{Kind: DisplayString, Raw: "plain"}, "plain", nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			l, err := ParseList(tt.in)
			require.NoError(t, err, "ParseList(%q): got %v, want nil", tt.in, err)
			var got []Item
			for m := range l.Members() {
				got = append(got, m.Item)
			}
			require.Len(t, got, 1, "got %d members, want 1", len(got))
			assert.Equal(t, tt.want, got[0], "got %+v, want %+v", got[0], tt.want)
			assert.Equal(t, tt.text, got[0].Text(), "Text: got %q, want %q", got[0].Text(), tt.text)
			assert.Equal(t, tt.bytes, got[0].Bytes(), "Bytes: got %q, want %q", got[0].Bytes(), tt.bytes)
		})
	}
}

func TestParams(t *testing.T) {
	t.Parallel()
	l, err := ParseList(`"default";r=0;t=30;r=5;flag;pk=:YQ==:, (a;x=1 b);lvl=2`)
	require.NoError(t, err, "got %v, want nil", err)
	var ms []Member
	for m := range l.Members() {
		ms = append(ms, m)
	}
	require.Len(t, ms, 2, "got %d members, want 2", len(ms))

	ps := ms[0].Params
	tests := []struct {
		key  string
		want Item
		ok   bool
	}{
		{"r", Item{Kind: Integer, Int: 5}, true}, // the last of two
		{"t", Item{Kind: Integer, Int: 30}, true},
		{"flag", Item{Kind: Boolean, Int: 1}, true},
		{"pk", Item{Kind: ByteSequence, Raw: "YQ=="}, true},
		{"q", Item{}, false},
		{"R", Item{}, false},
		{"", Item{}, false},
	}
	for _, tt := range tests {
		got, ok := ps.Get(tt.key)
		assert.Equal(t, tt.ok, ok, "Get(%q): got found %v, want %v", tt.key, ok, tt.ok)
		assert.Equal(t, tt.want, got, "Get(%q): got %+v, want %+v", tt.key, got, tt.want)
	}
	var keys []string
	for k := range ps.All() {
		keys = append(keys, k)
	}
	assert.Equal(t, []string{"r", "t", "r", "flag", "pk"}, keys, "All: got %q, want every key as written", keys)

	assert.False(t, ms[0].IsInnerList(), "got an inner list, want an item")
	assert.True(t, ms[1].IsInnerList(), "got an item, want an inner list")
	assert.Equal(t, Item{}, ms[1].Item, "got item %+v for an inner list, want the zero Item", ms[1].Item)
	lvl, ok := ms[1].Params.Get("lvl")
	assert.True(t, ok && lvl == Item{Kind: Integer, Int: 2}, "inner list's lvl: got %+v, %v, want 2", lvl, ok)
	var inner []string
	for it, ps := range ms[1].Items() {
		x, _ := ps.Get("x")
		inner = append(inner, it.Text()+"/"+x.Kind.String())
	}
	assert.Equal(t, []string{"a/Integer", "b/no item"}, inner, "got %q", inner)
	for range ms[0].Items() {
		t.Error("an item yielded inner items, want none")
	}
	var zero Params
	_, ok = zero.Get("r")
	assert.False(t, ok, "the zero Params: got a parameter, want none")
}

// Walks stop when the loop does.
func TestWalksStop(t *testing.T) {
	t.Parallel()
	l, err := ParseList("a;x;y, (b c);z, d")
	require.NoError(t, err, "got %v, want nil", err)
	n := 0
	for m := range l.Members() {
		n++
		for range m.Params.All() {
			break
		}
		for range m.Items() {
			break
		}
		break
	}
	assert.Equal(t, 1, n, "got %d members after break, want 1", n)
}

// Neither parsing, nor walking, nor failing allocates.
func TestNoAllocations(t *testing.T) {
	const field = `"burst";r=50;t=10, "day";r=0;t=3600;pk=:dHJpYWwxMjEzMjM=:, ("a" b);c=%"f%c3%bc"`
	for _, in := range []string{field, field + ",", `%"%c3%28"`, "1.1234"} {
		allocs := testing.AllocsPerRun(100, func() {
			l, _ := ParseList(in)
			for m := range l.Members() {
				if r, ok := m.Params.Get("r"); ok && r.Int < 0 {
					panic("unreachable")
				}
				for it, ps := range m.Items() {
					_, _ = it, ps
				}
			}
		})
		assert.Zero(t, allocs, "ParseList(%q) and its walk: got %v allocations, want 0", in, allocs)
	}
}

func TestKindString(t *testing.T) {
	t.Parallel()
	names := map[Kind]string{0: "no item", Integer: "Integer", Decimal: "Decimal", String: "String", Token: "Token",
		ByteSequence: "Byte Sequence", Boolean: "Boolean", Date: "Date", DisplayString: "Display String", 99: "no item"}
	for k, want := range names {
		assert.Equal(t, want, k.String(), "Kind(%d): got %q, want %q", k, k.String(), want)
	}
}

func TestErrorIs(t *testing.T) {
	t.Parallel()
	_, err := ParseList("1,")
	require.Error(t, err, "got nil, want an error")
	assert.True(t, errors.Is(err, ErrMalformed), "got %v, want it to match ErrMalformed", err)
	assert.False(t, errors.Is(err, errors.New("sfv: malformed field value")), "got a match with another error, want none")
}
