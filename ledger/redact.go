package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Redacted replaces the value of a secret-looking field in stored arguments.
const Redacted = "[REDACTED]"

// secretWords are matched case-insensitively inside field names, after
// dropping '-' and '_' (so "API-Key", "api_key" and "apiKey" all match).
var secretWords = []string{
	"password", "passwd", "secret", "token", "apikey", "authorization",
	"cookie", "credential", "privatekey", "sessionkey",
}

// IsSecretName reports whether a field with this name holds a secret.
func IsSecretName(name string) bool {
	// Fold to lower case without separators in a stack buffer: this runs
	// for every field of every stored argument object.
	var buf [64]byte
	n := buf[:0]
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '-' || c == '_' || c == ' ':
			continue
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		n = append(n, c)
	}
	for _, w := range secretWords {
		if bytes.Contains(n, []byte(w)) {
			return true
		}
	}
	return false
}

// maySpellSecret reports whether some secret word could occur in doc, read
// the way IsSecretName reads a name (case folded, separators dropped). It
// looks at names and values alike, so it errs only towards the full check;
// an escape (a name spelled "\u0074oken") always takes the full check.
func maySpellSecret(doc []byte) bool {
	if bytes.IndexByte(doc, '\\') >= 0 {
		return true
	}
	var buf [512]byte
	folded := buf[:0]
	for _, c := range doc {
		switch {
		case c == '-' || c == '_' || c == ' ':
			continue
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		folded = append(folded, c)
	}
	for _, w := range secretWords {
		if bytes.Contains(folded, []byte(w)) {
			return true
		}
	}
	return false
}

// Redact returns args with the value of every secret-looking field, at any
// depth, replaced by Redacted. Fingerprints are computed on the real
// arguments, never on the redacted copy. Numbers keep their spelling.
func Redact(args json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		return nil, nil
	}
	if !maySpellSecret(trimmed) {
		// No field name can match: most arguments hold no secret, and then
		// checking that they are one JSON value is all there is to do.
		if !json.Valid(trimmed) {
			return nil, fmt.Errorf("ledger: arguments are not valid JSON")
		}
		return json.RawMessage(trimmed), nil
	}
	return redactDecoded(trimmed)
}

// redactDecoded is Redact on the decoded document.
func redactDecoded(trimmed []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("ledger: arguments are not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("ledger: arguments hold more than one JSON value")
	}
	if !redactValue(v) {
		return json.RawMessage(trimmed), nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("ledger: arguments: %w", err)
	}
	return out, nil
}

// RedactMap redacts a decoded argument map in place-free fashion: it returns a
// copy with secret values replaced.
func RedactMap(args map[string]any) map[string]any {
	raw, err := json.Marshal(args)
	if err != nil {
		return map[string]any{"_": Redacted}
	}
	red, err := Redact(raw)
	if err != nil {
		return map[string]any{"_": Redacted}
	}
	var out map[string]any
	if err := json.Unmarshal(red, &out); err != nil {
		return map[string]any{"_": Redacted}
	}
	return out
}

// redactValue rewrites v in place and reports whether anything changed.
func redactValue(v any) bool {
	changed := false
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if IsSecretName(k) {
				t[k] = Redacted
				changed = true
				continue
			}
			if redactValue(child) {
				changed = true
			}
		}
	case []any:
		for _, child := range t {
			if redactValue(child) {
				changed = true
			}
		}
	}
	return changed
}
