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
