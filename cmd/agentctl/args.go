package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// argKey is the argument the client fills with the idempotency key.
const argKey = "idempotency_key"

// parseArguments builds the tool arguments from --args (a JSON object, or
// @FILE holding one) and NAME=VALUE words. A value that parses as JSON is
// that JSON (numbers, true, null, objects, "quoted strings"); anything else
// is a string, so payee=acme needs no quotes. NAME=VALUE words override keys
// of --args; the same NAME twice is an error.
func parseArguments(words []string, argsJSON string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	if argsJSON != "" {
		src := []byte(argsJSON)
		if name, ok := strings.CutPrefix(argsJSON, "@"); ok {
			b, err := os.ReadFile(name)
			if err != nil {
				return nil, exitf(exitUsage, "--args %s: %v; pass a JSON object or @FILE holding one", argsJSON, err)
			}
			src = b
		}
		if err := decodeObject(src, &out); err != nil {
			return nil, exitf(exitUsage, "--args: %v; want a JSON object such as '{\"amount_cents\":1250}'", err)
		}
	}
	seen := map[string]bool{}
	for _, w := range words {
		name, value, ok := strings.Cut(w, "=")
		if !ok || name == "" {
			return nil, exitf(exitUsage, "argument %q: want NAME=VALUE, such as amount_cents=1250 or payee=acme", w)
		}
		if seen[name] {
			return nil, exitf(exitUsage, "argument %s is given twice; give it once", name)
		}
		seen[name] = true
		out[name] = argValue(value)
	}
	if _, ok := out[argKey]; ok {
		return nil, exitf(exitUsage, "argument %s is filled from the operation's key; pass --key instead", argKey)
	}
	return out, nil
}

// argValue is v as JSON when it is one JSON value, else v as a JSON string.
func argValue(v string) json.RawMessage {
	trimmed := bytes.TrimSpace([]byte(v))
	if len(trimmed) > 0 && json.Valid(trimmed) {
		return json.RawMessage(trimmed)
	}
	b, err := json.Marshal(v)
	if err != nil {
		// A Go string always marshals; keep the value rather than panic.
		return json.RawMessage(`""`)
	}
	return b
}

// decodeObject decodes exactly one JSON object.
func decodeObject(src []byte, into *map[string]json.RawMessage) error {
	trimmed := bytes.TrimSpace(src)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if !json.Valid(trimmed) {
			return fmt.Errorf("invalid JSON")
		}
		return fmt.Errorf("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("invalid JSON: %v", err)
	}
	if dec.More() {
		return fmt.Errorf("invalid JSON: more than one value")
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
			return exitf(exitUsage, "%s has no argument %s; its arguments are: %s", tool.Name, strings.Join(unknown, ", "), knownText)
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
		return exitf(exitUsage, "%s needs %s; pass NAME=VALUE for each (its arguments are: %s)", tool.Name, strings.Join(missing, ", "), knownText)
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
