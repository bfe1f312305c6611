package sfv

import (
	"strings"
	"unicode/utf8"
)

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
