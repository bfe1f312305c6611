// Package sfv parses Structured Field Values for HTTP (RFC 9651): Lists of
// Items and Inner Lists, their Parameters, and bare items of every type.
//
// It fails exactly where RFC 9651's parsing algorithms fail, and it
// allocates nothing: a parsed [List] is a view of the field value, which
// its members, items and parameters are read from again as they are
// walked. The work is linear in the length of the value, and a number is
// given up after at most 16 characters. Serializing is left out: the
// package reads what servers send.
package sfv

import (
	"encoding/base64"
	"errors"
	"iter"
	"strings"
	"unicode/utf8"
)

// ErrMalformed is matched, through [errors.Is], by every error that
// [ParseList] returns: the field value is not a List as RFC 9651 writes
// one, and RFC 9651 asks that such a field be ignored as a whole.
var ErrMalformed = errors.New("sfv: malformed field value")

// syntaxError says what is wrong with a field value. It is a string type,
// converted from constants, so that failing allocates nothing either: a
// server that sends a malformed field on every response costs nothing.
type syntaxError string

func (e syntaxError) Error() string        { return "sfv: " + string(e) }
func (e syntaxError) Is(target error) bool { return target == ErrMalformed }

// Kind is the type of a bare item. The zero Kind is no item.
type Kind uint8

// The types of bare items of RFC 9651, section 3.3.
const (
	// Integer is a whole number of at most 15 digits: 42, -7.
	Integer Kind = iota + 1
	// Decimal is a number with 1 to 3 digits after its point and at
	// most 12 before: 4.5, -0.001.
	Decimal
	// String is quoted visible ASCII and spaces, with \" and \\
	// escapes: "hello world".
	String
	// Token is a letter or '*' followed by RFC 9110 tchars, ':' and '/':
	// foo123/456.
	Token
	// ByteSequence is base64 between colons: :aGk=:.
	ByteSequence
	// Boolean is ?1 or ?0.
	Boolean
	// Date is '@' and an Integer of seconds since the Unix epoch:
	// @1659578233.
	Date
	// DisplayString is quoted text whose bytes outside visible ASCII, and
	// '%' and '"', are percent-encoded UTF-8: %"f%c3%bc%c3%bc".
	DisplayString
)

// String returns the kind's name as RFC 9651 writes it.
func (k Kind) String() string {
	switch k {
	case Integer:
		return "Integer"
	case Decimal:
		return "Decimal"
	case String:
		return "String"
	case Token:
		return "Token"
	case ByteSequence:
		return "Byte Sequence"
	case Boolean:
		return "Boolean"
	case Date:
		return "Date"
	case DisplayString:
		return "Display String"
	}
	return "no item"
}

// Item is a bare item, as read from a field value. Items are small values,
// safe to copy and to compare with ==.
type Item struct {
	// Kind is the item's type.
	Kind Kind
	// Int is the value of an Integer (at most 15 digits, either sign),
	// of a Date (seconds since the Unix epoch) and of a Boolean (1 for
	// true, 0 for false), and a Decimal's value in thousandths: 1.5 is
	// 1500. It is 0 for the other kinds.
	Int int64
	// Raw is a String, Token, Byte Sequence or Display String as written,
	// without its delimiters and with its escapes as they are: `a \"b\"`
	// for "a \"b\"", `f%c3%bc` for %"f%c3%bc", `aGk=` for :aGk=:. It is
	// "" for the other kinds. [Item.Text] and [Item.Bytes] decode it.
	Raw string
}

// Text returns the value of a String, a Token or a Display String: Raw
// with its escapes undone, percent-decoded for a Display String. It
// allocates only when Raw has escapes to undo. It returns "" for the
// other kinds.
func (it Item) Text() string {
	switch it.Kind {
	case Token:
		return it.Raw
	case String:
		if strings.IndexByte(it.Raw, '\\') < 0 {
			return it.Raw
		}
		var b strings.Builder
		for i := 0; i < len(it.Raw); i++ {
			if it.Raw[i] == '\\' {
				i++ // parsing kept only \" and \\
			}
			b.WriteByte(it.Raw[i])
		}
		return b.String()
	case DisplayString:
		if strings.IndexByte(it.Raw, '%') < 0 {
			return it.Raw
		}
		var b strings.Builder
		for i := 0; i < len(it.Raw); i++ {
			c := it.Raw[i]
			if c == '%' { // parsing kept only two lowercase hex digits
				c = unhex(it.Raw[i+1])<<4 | unhex(it.Raw[i+2])
				i += 2
			}
			b.WriteByte(c)
		}
		return b.String()
	}
	return ""
}

// Bytes returns the content of a Byte Sequence, decoded from base64 as
// RFC 9651 asks: padding may be left out and pad bits need not be zero.
// It returns nil for the other kinds.
func (it Item) Bytes() []byte {
	if it.Kind != ByteSequence {
		return nil
	}
	b, _ := base64.RawStdEncoding.DecodeString(strings.TrimRight(it.Raw, "=")) // checked when parsed
	if b == nil {
		b = []byte{}
	}
	return b
}

// Params are the parameters of an item or of an inner list, a view of the
// field value they were parsed from. The zero Params has none.
type Params struct {
	s string // from the first ';' on, as checked by the parser
}

// Get returns the value of the parameter key, and whether there is one. A
// parameter written without a value is Boolean true; a key written more
// than once has its last value, as RFC 9651 overwrites the first.
func (p Params) Get(key string) (Item, bool) {
	var got Item
	found := false
	for k, v := range p.All() {
		if k == key {
			got, found = v, true
		}
	}
	return got, found
}

// All yields each parameter as written, in order, keys written more than
// once included: a later value of a key replaces an earlier one, and the
// key keeps its first place.
func (p Params) All() iter.Seq2[string, Item] {
	return func(yield func(string, Item) bool) {
		sc := scanner{s: p.s}
		for sc.peek() == ';' {
			k, v, _ := sc.param()
			if !yield(k, v) {
				return
			}
		}
	}
}

// Member is a member of a [List]: an Item with its parameters, or an Inner
// List of items, each with its own parameters, with parameters of its own.
type Member struct {
	// Item is the member's bare item; the zero Item for an inner list.
	Item Item
	// Params are the item's parameters, or the inner list's.
	Params Params
	inner  string // the inner list between its parentheses, as checked
	isList bool
}

// IsInnerList reports whether m is an Inner List rather than an Item.
func (m Member) IsInnerList() bool { return m.isList }

// Items yields the items of an inner list with their parameters, in
// order; nothing for an Item.
func (m Member) Items() iter.Seq2[Item, Params] {
	return func(yield func(Item, Params) bool) {
		sc := scanner{s: m.inner}
		for sc.skipSP(); !sc.done(); sc.skipSP() {
			it, _ := sc.bareItem()
			ps, _ := sc.params()
			if !yield(it, ps) {
				return
			}
		}
	}
}

// List is a parsed List, a view of the field value. The zero List is
// empty.
type List struct {
	s string // the whole field value, as checked by ParseList
}

// ParseList parses s as a List, section 4.2.1 of RFC 9651. s is a field
// value as HTTP delivers it: a field sent on several lines must have them
// joined with ", " first, as RFC 9651 asks. An empty value is an empty
// List. A value that is not a List gives an error matching
// [ErrMalformed], and RFC 9651 asks that the field then be ignored.
//
// ParseList allocates nothing, and the List it returns reads s again as
// it is walked, allocating nothing either.
func ParseList(s string) (List, error) {
	sc := scanner{s: s}
	sc.skipSP()
	for !sc.done() {
		if _, err := sc.member(); err != nil {
			return List{}, err
		}
		sc.skipOWS()
		if sc.done() {
			break
		}
		if sc.s[sc.i] != ',' {
			return List{}, syntaxError("a list member is followed by neither ',' nor the end")
		}
		sc.i++
		sc.skipOWS()
		if sc.done() {
			return List{}, syntaxError("a list ends with ','")
		}
	}
	return List{s: s}, nil
}

// Members yields the members of l in order.
func (l List) Members() iter.Seq[Member] {
	return func(yield func(Member) bool) {
		sc := scanner{s: l.s}
		for sc.skipSP(); !sc.done(); sc.skipOWS() {
			m, _ := sc.member()
			if !yield(m) {
				return
			}
			sc.skipOWS()
			if sc.done() {
				return
			}
			sc.i++ // ','
		}
	}
}

// scanner reads a field value from i on, following RFC 9651's algorithms
// step by step; each method consumes what it reads. Once a value has
// passed ParseList, reading it again cannot fail, so the walks above
// leave the errors unread.
type scanner struct {
	s string
	i int
}

func (sc *scanner) done() bool { return sc.i >= len(sc.s) }

// peek returns the next character, or 0 at the end: no rule accepts 0, so
// the end fails wherever a character is needed.
func (sc *scanner) peek() byte {
	if sc.i < len(sc.s) {
		return sc.s[sc.i]
	}
	return 0
}

func (sc *scanner) skipSP() {
	for sc.i < len(sc.s) && sc.s[sc.i] == ' ' {
		sc.i++
	}
}

// skipOWS skips the optional whitespace of RFC 9110, spaces and tabs,
// which only a List allows around its commas.
func (sc *scanner) skipOWS() {
	for sc.i < len(sc.s) && (sc.s[sc.i] == ' ' || sc.s[sc.i] == '\t') {
		sc.i++
	}
}

// member reads an Item or an Inner List with its parameters, 4.2.1.1.
func (sc *scanner) member() (Member, error) {
	if sc.peek() == '(' {
		return sc.innerList()
	}
	it, err := sc.bareItem()
	if err != nil {
		return Member{}, err
	}
	ps, err := sc.params()
	return Member{Item: it, Params: ps}, err
}

// innerList reads an Inner List, 4.2.1.2.
func (sc *scanner) innerList() (Member, error) {
	sc.i++ // '('
	start := sc.i
	for {
		sc.skipSP()
		switch sc.peek() {
		case 0:
			return Member{}, syntaxError("an inner list has no ')'")
		case ')':
			inner := sc.s[start:sc.i]
			sc.i++
			ps, err := sc.params()
			return Member{Params: ps, inner: inner, isList: true}, err
		}
		if _, err := sc.bareItem(); err != nil {
			return Member{}, err
		}
		if _, err := sc.params(); err != nil {
			return Member{}, err
		}
		if c := sc.peek(); c != ' ' && c != ')' {
			return Member{}, syntaxError("an inner list's item is followed by neither ' ' nor ')'")
		}
	}
}

// params reads Parameters, 4.2.3.2.
func (sc *scanner) params() (Params, error) {
	start := sc.i
	for sc.peek() == ';' {
		if _, _, err := sc.param(); err != nil {
			return Params{}, err
		}
	}
	return Params{s: sc.s[start:sc.i]}, nil
}

// param reads one parameter, from its ';' on.
func (sc *scanner) param() (string, Item, error) {
	sc.i++ // ';'
	sc.skipSP()
	key, err := sc.key()
	if err != nil {
		return "", Item{}, err
	}
	if sc.peek() != '=' {
		return key, Item{Kind: Boolean, Int: 1}, nil
	}
	sc.i++
	v, err := sc.bareItem()
	return key, v, err
}

// key reads a Key, 4.2.3.3.
func (sc *scanner) key() (string, error) {
	if c := sc.peek(); !isLower(c) && c != '*' {
		return "", syntaxError("a key does not start with a lowercase letter or '*'")
	}
	start := sc.i
	for sc.i++; sc.i < len(sc.s) && isKeyChar(sc.s[sc.i]); sc.i++ {
	}
	return sc.s[start:sc.i], nil
}

// bareItem reads a Bare Item, 4.2.3.1, by its first character.
func (sc *scanner) bareItem() (Item, error) {
	switch c := sc.peek(); {
	case c == '-' || isDigit(c):
		return sc.number()
	case c == '"':
		return sc.str()
	case isAlpha(c) || c == '*':
		return sc.token(), nil
	case c == ':':
		return sc.byteSequence()
	case c == '?':
		return sc.boolean()
	case c == '@':
		return sc.date()
	case c == '%':
		return sc.displayString()
	}
	return Item{}, syntaxError("an item of no known type")
}

// number reads an Integer or a Decimal, 4.2.4, giving up as soon as it is
// longer than RFC 9651 allows, so that its work is bounded too.
func (sc *scanner) number() (Item, error) {
	neg := sc.peek() == '-'
	if neg {
		sc.i++
	}
	if !isDigit(sc.peek()) {
		return Item{}, syntaxError("a number has no digit after its sign")
	}
	var n int64
	chars, frac := 0, -1 // characters read, the point included; digits after the point, -1 before it
loop:
	for ; sc.i < len(sc.s); sc.i++ {
		switch c := sc.s[sc.i]; {
		case isDigit(c):
			n = n*10 + int64(c-'0')
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0:
			if chars > 12 {
				return Item{}, syntaxError("a decimal has more than 12 digits before its point")
			}
			frac = 0
		default:
			break loop
		}
		if chars++; frac < 0 && chars > 15 || frac >= 0 && chars > 16 {
			return Item{}, syntaxError("a number is too long")
		}
	}
	if neg {
		n = -n
	}
	switch {
	case frac < 0:
		return Item{Kind: Integer, Int: n}, nil
	case frac == 0:
		return Item{}, syntaxError("a decimal ends with its point")
	case frac > 3:
		return Item{}, syntaxError("a decimal has more than 3 digits after its point")
	}
	for ; frac < 3; frac++ {
		n *= 10 // at most 10^13 * 100: no overflow
	}
	return Item{Kind: Decimal, Int: n}, nil
}

// str reads a String, 4.2.5.
func (sc *scanner) str() (Item, error) {
	sc.i++ // '"'
	start := sc.i
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		sc.i++
		switch {
		case c == '\\':
			if sc.done() || sc.s[sc.i] != '"' && sc.s[sc.i] != '\\' {
				return Item{}, syntaxError(`a string has an escape other than \" and \\`)
			}
			sc.i++
		case c == '"':
			return Item{Kind: String, Raw: sc.s[start : sc.i-1]}, nil
		case c < 0x20 || c > 0x7e:
			return Item{}, syntaxError("a string has a character that is neither visible ASCII nor a space")
		}
	}
	return Item{}, syntaxError("a string has no closing quote")
}

// token reads a Token, 4.2.6; its first character is already known to be
// a letter or '*'.
func (sc *scanner) token() Item {
	start := sc.i
	for sc.i++; sc.i < len(sc.s) && (isTchar(sc.s[sc.i]) || sc.s[sc.i] == ':' || sc.s[sc.i] == '/'); sc.i++ {
	}
	return Item{Kind: Token, Raw: sc.s[start:sc.i]}
}

// byteSequence reads a Byte Sequence, 4.2.7. Its base64 is checked
// without decoding it: padding may be left out (it is synthesized) and
// pad bits need not be zero, as RFC 9651 asks of parsers, but a '='
// elsewhere than at the end, or more of them than the length allows, is
// an encoding no decoder accepts.
func (sc *scanner) byteSequence() (Item, error) {
	sc.i++ // ':'
	end := strings.IndexByte(sc.s[sc.i:], ':')
	if end < 0 {
		return Item{}, syntaxError("a byte sequence has no closing ':'")
	}
	b64 := sc.s[sc.i : sc.i+end]
	sc.i += end + 1
	data := strings.TrimRight(b64, "=")
	for i := 0; i < len(data); i++ {
		if !isBase64(data[i]) {
			return Item{}, syntaxError("a byte sequence has a character outside base64")
		}
	}
	pad := len(b64) - len(data)
	switch len(data) % 4 {
	case 0:
		if pad == 0 {
			return Item{Kind: ByteSequence, Raw: b64}, nil
		}
	case 2:
		if pad <= 2 {
			return Item{Kind: ByteSequence, Raw: b64}, nil
		}
	case 3:
		if pad <= 1 {
			return Item{Kind: ByteSequence, Raw: b64}, nil
		}
	}
	return Item{}, syntaxError("a byte sequence is not valid base64")
}

// boolean reads a Boolean, 4.2.8.
func (sc *scanner) boolean() (Item, error) {
	sc.i++ // '?'
	switch sc.peek() {
	case '1':
		sc.i++
		return Item{Kind: Boolean, Int: 1}, nil
	case '0':
		sc.i++
		return Item{Kind: Boolean}, nil
	}
	return Item{}, syntaxError("a boolean is neither ?1 nor ?0")
}

// date reads a Date, 4.2.9: an Integer after '@'.
func (sc *scanner) date() (Item, error) {
	sc.i++ // '@'
	n, err := sc.number()
	if err != nil {
		return Item{}, err
	}
	if n.Kind != Integer {
		return Item{}, syntaxError("a date is not an integer")
	}
	return Item{Kind: Date, Int: n.Int}, nil
}

// displayString reads a Display String, 4.2.10, checking as it goes that
// its percent-encoded bytes are UTF-8, without decoding them into memory.
func (sc *scanner) displayString() (Item, error) {
	if sc.i+1 >= len(sc.s) || sc.s[sc.i+1] != '"' {
		return Item{}, syntaxError(`a display string does not start with %"`)
	}
	sc.i += 2
	start := sc.i
	var u utf8Check
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		sc.i++
		switch {
		case c < 0x20 || c > 0x7e:
			return Item{}, syntaxError("a display string has a character that is neither visible ASCII nor a space")
		case c == '%':
			if sc.i+2 > len(sc.s) || !isLowerHex(sc.s[sc.i]) || !isLowerHex(sc.s[sc.i+1]) {
				return Item{}, syntaxError("a display string has a '%' not followed by two lowercase hex digits")
			}
			c = unhex(sc.s[sc.i])<<4 | unhex(sc.s[sc.i+1])
			sc.i += 2
		case c == '"':
			if !u.complete() {
				return Item{}, syntaxError("a display string is not UTF-8")
			}
			return Item{Kind: DisplayString, Raw: sc.s[start : sc.i-1]}, nil
		}
		if !u.add(c) {
			return Item{}, syntaxError("a display string is not UTF-8")
		}
	}
	return Item{}, syntaxError("a display string has no closing quote")
}

// utf8Check checks a byte stream as UTF-8, one byte at a time, holding at
// most one encoded rune.
type utf8Check struct {
	buf       [utf8.UTFMax]byte
	n, needed int
}

// add adds b, reporting false when the bytes so far cannot be UTF-8.
func (u *utf8Check) add(b byte) bool {
	if u.n == 0 {
		switch {
		case b < utf8.RuneSelf:
			return true
		case b >= 0xc2 && b <= 0xdf:
			u.needed = 2
		case b >= 0xe0 && b <= 0xef:
			u.needed = 3
		case b >= 0xf0 && b <= 0xf4:
			u.needed = 4
		default:
			return false // a continuation byte, or a leading byte no rune has
		}
	} else if b&0xc0 != 0x80 {
		return false
	}
	u.buf[u.n] = b
	u.n++
	if u.n < u.needed {
		return true
	}
	// DecodeRune refuses overlong forms, surrogates and runes past
	// U+10FFFF by reading fewer bytes than were needed.
	_, size := utf8.DecodeRune(u.buf[:u.n])
	u.n = 0
	return size == u.needed
}

// complete reports whether no rune was left unfinished.
func (u *utf8Check) complete() bool { return u.n == 0 }

func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isLower(c byte) bool    { return 'a' <= c && c <= 'z' }
func isAlpha(c byte) bool    { return isLower(c) || 'A' <= c && c <= 'Z' }
func isLowerHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' }
func isBase64(c byte) bool   { return isAlpha(c) || isDigit(c) || c == '+' || c == '/' }

// isKeyChar reports whether c may follow a key's first character.
func isKeyChar(c byte) bool {
	return isLower(c) || isDigit(c) || c == '_' || c == '-' || c == '.' || c == '*'
}

// isTchar reports whether c is an RFC 9110 tchar.
func isTchar(c byte) bool {
	return isAlpha(c) || isDigit(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// unhex returns the value of a lowercase hex digit.
func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}
