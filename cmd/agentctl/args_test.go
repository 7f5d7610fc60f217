package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestParseArguments(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "args.json")
	if err := os.WriteFile(file, []byte(`{"memo": "from a file"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	schema := &mcp.Tool{Name: "t", InputSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"payee":        map[string]any{"type": "string"},
			"currency":     map[string]any{"type": "string"},
			"zip":          map[string]any{"type": "string"},
			"amount_cents": map[string]any{"type": "integer"},
			"rate":         map[string]any{"type": "number"},
			"ok":           map[string]any{"type": "boolean"},
			"note":         map[string]any{"type": []any{"string", "null"}},
			"obj":          map[string]any{"type": "object"},
			"list":         map[string]any{"type": "array"},
			"either":       map[string]any{"anyOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}},
			"untyped":      map[string]any{},
		},
	}}
	tests := []struct {
		name  string
		tool  *mcp.Tool
		words []string
		args  string
		want  string // canonical JSON of the arguments
	}{
		{"strings need no quotes", schema, []string{"payee=acme", "currency=EUR"}, "", `{"currency":"EUR","payee":"acme"}`},
		{"a string field keeps digits a string", schema, []string{"payee=1234", "zip=01234"}, "", `{"payee":"1234","zip":"01234"}`},
		{"a string field keeps null and quotes a string", schema, []string{"payee=null", `currency="EUR"`}, "", `{"currency":"\"EUR\"","payee":"null"}`},
		{"typed values", schema, []string{"amount_cents=1250", "ok=true", `obj={"a":[1,2]}`, "rate=1.50", "list=[1]"}, "",
			`{"amount_cents":1250,"list":[1],"obj":{"a":[1,2]},"ok":true,"rate":1.50}`},
		{"an integral number is an integer", schema, []string{"amount_cents=1e3"}, "", `{"amount_cents":1e3}`},
		{"string or null takes null", schema, []string{"note=null"}, "", `{"note":null}`},
		{"string or null takes text", schema, []string{"note=hello"}, "", `{"note":"hello"}`},
		{"anyOf integer or string", schema, []string{"either=7"}, "", `{"either":7}`},
		{"anyOf falls back to string", schema, []string{"either=seven"}, "", `{"either":"seven"}`},
		{"untyped guesses", schema, []string{"untyped=12", "unknown=x"}, "", `{"unknown":"x","untyped":12}`},
		{"no schema guesses", &mcp.Tool{Name: "x"}, []string{"n=1250", "none=null", "s={oops", "e="}, "", `{"e":"","n":1250,"none":null,"s":"{oops"}`},
		{"equals in the value", schema, []string{"payee=a=b"}, "", `{"payee":"a=b"}`},
		{"--args merged, words win", schema, []string{"amount_cents=2"}, `{"amount_cents":1,"payee":"x"}`, `{"amount_cents":2,"payee":"x"}`},
		{"--args keeps its JSON types", schema, nil, `{"payee":1234}`, `{"payee":1234}`},
		{"--args from a file", schema, nil, "@" + file, `{"memo":"from a file"}`},
		{"nothing", schema, nil, "", `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := parseArguments(tc.words, tc.args)
			if err != nil {
				t.Fatalf("parseArguments(%q, %q) = %v", tc.words, tc.args, err)
			}
			got, err := a.typed(tc.tool)
			if err != nil {
				t.Fatalf("typed(%q, %q) = %v", tc.words, tc.args, err)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("typed(%q, %q) = %s; want %s", tc.words, tc.args, b, tc.want)
			}
		})
	}

	misfits := []struct {
		word, hint string
	}{
		{"amount_cents=12.5", "an integer"},
		{"amount_cents=abc", "an integer"},
		{"rate=fast", "a number"},
		{"ok=yes", "true or false"},
		{"obj=[1]", "a JSON object"},
		{"list={}", "a JSON array"},
	}
	for _, tc := range misfits {
		t.Run("misfit "+tc.word, func(t *testing.T) {
			a, err := parseArguments([]string{tc.word}, "")
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.typed(schema)
			if e, ok := errors.AsType[*exitError](err); !ok || e.code() != exitUsage || !strings.Contains(err.Error(), tc.hint) {
				t.Errorf("typed(%q) = %v; want exit %d mentioning %q", tc.word, err, exitUsage, tc.hint)
			}
		})
	}

	bad := []struct {
		name  string
		words []string
		args  string
		hint  string
	}{
		{"no equals", []string{"payee"}, "", "NAME=VALUE"},
		{"empty name", []string{"=3"}, "", "NAME=VALUE"},
		{"twice", []string{"a=1", "a=2"}, "", "given twice"},
		{"invalid json", nil, `{"a":`, "invalid JSON"},
		{"not an object", nil, `[1,2]`, "not a JSON object"},
		{"two values", nil, `{} {}`, "invalid JSON"},
		{"a name twice in --args", nil, `{"payee":"a","amount_cents":1,"payee":"b"}`, `"payee" is given twice; give each name once`},
		{"missing file", nil, "@" + filepath.Join(dir, "nope.json"), "@FILE"},
		{"the key argument", []string{"idempotency_key=k"}, "", "--key"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseArguments(tc.words, tc.args)
			if e, ok := errors.AsType[*exitError](err); !ok || e.code() != exitUsage || !strings.Contains(err.Error(), tc.hint) {
				t.Errorf("parseArguments(%q, %q) = %v; want exit %d mentioning %q", tc.words, tc.args, err, exitUsage, tc.hint)
			}
		})
	}
}

func TestCheckArguments(t *testing.T) {
	pay := &mcp.Tool{Name: "create_payment", InputSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"amount_cents": map[string]any{"type": "integer"}, "payee": map[string]any{"type": "string"},
			"memo": map[string]any{"type": "string"}, "idempotency_key": map[string]any{"type": "string"},
		},
		"required":             []any{"amount_cents", "payee", "idempotency_key"},
		"additionalProperties": false,
	}}
	open := &mcp.Tool{Name: "note", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"text": map[string]any{}}, "additionalProperties": true,
	}}
	tests := []struct {
		name string
		tool *mcp.Tool
		args string
		hint string // "" means valid
	}{
		{"valid", pay, `{"amount_cents":1,"payee":"a"}`, ""},
		{"unknown name", pay, `{"amount_cents":1,"payee":"a","amount":1}`, "has no argument amount; its arguments are: amount_cents, memo, payee"},
		{"missing required", pay, `{"payee":"a"}`, "needs amount_cents"},
		{"additional allowed", open, `{"text":"x","extra":1}`, ""},
		{"no schema", &mcp.Tool{Name: "x"}, `{"a":1}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var args map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tc.args), &args); err != nil {
				t.Fatal(err)
			}
			err := checkArguments(tc.tool, args)
			if tc.hint == "" {
				if err != nil {
					t.Errorf("checkArguments(%s, %s) = %v; want nil", tc.tool.Name, tc.args, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.hint) {
				t.Errorf("checkArguments(%s, %s) = %v; want an error mentioning %q", tc.tool.Name, tc.args, err, tc.hint)
			}
		})
	}
}
