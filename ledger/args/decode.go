package args

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// ErrInvalid: a call's arguments are not a JSON object the ledger can
// fingerprint (not JSON, not an object, a member name given twice, a lone
// surrogate, invalid UTF-8). Nothing is stored; every door answers
// JSON-RPC -32602 (invalid params). Match it with errors.Is; a duplicated
// name is also a [*DuplicateNameError].
var ErrInvalid = errors.New("args: invalid arguments")

// DuplicateNameError: an object in the arguments gives one member name
// twice ({"amount_cents":1,"amount_cents":5000}). JSON parsers disagree on
// which value such a document means (encoding/json keeps the last, others
// the first or refuse it), so the ledger refuses it rather than fingerprint
// one reading while the tool acts on another.
type DuplicateNameError struct {
	Name string // the name, decoded
}

func (e *DuplicateNameError) Error() string {
	return fmt.Sprintf("args: invalid arguments: the member %.60q is given twice in one object; send each name once", e.Name)
}

// Is makes a DuplicateNameError match [ErrInvalid].
func (e *DuplicateNameError) Is(target error) bool { return target == ErrInvalid }

// Decode parses a tool call's arguments: a JSON object (absent or null
// arguments are the empty object) in valid UTF-8, with no lone surrogate
// escape and no member name given twice in any object, at any depth. What
// it accepts [Fingerprint] accepts too, and the decoded map, marshalled
// again, has the same fingerprint. Its errors wrap [ErrInvalid].
func Decode(raw []byte) (map[string]any, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return map[string]any{}, nil
	}
	if trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object; send the arguments as an object of named values", ErrInvalid)
	}
	if !utf8.Valid(trimmed) {
		return nil, fmt.Errorf("%w: not valid UTF-8; send the arguments as UTF-8 JSON", ErrInvalid)
	}
	var m map[string]any
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return nil, fmt.Errorf("%w: not valid JSON: %v", ErrInvalid, err)
	}
	if err := CheckNames(trimmed); err != nil {
		return nil, err
	}
	return m, nil
}

// CheckNames refuses a JSON document that gives a member name twice in
// one object, at any depth (a [*DuplicateNameError]), or that holds a string
// with a lone UTF-16 surrogate escape ("\ud800"), which a decoder turns
// into U+FFFD, so that two different names can decode to one. Names are
// compared as decoded: "a" and "\u0061" are the same name. It reads the
// document once and allocates only to decode names that hold escapes; a
// document that is not JSON is left to the parser that reads it next
// (CheckNames stops where it stops understanding and reports nil).
func CheckNames(doc []byte) error {
	s := nameScan{doc: doc}
	s.value(0)
	return s.err
}

// maxScanDepth bounds the recursion of CheckNames, past the nesting that
// encoding/json and jcs accept.
const maxScanDepth = 10001

// nameScan walks a JSON document for CheckNames.
type nameScan struct {
	doc  []byte
	i    int
	err  error // the first problem found
	stop bool  // err is set, or the scan met what it does not read
}

// nameSpan is a member name as it appears in the document, between its
// quotes; escaped: it holds a backslash, and must be decoded to compare.
type nameSpan struct {
	start, end int
	escaped    bool
}

func (s *nameScan) space() {
	for s.i < len(s.doc) {
		switch s.doc[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *nameScan) value(depth int) {
	s.space()
	if s.i >= len(s.doc) || depth > maxScanDepth {
		s.stop = true
		return
	}
	switch s.doc[s.i] {
	case '{':
		s.object(depth)
	case '[':
		s.array(depth)
	case '"':
		s.str()
	default:
		start := s.i
		for s.i < len(s.doc) {
			switch s.doc[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if s.i == start {
					s.stop = true
				}
				return
			}
			s.i++
		}
	}
}

func (s *nameScan) object(depth int) {
	s.i++ // '{'
	var buf [fewNames]nameSpan
	names := buf[:0]
	var set map[string]struct{} // the names decoded, once there are many
	for !s.stop {
		s.space()
		if s.i >= len(s.doc) {
			s.stop = true
			return
		}
		switch s.doc[s.i] {
		case '}':
			s.i++
			return
		case ',':
			s.i++
			continue
		case '"':
		default:
			s.stop = true
			return
		}
		n, ok := s.str()
		if !ok {
			return
		}
		if s.repeated(names, &set, n) {
			return
		}
		names = append(names, n)
		s.space()
		if s.i >= len(s.doc) || s.doc[s.i] != ':' {
			s.stop = true
			return
		}
		s.i++
		s.value(depth + 1)
	}
}

// fewNames is how many names of one object are compared pair by pair
// before they go into a set.
const fewNames = 16

// repeated reports whether n is among the earlier names of its object,
// and sets s.err when it is.
func (s *nameScan) repeated(names []nameSpan, set *map[string]struct{}, n nameSpan) bool {
	if len(names) < fewNames {
		for _, m := range names {
			if s.sameName(m, n) {
				s.fail(&DuplicateNameError{Name: s.decode(n)})
				return true
			}
		}
		return s.stop
	}
	if *set == nil {
		*set = make(map[string]struct{}, 2*len(names))
		for _, m := range names {
			(*set)[s.decode(m)] = struct{}{}
		}
	}
	name := s.decode(n)
	if _, ok := (*set)[name]; ok {
		s.fail(&DuplicateNameError{Name: name})
		return true
	}
	(*set)[name] = struct{}{}
	return s.stop
}

func (s *nameScan) sameName(a, b nameSpan) bool {
	if !a.escaped && !b.escaped {
		return bytes.Equal(s.doc[a.start:a.end], s.doc[b.start:b.end])
	}
	return s.decode(a) == s.decode(b)
}

// decode is a name as a JSON parser reads it.
func (s *nameScan) decode(n nameSpan) string {
	if !n.escaped {
		return string(s.doc[n.start:n.end])
	}
	var name string
	if err := json.Unmarshal(s.doc[n.start-1:n.end+1], &name); err != nil {
		s.stop = true // not JSON: the parser says so
	}
	return name
}

func (s *nameScan) fail(err error) {
	if s.err == nil {
		s.err = err
	}
	s.stop = true
}

func (s *nameScan) array(depth int) {
	s.i++ // '['
	for !s.stop {
		s.space()
		if s.i >= len(s.doc) {
			s.stop = true
			return
		}
		switch s.doc[s.i] {
		case ']':
			s.i++
			return
		case ',':
			s.i++
			continue
		}
		s.value(depth + 1)
	}
}

// str skips a string and returns the span of its contents. A string with
// escapes is checked for lone surrogates on the way.
func (s *nameScan) str() (nameSpan, bool) {
	n := nameSpan{start: s.i + 1}
	for j := n.start; j < len(s.doc); j++ {
		switch s.doc[j] {
		case '"':
			n.end, s.i = j, j+1
			return n, true
		case '\\':
			n.escaped = true
			if j+1 < len(s.doc) && s.doc[j+1] == 'u' {
				next, ok := s.surrogates(j)
				if !ok {
					return n, false
				}
				if next > j {
					j = next - 1
					continue
				}
			}
			j++
		}
	}
	s.stop = true
	return n, false
}

// surrogates checks the \u escape at doc[j:]: a high surrogate must be
// followed by a low one, and a low one must follow a high one. It returns
// the index after the pair when there is one (else j), and false when the
// escape is a lone surrogate (s.err is set).
func (s *nameScan) surrogates(j int) (int, bool) {
	u, ok := s.hex4(j)
	if !ok {
		return j, true // not an escape the parser takes: it says so
	}
	switch {
	case 0xDC00 <= u && u <= 0xDFFF:
		s.fail(s.lone(j))
		return j, false
	case 0xD800 <= u && u <= 0xDBFF:
		if j+12 <= len(s.doc) && s.doc[j+6] == '\\' && s.doc[j+7] == 'u' {
			if lo, ok := s.hex4(j + 6); ok && 0xDC00 <= lo && lo <= 0xDFFF {
				return j + 12, true
			}
		}
		s.fail(s.lone(j))
		return j, false
	}
	return j, true
}

// hex4 reads the four hex digits of the \u escape at doc[j:].
func (s *nameScan) hex4(j int) (uint64, bool) {
	if j+6 > len(s.doc) {
		return 0, false
	}
	u, err := strconv.ParseUint(string(s.doc[j+2:j+6]), 16, 16)
	return u, err == nil
}

func (s *nameScan) lone(j int) error {
	return fmt.Errorf("%w: the escape %s is half of a UTF-16 surrogate pair; send whole characters", ErrInvalid, s.doc[j:j+6])
}
