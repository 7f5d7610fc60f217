package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// argKey is the argument the client fills with the idempotency key.
const argKey = "idempotency_key"

// arguments are a call's arguments as the command line gave them: the
// --args object, and NAME=VALUE words whose values are typed only once the
// tool's input schema is known (see typed).
type arguments struct {
	base  map[string]json.RawMessage
	words []argWord
}

type argWord struct{ name, value string }

// parseArguments reads --args (a JSON object, or @FILE holding one) and
// NAME=VALUE words. A name given twice, as a word or inside --args, is an
// error; a word overrides a key of --args.
func parseArguments(words []string, argsJSON string) (*arguments, error) {
	a := &arguments{base: map[string]json.RawMessage{}}
	if argsJSON != "" {
		src := []byte(argsJSON)
		if name, ok := strings.CutPrefix(argsJSON, "@"); ok {
			b, err := os.ReadFile(name)
			if err != nil {
				return nil, exitf(exitUsage, "--args %s: %v; pass a JSON object or @FILE holding one", shorten(argsJSON, 60), err)
			}
			src = b
		}
		err := decodeObject(src, a.base)
		if dup, ok := errors.AsType[duplicateName](err); ok {
			return nil, reasonf(reasonInvalidArgument, "--args: %s is given twice; give each name once", shorten(string(dup), 60))
		}
		if err != nil {
			return nil, reasonf(reasonInvalidArgument, "--args: %v; want a JSON object such as '{\"amount_cents\":1250}'", err)
		}
	}
	seen := map[string]bool{}
	for _, w := range words {
		name, value, ok := strings.Cut(w, "=")
		if !ok || name == "" {
			return nil, exitf(exitUsage, "argument %s: want NAME=VALUE, such as amount_cents=1250 or payee=acme", shorten(w, 60))
		}
		if seen[name] {
			return nil, exitf(exitUsage, "argument %s is given twice; give it once", shorten(name, 60))
		}
		seen[name] = true
		a.words = append(a.words, argWord{name, value})
	}
	if _, ok := a.base[argKey]; ok || seen[argKey] {
		return nil, exitf(exitUsage, "argument %s is filled from the operation's key; pass --key instead", argKey)
	}
	return a, nil
}

// typed returns the arguments with each NAME=VALUE typed by the tool's
// input schema: a string property takes the value as it is (payee=1234 is
// the string "1234"), an integer, number, boolean, null, object or array
// property takes the value as that JSON. A value that fits none of its
// property's types is bad input, reported before anything is recorded. A
// property the schema gives no type takes the value as JSON when it is
// JSON, else as a string.
func (a *arguments) typed(tool *mcp.Tool) (map[string]json.RawMessage, error) {
	props := map[string]any{}
	if schema, ok := schemaObject(tool.InputSchema); ok {
		props, _ = schema["properties"].(map[string]any)
	}
	out := make(map[string]json.RawMessage, len(a.base)+len(a.words))
	for k, v := range a.base {
		out[k] = v
	}
	for _, w := range a.words {
		prop, _ := props[w.name].(map[string]any)
		v, err := typedValue(prop, w.value)
		if err != nil {
			return nil, reasonf(reasonInvalidArgument, "argument %s=%s: %s wants %v; nothing ran; pass a value of that type (see agentctl tools)",
				w.name, shorten(w.value, 40), tool.Name, err)
		}
		out[w.name] = v
	}
	return out, nil
}

// typedValue is v as the JSON value of a property with schema prop.
func typedValue(prop map[string]any, v string) (json.RawMessage, error) {
	types := schemaTypes(prop)
	if len(types) == 0 {
		return guessValue(v), nil
	}
	// Every JSON type but string first: a property of type
	// ["string","null"] takes null as null; a string is the last resort.
	for _, t := range []string{"integer", "number", "boolean", "null", "object", "array"} {
		if slices.Contains(types, t) && fits(t, v) {
			return json.RawMessage(strings.TrimSpace(v)), nil
		}
	}
	if slices.Contains(types, "string") {
		return jsonString(v), nil
	}
	words := make([]string, len(types))
	for i, t := range types {
		words[i] = typeWords[t]
		if words[i] == "" {
			words[i] = t
		}
	}
	return nil, errors.New(strings.Join(words, " or "))
}

// typeWords name the JSON Schema types in messages.
var typeWords = map[string]string{
	"integer": "an integer (such as 1250)",
	"number":  "a number (such as 12.5)",
	"boolean": "true or false",
	"null":    "null",
	"object":  "a JSON object (such as '{\"a\":1}')",
	"array":   "a JSON array (such as '[1,2]')",
	"string":  "a string",
}

// schemaTypes lists the JSON types a property admits: its "type" (one
// name or a list), else the types of its anyOf or oneOf branches.
func schemaTypes(prop map[string]any) []string {
	if prop == nil {
		return nil
	}
	var types []string
	add := func(t any) {
		switch t := t.(type) {
		case string:
			types = append(types, t)
		case []any:
			for _, x := range t {
				if s, ok := x.(string); ok {
					types = append(types, s)
				}
			}
		}
	}
	if t, ok := prop["type"]; ok {
		add(t)
		return types
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		branches, _ := prop[k].([]any)
		for _, b := range branches {
			if m, ok := b.(map[string]any); ok {
				t, ok := m["type"]
				if !ok {
					return nil // a branch of any type: no constraint to apply
				}
				add(t)
			}
		}
	}
	return types
}

// fits reports whether v is a JSON value of type t.
func fits(t, v string) bool {
	v = strings.TrimSpace(v)
	if !json.Valid([]byte(v)) {
		return false
	}
	switch t {
	case "integer":
		f, err := strconv.ParseFloat(v, 64)
		return err == nil && isNumber(v) && f == math.Trunc(f) && !math.IsInf(f, 0)
	case "number":
		return isNumber(v)
	case "boolean":
		return v == "true" || v == "false"
	case "null":
		return v == "null"
	case "object":
		return v[0] == '{'
	case "array":
		return v[0] == '['
	}
	return false
}

// isNumber reports whether v (valid JSON) is a number.
func isNumber(v string) bool {
	return v != "" && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9'))
}

// guessValue is v as JSON when it is one JSON value, else v as a JSON
// string: for properties whose schema names no type.
func guessValue(v string) json.RawMessage {
	trimmed := bytes.TrimSpace([]byte(v))
	if len(trimmed) > 0 && json.Valid(trimmed) {
		return json.RawMessage(trimmed)
	}
	return jsonString(v)
}

func jsonString(v string) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// A Go string always marshals; keep the value rather than panic.
		return json.RawMessage(`""`)
	}
	return b
}

// duplicateName is a name an --args object holds twice.
type duplicateName string

func (d duplicateName) Error() string { return fmt.Sprintf("%q is given twice", string(d)) }

// decodeObject decodes exactly one JSON object into into, refusing a name
// that appears twice: JSON decoders keep the last, silently.
func decodeObject(src []byte, into map[string]json.RawMessage) error {
	trimmed := bytes.TrimSpace(src)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if !json.Valid(trimmed) {
			return fmt.Errorf("invalid JSON")
		}
		return fmt.Errorf("not a JSON object")
	}
	if !json.Valid(trimmed) {
		var v any
		err := json.Unmarshal(trimmed, &v)
		return fmt.Errorf("invalid JSON: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil { // {
		return fmt.Errorf("invalid JSON: %v", err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("invalid JSON: %v", err)
		}
		name, _ := tok.(string)
		if _, dup := into[name]; dup {
			return duplicateName(name)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("invalid JSON: %v", err)
		}
		into[name] = v
	}
	return nil
}

// checkArguments compares the arguments with the tool's input schema: an
// unknown name (unless the schema allows additional properties) or a
// missing required one is bad input, reported before the ledger records
// anything. Types and values are left to the server, which knows them.
func checkArguments(tool *mcp.Tool, args map[string]json.RawMessage) error {
	schema, ok := schemaObject(tool.InputSchema)
	if !ok {
		return nil
	}
	props, _ := schema["properties"].(map[string]any)
	known := make([]string, 0, len(props))
	for name := range props {
		if name != argKey {
			known = append(known, name)
		}
	}
	slices.Sort(known)
	knownText := "none"
	if len(known) > 0 {
		knownText = strings.Join(known, ", ")
	}
	if !allowsAdditional(schema) {
		var unknown []string
		for name := range args {
			if _, ok := props[name]; !ok {
				unknown = append(unknown, name)
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			return reasonf(reasonInvalidArgument, "%s has no argument %s; its arguments are: %s", tool.Name, clip(strings.Join(unknown, ", "), 80), knownText)
		}
	}
	required, _ := schema["required"].([]any)
	var missing []string
	for _, r := range required {
		name, ok := r.(string)
		if !ok || name == argKey {
			continue
		}
		if _, ok := args[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return reasonf(reasonInvalidArgument, "%s needs %s; pass NAME=VALUE for each (its arguments are: %s)", tool.Name, strings.Join(missing, ", "), knownText)
	}
	return nil
}

// schemaObject returns the schema as a generic JSON object: the client side
// of go-sdk holds it as map[string]any, but a caller may hand any value that
// marshals to JSON.
func schemaObject(s any) (map[string]any, bool) {
	if m, ok := s.(map[string]any); ok {
		return m, true
	}
	if s == nil {
		return nil, false
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, false
	}
	return m, true
}

// allowsAdditional reports whether the schema explicitly admits names it
// does not list. JSON Schema's own default is to admit them, but a tool that
// lists its properties almost always means them all, and a mistyped name
// silently dropped by the server is worse than an error here.
func allowsAdditional(schema map[string]any) bool {
	switch v := schema["additionalProperties"].(type) {
	case bool:
		return v
	case map[string]any:
		return true
	}
	_, hasProps := schema["properties"]
	return !hasProps
}
