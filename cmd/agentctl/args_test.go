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
	tests := []struct {
		name  string
		words []string
		args  string
		want  string // canonical JSON of the arguments
	}{
		{"strings need no quotes", []string{"payee=acme", "currency=EUR"}, "", `{"currency":"EUR","payee":"acme"}`},
		{"json values", []string{"n=1250", "ok=true", "none=null", `obj={"a":[1,2]}`, "f=1.50"}, "",
			`{"f":1.50,"n":1250,"none":null,"obj":{"a":[1,2]},"ok":true}`},
		{"quoted json string", []string{`zip="01234"`}, "", `{"zip":"01234"}`},
		{"not json stays a string", []string{"zip=01234", "s={oops", "e="}, "", `{"e":"","s":"{oops","zip":"01234"}`},
		{"equals in the value", []string{"q=a=b"}, "", `{"q":"a=b"}`},
		{"--args merged, words win", []string{"amount_cents=2"}, `{"amount_cents":1,"payee":"x"}`, `{"amount_cents":2,"payee":"x"}`},
		{"--args from a file", nil, "@" + file, `{"memo":"from a file"}`},
		{"nothing", nil, "", `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseArguments(tc.words, tc.args)
			if err != nil {
				t.Fatalf("parseArguments(%q, %q) = %v", tc.words, tc.args, err)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("parseArguments(%q, %q) = %s; want %s", tc.words, tc.args, b, tc.want)
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
		{"two values", nil, `{} {}`, "more than one value"},
		{"missing file", nil, "@" + filepath.Join(dir, "nope.json"), "@FILE"},
		{"the key argument", []string{"idempotency_key=k"}, "", "--key"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseArguments(tc.words, tc.args)
			if e, ok := errors.AsType[*exitError](err); !ok || e.code != exitUsage || !strings.Contains(err.Error(), tc.hint) {
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
