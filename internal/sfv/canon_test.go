package sfv

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// canon serializes l as RFC 9651, section 4.1, writes it: the canonical
// form of what was parsed. The tests compare it with what they expect,
// and the fuzz target checks that it parses back to itself.
func canon(l List) string {
	var b strings.Builder
	first := true
	for m := range l.Members() {
		if !first {
			b.WriteString(", ")
		}
		first = false
		if !m.IsInnerList() {
			writeItem(&b, m.Item)
			writeParams(&b, m.Params)
			continue
		}
		b.WriteByte('(')
		sep := ""
		for it, ps := range m.Items() {
			b.WriteString(sep)
			sep = " "
			writeItem(&b, it)
			writeParams(&b, ps)
		}
		b.WriteByte(')')
		writeParams(&b, m.Params)
	}
	return b.String()
}

// writeParams writes each key once, in the place it was first written,
// with its last value, as RFC 9651's parsing keeps them in its map.
func writeParams(b *strings.Builder, ps Params) {
	var keys []string
	for k := range ps.All() {
		if !contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		v, _ := ps.Get(k)
		b.WriteByte(';')
		b.WriteString(k)
		if v != (Item{Kind: Boolean, Int: 1}) {
			b.WriteByte('=')
			writeItem(b, v)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func writeItem(b *strings.Builder, it Item) {
	switch it.Kind {
	case Integer:
		b.WriteString(strconv.FormatInt(it.Int, 10))
	case Decimal:
		n := it.Int
		if n < 0 {
			b.WriteByte('-')
			n = -n
		}
		b.WriteString(strconv.FormatInt(n/1000, 10))
		b.WriteByte('.')
		frac := strings.TrimRight(strconv.FormatInt(1000+n%1000, 10)[1:], "0")
		if frac == "" {
			frac = "0"
		}
		b.WriteString(frac)
	case String:
		b.WriteByte('"')
		for _, c := range []byte(it.Text()) {
			if c == '"' || c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
		b.WriteByte('"')
	case Token:
		b.WriteString(it.Text())
	case ByteSequence:
		b.WriteByte(':')
		b.WriteString(base64.StdEncoding.EncodeToString(it.Bytes()))
		b.WriteByte(':')
	case Boolean:
		b.WriteString("?" + strconv.FormatInt(it.Int, 10))
	case Date:
		b.WriteString("@" + strconv.FormatInt(it.Int, 10))
	case DisplayString:
		b.WriteString(`%"`)
		for _, c := range []byte(it.Text()) {
			if c == '%' || c == '"' || c < 0x20 || c > 0x7e {
				b.WriteString("%" + strconv.FormatUint(uint64(c)>>4, 16) + strconv.FormatUint(uint64(c)&15, 16))
				continue
			}
			b.WriteByte(c)
		}
		b.WriteByte('"')
	default:
		b.WriteString("<no item>")
	}
}
