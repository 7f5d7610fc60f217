package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Redacted replaces the value of a secret-looking field in stored arguments.
const Redacted = "[REDACTED]"

// Redact returns args with secrets replaced by Redacted, at any depth: the
// whole value of a field whose name is secret-looking (IsSecretName), and
// each secret value the built-in shapes find inside any other string
// (RedactText). Fingerprints are computed on the real arguments, never on
// the redacted copy. Numbers keep their spelling.
func Redact(args json.RawMessage) (json.RawMessage, error) {
	return (*Redactor)(nil).Redact(args)
}

// Redact is the package's Redact with r's names and patterns added.
func (r *Redactor) Redact(args json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		return nil, nil
	}
	if r.builtinOnly() && !maySpellSecret(trimmed) {
		// No field name can match: most arguments hold no secret, and then
		// checking that they are one JSON value is all there is to do.
		if !json.Valid(trimmed) {
			return nil, fmt.Errorf("ledger: arguments are not valid JSON")
		}
		return json.RawMessage(trimmed), nil
	}
	return r.redactDecoded(trimmed)
}

// builtinOnly reports that r adds nothing to the built-in rules, so the
// shortcut of maySpellSecret holds.
func (r *Redactor) builtinOnly() bool { return r == nil || len(r.Names) == 0 && len(r.Patterns) == 0 }

// redactDecoded is Redact on the decoded document.
func (r *Redactor) redactDecoded(trimmed []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("ledger: arguments are not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("ledger: arguments hold more than one JSON value")
	}
	v, changed := r.redactValue(v)
	if !changed {
		return json.RawMessage(trimmed), nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("ledger: arguments: %w", err)
	}
	return out, nil
}

// RedactRecord redacts r in place for a person to read (agentctl ledger
// show and list, the web console): its arguments and result as Redact does
// (a result is the tool's answer, kept whole for replays, so it may echo an
// API key), and its error message as RedactText does. A payload that is not
// JSON (none is, from this module) is hidden whole. Call it on a copy the
// caller owns: the stored record is never written back redacted.
func RedactRecord(r *Record) {
	r.Arguments = redactShown(r.Arguments)
	r.Result = redactShown(r.Result)
	r.ErrorMessage = RedactText(r.ErrorMessage)
}

func redactShown(p json.RawMessage) json.RawMessage {
	if len(p) == 0 {
		return p
	}
	red, err := Redact(p)
	if err != nil {
		return json.RawMessage(`"` + Redacted + `"`)
	}
	return red
}

// RedactMap returns a redacted copy of a decoded argument map; args is left
// as it was.
func RedactMap(args map[string]any) map[string]any { return (*Redactor)(nil).RedactMap(args) }

// RedactMap is the package's RedactMap with r's names and patterns added.
func (r *Redactor) RedactMap(args map[string]any) map[string]any {
	raw, err := json.Marshal(args)
	if err != nil {
		return map[string]any{"_": Redacted}
	}
	red, err := r.Redact(raw)
	if err != nil {
		return map[string]any{"_": Redacted}
	}
	var out map[string]any
	if err := json.Unmarshal(red, &out); err != nil {
		return map[string]any{"_": Redacted}
	}
	return out
}

// redactValue rewrites v in place (strings are replaced, so the caller
// stores the returned value) and reports whether anything changed.
func (r *Redactor) redactValue(v any) (any, bool) {
	changed := false
	switch t := v.(type) {
	case string:
		if red := r.RedactText(t); red != t {
			return red, true
		}
	case map[string]any:
		for k, child := range t {
			if r.IsSecretName(k) {
				if child != Redacted {
					t[k] = Redacted
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
