package args

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// canonicalSorted returns the RFC 8785 form of doc when doc is already
// nearly canonical, as encoding/json writes maps: object members in
// canonical order, names in printable ASCII, strings without escapes. It
// then only drops whitespace and rewrites numbers, in one pass with no
// tree. For anything else it reports false and the caller uses jcs, the
// general implementation; it never returns a different answer from jcs
// (FuzzCanonicalSorted checks that).
//
// Arguments are fingerprinted on every call, and most are marshalled Go
// maps: this pass is several times faster than jcs.Transform on them.
func canonicalSorted(doc []byte) ([]byte, bool) {
	c := canonPass{in: doc, out: make([]byte, 0, len(doc))}
	c.space()
	if !c.value(0) {
		return nil, false
	}
	c.space()
	if c.i != len(c.in) {
		return nil, false
	}
	return c.out, true
}

// maxCanonDepth bounds the recursion; deeper documents go to jcs.
const maxCanonDepth = 64

type canonPass struct {
	in, out []byte
	i       int
}

func (c *canonPass) space() {
	for c.i < len(c.in) {
		switch c.in[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

func (c *canonPass) value(depth int) bool {
	if c.i >= len(c.in) || depth > maxCanonDepth {
		return false
	}
	switch b := c.in[c.i]; {
	case b == '{':
		return c.object(depth)
	case b == '[':
		return c.array(depth)
	case b == '"':
		_, ok := c.str(false)
		return ok
	case b == '-' || '0' <= b && b <= '9':
		return c.number()
	}
	return c.literal()
}

func (c *canonPass) object(depth int) bool {
	c.i++
	c.out = append(c.out, '{')
	c.space()
	if c.i < len(c.in) && c.in[c.i] == '}' {
		c.i++
		c.out = append(c.out, '}')
		return true
	}
	var prev []byte
	for n := 0; ; n++ {
		c.space()
		if n > 0 {
			c.out = append(c.out, ',')
		}
		name, ok := c.str(true)
		// Printable ASCII names sort by bytes as RFC 8785 sorts them (by
		// UTF-16 code units). Out of order or repeated: not our case.
		if !ok || n > 0 && bytes.Compare(prev, name) >= 0 {
			return false
		}
		prev = name
		c.space()
		if c.i >= len(c.in) || c.in[c.i] != ':' {
			return false
		}
		c.i++
		c.out = append(c.out, ':')
		c.space()
		if !c.value(depth + 1) {
			return false
		}
		if end, ok := c.after('}'); !ok || end {
			return ok
		}
	}
}

func (c *canonPass) array(depth int) bool {
	c.i++
	c.out = append(c.out, '[')
	c.space()
	if c.i < len(c.in) && c.in[c.i] == ']' {
		c.i++
		c.out = append(c.out, ']')
		return true
	}
	for n := 0; ; n++ {
		c.space()
		if n > 0 {
			c.out = append(c.out, ',')
		}
		if !c.value(depth + 1) {
			return false
		}
		if end, ok := c.after(']'); !ok || end {
			return ok
		}
	}
}

// after reads what follows a member or element: a comma (another one comes)
// or the closing byte, which it writes (end).
func (c *canonPass) after(closing byte) (end, ok bool) {
	c.space()
	if c.i >= len(c.in) {
		return false, false
	}
	switch c.in[c.i] {
	case ',':
		c.i++
		return false, true
	case closing:
		c.i++
		c.out = append(c.out, closing)
		return true, true
	}
	return false, false
}

// str copies a string without escapes or control characters, which RFC
// 8785 writes as it is. A name must be printable ASCII; a value may hold
// any valid UTF-8.
func (c *canonPass) str(name bool) ([]byte, bool) {
	if c.i >= len(c.in) || c.in[c.i] != '"' {
		return nil, false
	}
	start := c.i + 1
	ascii := true
	for j := start; j < len(c.in); j++ {
		switch b := c.in[j]; {
		case b == '"':
			s := c.in[start:j]
			if !ascii && (name || !utf8.Valid(s)) {
				return nil, false
			}
			c.out = append(c.out, c.in[c.i:j+1]...)
			c.i = j + 1
			return s, true
		case b == '\\' || b < 0x20 || b == 0x7f:
			return nil, false
		case b >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// number checks the JSON number grammar and writes the number as RFC 8785
// does (ECMAScript's Number to String, jcs.NumberToJSON); an integer of at
// most 15 digits is already in that form.
func (c *canonPass) number() bool {
	start := c.i
	digits := func() int {
		n := 0
		for c.i < len(c.in) && '0' <= c.in[c.i] && c.in[c.i] <= '9' {
			c.i++
			n++
		}
		return n
	}
	if c.in[c.i] == '-' {
		c.i++
	}
	intStart := c.i
	n := digits()
	if n == 0 || n > 1 && c.in[intStart] == '0' {
		return false
	}
	plain := true
	if c.i < len(c.in) && c.in[c.i] == '.' {
		c.i++
		if digits() == 0 {
			return false
		}
		plain = false
	}
	if c.i < len(c.in) && (c.in[c.i] == 'e' || c.in[c.i] == 'E') {
		c.i++
		if c.i < len(c.in) && (c.in[c.i] == '+' || c.in[c.i] == '-') {
			c.i++
		}
		if digits() == 0 {
			return false
		}
		plain = false
	}
	tok := c.in[start:c.i]
	if plain && n <= 15 && !bytes.Equal(tok, []byte("-0")) {
		c.out = append(c.out, tok...)
		return true
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return false
	}
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		return false
	}
	c.out = append(c.out, s...)
	return true
}

func (c *canonPass) literal() bool {
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(c.in[c.i:], []byte(lit)) {
			c.i += len(lit)
			c.out = append(c.out, lit...)
			return true
		}
	}
	return false
}
