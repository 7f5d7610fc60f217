package main

import (
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// A schema refusal reads as words, from the real validator's text.
func TestSchemaRefusalInWords(t *testing.T) {
	one, ten := 1.0, 10.0
	s := &jsonschema.Schema{Type: "object", Required: []string{"amount", "payee"}, Properties: map[string]*jsonschema.Schema{
		"amount": {Type: "integer", Minimum: &one, Maximum: &ten},
		"payee":  {Type: "string", MinLength: new(2)},
		"cur":    {Enum: []any{"EUR", "USD"}},
	}}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"amount": -5.0, "payee": "ab"}, "amount must be at least 1; got -5"},
		{map[string]any{"amount": 50.0, "payee": "ab"}, "amount must be at most 10; got 50"},
		{map[string]any{"amount": "x", "payee": "ab"}, `amount must be an integer; got x (string)`},
		{map[string]any{"amount": 1.5, "payee": "ab"}, `amount must be an integer; got 1.5 (number)`},
		{map[string]any{"amount": 1.0}, "missing the required argument payee"},
		{map[string]any{"amount": 1.0, "payee": "a"}, `payee must be at least 2 characters long; got "a" (1)`},
		{map[string]any{"amount": 1.0, "payee": "ab", "cur": "GBP"}, "cur must be one of EUR, USD; got GBP"},
	} {
		verr := r.Validate(tc.args)
		if verr == nil {
			t.Fatalf("Validate(%v) = nil; want a refusal", tc.args)
		}
		msg := "invalid params: " + verr.Error()
		if got, want := schemaWords(msg), "invalid params: "+tc.want; got != want {
			t.Errorf("schemaWords(%q) = %q; want %q", msg, got, want)
		}
	}
	if got := schemaWords("tool not found: pay"); got != "tool not found: pay" {
		t.Errorf("schemaWords of another error = %q; want it unchanged", got)
	}
}
