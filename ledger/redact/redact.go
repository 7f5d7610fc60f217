package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Placeholder replaces the value of a secret-looking field in stored arguments.
const Placeholder = "[REDACTED]"

// JSON returns args with secrets replaced by Placeholder, at any depth: the
// whole value of a field whose name is secret-looking (IsSecretName), and
// each secret value the built-in shapes find inside any other string
// (Text). Fingerprints are computed on the real arguments, never on
// the redacted copy. Numbers keep their spelling.
func JSON(args json.RawMessage) (json.RawMessage, error) {
	return (*Redactor)(nil).JSON(args)
}

// JSON is the package's JSON with r's names and patterns added.
func (r *Redactor) JSON(args json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		return nil, nil
	}
	if r.builtinOnly() && !maySpellSecret(trimmed) {
		// No field name can match: most arguments hold no secret, and then
		// checking that they are one JSON value is all there is to do.
		if !json.Valid(trimmed) {
			return nil, fmt.Errorf("redact: arguments are not valid JSON")
		}
		return json.RawMessage(trimmed), nil
	}
	return r.redactDecoded(trimmed)
}

// builtinOnly reports that r adds nothing to the built-in rules, so the
// shortcut of maySpellSecret holds.
func (r *Redactor) builtinOnly() bool { return r == nil || len(r.Names) == 0 && len(r.Patterns) == 0 }

// redactDecoded is JSON on the decoded document.
func (r *Redactor) redactDecoded(trimmed []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("redact: arguments are not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("redact: arguments hold more than one JSON value")
	}
	v, changed := r.redactValue(v)
	if !changed {
		return json.RawMessage(trimmed), nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("redact: arguments: %w", err)
	}
	return out, nil
}

// Map returns a redacted copy of a decoded argument map; args is left
// as it was.
func Map(args map[string]any) map[string]any { return (*Redactor)(nil).Map(args) }

// Map is the package's Map with r's names and patterns added.
func (r *Redactor) Map(args map[string]any) map[string]any {
	raw, err := json.Marshal(args)
	if err != nil {
		return map[string]any{"_": Placeholder}
	}
	red, err := r.JSON(raw)
	if err != nil {
		return map[string]any{"_": Placeholder}
	}
	var out map[string]any
	if err := json.Unmarshal(red, &out); err != nil {
		return map[string]any{"_": Placeholder}
	}
	return out
}

// redactValue rewrites v in place (strings are replaced, so the caller
// stores the returned value) and reports whether anything changed.
func (r *Redactor) redactValue(v any) (any, bool) {
	changed := false
	switch t := v.(type) {
	case string:
		if red := r.Text(t); red != t {
			return red, true
		}
	case map[string]any:
		for k, child := range t {
			if r.IsSecretName(k) {
				if child != Placeholder {
					t[k] = Placeholder
					changed = true
				}
				continue
			}
			if c, ok := r.redactValue(child); ok {
				t[k] = c
				changed = true
			}
		}
	case []any:
		for i, child := range t {
			if c, ok := r.redactValue(child); ok {
				t[i] = c
				changed = true
			}
		}
	}
	return v, changed
}
