package args_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/internal/errs"

	"github.com/mcpledger/mcpledger/ledger/args"
)

func TestDecodeRefusesDuplicateNames(t *testing.T) {
	for _, tc := range []struct{ doc, name string }{
		{`{"amount_cents":1,"currency":"EUR","payee":"x","amount_cents":5000}`, "amount_cents"},
		{`{"a":{"b":1,"b":2}}`, "b"},
		{`{"a":[{"c":1},{"c":1,"c":1}]}`, "c"},
		{`{"a":1,"\u0061":2}`, "a"},
		{`{"idempotency_key":"k1","idempotency_key":"k2"}`, "idempotency_key"},
		{`{"_meta":{"x":1,"x":2}}`, "x"},
		{`{"a0":0,"a1":1,"a2":2,"a3":3,"a4":4,"a5":5,"a6":6,"a7":7,"a8":8,"a9":9,"b0":0,"b1":1,"b2":2,"b3":3,"b4":4,"b5":5,"b6":6,"b7":7,"a3":3}`, "a3"},
	} {
		t.Run(tc.doc, func(t *testing.T) {
			_, err := args.Decode([]byte(tc.doc))
			dup, ok := errs.AsType[*args.DuplicateNameError](err)
			if !ok || dup.Name != tc.name || !errors.Is(err, args.ErrInvalid) {
				t.Fatalf("Decode(%s) = %v; want a duplicate %q (ErrInvalid)", tc.doc, err, tc.name)
			}
			if !strings.Contains(err.Error(), `"`+tc.name+`"`) || strings.Contains(err.Error(), "\n") {
				t.Errorf("message %q; want one line naming %q", err, tc.name)
			}
			_, err = args.Fingerprint([]byte(tc.doc))
			if dup, ok := errs.AsType[*args.DuplicateNameError](err); !ok || dup.Name != tc.name {
				t.Errorf("Fingerprint(%s) = %v; want the same duplicate %q", tc.doc, err, tc.name)
			}
		})
	}
}

func TestDecodeRefusesWhatTheFingerprintRefuses(t *testing.T) {
	for _, doc := range []string{`[1]`, `"x"`, `{"a":"\ud800"}`, `{"\udc00":1}`, "{\"a\":\"\xff\"}", `{"a":`, `{"a":1e400}`} {
		if _, err := args.Decode([]byte(doc)); !errors.Is(err, args.ErrInvalid) {
			t.Errorf("Decode(%q) = %v; want ErrInvalid", doc, err)
		}
	}
	for _, doc := range []string{``, `null`, ` {} `, `{"a":"\ud83d\ude00","b":[{"a":1},{"a":2}]}`} {
		if _, err := args.Decode([]byte(doc)); err != nil {
			t.Errorf("Decode(%q) = %v; want it accepted", doc, err)
		}
	}
}

// FuzzDecode: the arguments decoder never panics, refuses every
// document that gives a name twice in one object (found here by an
// independent reader, encoding/json's tokenizer), and what it accepts the
// fingerprint accepts, with the same fingerprint once decoded and
// marshalled again.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"amount_cents":1,"currency":"EUR","payee":"x","amount_cents":5000}`,
		`{"a":{"b":1,"b":2}}`, `{"a":1,"\u0061":2}`, `{"a":[{"c":1},{"c":2}]}`,
		`{"s":"caf\u00e9","n":1.0,"m":1e0}`, `{"a":"\ud83d\ude00"}`, `{"a":"\ud800"}`,
		`{"_meta":{"k":1},"idempotency_key":"k","x":null}`, `{}`, `null`, `[]`, `{"a":`,
		`{"\u00e9":1,"é":2}`, `{"a":"\\u0061","\\u0061":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		_ = args.CheckNames(doc) // never panics, whatever the bytes
		m, err := args.Decode(doc)
		if hasDuplicateName(doc) && err == nil {
			t.Fatalf("Decode(%q) accepted a name given twice: %v", doc, m)
		}
		if err != nil {
			if !errors.Is(err, args.ErrInvalid) {
				t.Fatalf("Decode(%q) = %v; want an error wrapping ErrInvalid", doc, err)
			}
			return
		}
		want, err := args.Fingerprint(doc)
		if err != nil {
			t.Fatalf("Decode(%q) accepted what Fingerprint refuses: %v", doc, err)
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("marshalling %v: %v", m, err)
		}
		got, err := args.Fingerprint(again)
		if err != nil || got != want {
			t.Fatalf("Fingerprint(%q) = %s; after decoding, Fingerprint(%s) = %s, %v", doc, want, again, got, err)
		}
	})
}

// hasDuplicateName reports whether doc, read by encoding/json's tokenizer,
// gives one name twice in an object; false for a document it cannot read.
func hasDuplicateName(doc []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(doc))
	type frame struct {
		names  map[string]bool
		object bool
		expect bool // the next token in this object is a name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expect {
			if name, ok := tok.(string); ok {
				if top.names[name] {
					return true
				}
				top.names[name] = true
				top.expect = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{names: map[string]bool{}, object: true, expect: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: the enclosing object's next token is a name.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].expect = true
		}
	}
}

// The server guards decode every call's arguments: the duplicate-name
// check is one pass over the bytes beside encoding/json's decoding.
func BenchmarkDecode(b *testing.B) {
	doc := []byte(`{"amount_cents":1250,"currency":"EUR","payee":"acme","memo":"invoice 2026-113","idempotency_key":"order-7","lines":[{"sku":"a-1","qty":2},{"sku":"b-2","qty":1}]}`)
	b.Run("Decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := args.Decode(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CheckNames", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := args.CheckNames(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]any
			if err := json.Unmarshal(doc, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
