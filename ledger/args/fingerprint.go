package args

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/gowebpki/jcs"
)

// DefaultExcluded are the top-level argument fields that carry no business
// meaning and never change a fingerprint.
var DefaultExcluded = []string{
	"_meta", "traceparent", "tracestate", "trace_id", "request_id", "timestamp",
	"idempotency_key",
}

// Fingerprint is the hex SHA-256 of the RFC 8785 canonical JSON of raw,
// after removing [DefaultExcluded] and the extra top-level fields given. Key order,
// whitespace, number spelling (1, 1.0, 1e0) and string escapes do not change
// it. Empty or null arguments fingerprint as the empty object.
func Fingerprint(raw json.RawMessage, exclude ...string) (string, error) {
	canon, err := Canonical(raw, exclude...)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// Canonical returns the RFC 8785 canonical form of raw with
// [DefaultExcluded] and the excluded top-level fields removed. Its errors
// wrap [ErrInvalid].
func Canonical(raw json.RawMessage, exclude ...string) ([]byte, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return []byte("{}"), nil
	}
	if trimmed[0] == '{' && mayHoldExcluded(trimmed, exclude) {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &obj); err != nil {
			return nil, invalidJSON(trimmed, err)
		}
		drop := false
		for _, name := range DefaultExcluded {
			if _, ok := obj[name]; ok {
				delete(obj, name)
				drop = true
			}
		}
		for _, name := range exclude {
			if _, ok := obj[name]; ok {
				delete(obj, name)
				drop = true
			}
		}
		if drop {
			// encoding/json accepts duplicate names, lone surrogates and
			// invalid UTF-8 that RFC 8785 rejects; check the whole input
			// first so that dropping a field never turns a document jcs
			// refuses into one it accepts.
			if _, err := jcs.Transform(trimmed); err != nil {
				return nil, invalidJSON(trimmed, err)
			}
			var err error
			if trimmed, err = json.Marshal(obj); err != nil {
				return nil, fmt.Errorf("args: arguments: %w", err)
			}
		}
	}
	if canon, ok := canonicalSorted(trimmed); ok {
		return canon, nil
	}
	canon, err := jcs.Transform(trimmed)
	if err != nil {
		return nil, invalidJSON(trimmed, err)
	}
	return canon, nil
}

// invalidJSON is the error of arguments a parser refused with err: a
// *DuplicateNameError when a member name is given twice (the one-pass form
// refuses those too, so only a refused document is scanned for them), else
// err wrapped with ErrInvalid.
func invalidJSON(doc []byte, err error) error {
	if nerr := CheckNames(doc); nerr != nil {
		return nerr
	}
	return fmt.Errorf("%w: not valid JSON: %w", ErrInvalid, err)
}

// mayHoldExcluded reports whether an excluded field could be present. Most
// arguments hold none, and then the map round trip is skipped. A name is
// looked for as its quoted spelling; any backslash (a name may be spelled
// with escapes, "\u005fmeta") takes the full path.
func mayHoldExcluded(doc []byte, exclude []string) bool {
	if bytes.IndexByte(doc, '\\') >= 0 {
		return true
	}
	for i := bytes.IndexByte(doc, '"'); i >= 0; {
		rest := doc[i+1:]
		if quotedIn(rest, DefaultExcluded) || quotedIn(rest, exclude) {
			return true
		}
		j := bytes.IndexByte(rest, '"')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// quotedIn reports whether rest starts with one of names and its closing
// quote.
func quotedIn(rest []byte, names []string) bool {
	for _, n := range names {
		if len(rest) > len(n) && rest[len(n)] == '"' && string(rest[:len(n)]) == n {
			return true
		}
	}
	return false
}
