package redact

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger/redact/internal/gitleaks"
)

// The cost of redaction with gitleaks' table against the hand-written one
// it replaced, on the same inputs in the same run: a call's arguments with
// nothing secret, the same with a secret field and an API key in a note,
// and a line of free text with three secrets.

var (
	benchClean  = []byte(`{"customer":"cus_123","amount":4200,"currency":"EUR","lines":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}],"note":"München order"}`)
	benchSecret = []byte(`{"customer":"cus_123","amount":4200,"currency":"EUR","lines":[{"sku":"A-1","qty":2}],"note":"paid with key sk_live_51H8xQ2Lk9Zp3Rt7Vb","api_key":"sk_live_x"}`)
	benchText   = "order 42 for ann, ship by friday; password=hunter2 api_key=sk-live-4eC39HqLyjWDarjtT1zdp7dc Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig"
)

type tables struct {
	rules []valueRule
	table *gitleaks.Table
}

func benchTables() map[string]tables {
	return map[string]tables{
		"legacy":   {legacyRules(), nil},
		"gitleaks": {valueRules, fieldRules()},
	}
}

// redactWith is JSON with the given tables.
func redactWith(doc []byte, tb tables) (json.RawMessage, error) {
	if !maySpellWith(doc, tb) {
		if !json.Valid(doc) {
			return nil, errBench
		}
		return doc, nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	v, _ = walkWith(v, tb)
	return json.Marshal(v)
}

var errBench = json.Unmarshal([]byte("x"), new(any))

func maySpellWith(doc []byte, tb tables) bool {
	folded := fold(nil, doc)
	for _, w := range append(append([]string{}, secretWords...), secretNameWords...) {
		if bytes.Contains(folded, []byte(w)) {
			return true
		}
	}
	lower := bytes.ToLower(doc)
	for i := range tb.rules {
		for _, t := range tb.rules[i].triggers {
			if bytes.Contains(lower, []byte(t)) {
				return true
			}
		}
	}
	return tb.table != nil && tb.table.MayHold(string(lower))
}

func walkWith(v any, tb tables) (any, bool) {
	var r *Redactor
	switch t := v.(type) {
	case string:
		return r.redactText(t, tb.rules, tb.table), true
	case map[string]any:
		for k, c := range t {
			if r.IsSecretName(k) {
				t[k] = Placeholder
				continue
			}
			t[k], _ = walkWith(c, tb)
		}
	case []any:
		for i, c := range t {
			t[i], _ = walkWith(c, tb)
		}
	}
	return v, true
}

func BenchmarkRedactTables(b *testing.B) {
	for _, name := range []string{"legacy", "gitleaks"} {
		tb := benchTables()[name]
		b.Run(name+"/clean-args", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := redactWith(benchClean, tb); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/secret-args", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := redactWith(benchSecret, tb); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/text", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				(*Redactor)(nil).redactText(benchText, tb.rules, tb.table)
			}
		})
	}
}

// The benchmark's own JSON agrees with the package's, so it measures
// what calls pay.
func TestRedactWithMatchesRedact(t *testing.T) {
	for _, doc := range [][]byte{benchClean, benchSecret} {
		got, err := redactWith(doc, benchTables()["gitleaks"])
		if err != nil {
			t.Fatal(err)
		}
		want, err := JSON(doc)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		json.Unmarshal(got, &g)
		json.Unmarshal(want, &w)
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if string(gb) != string(wb) {
			t.Errorf("redactWith(%s) = %s; JSON = %s", doc, gb, wb)
		}
	}
	if got := (*Redactor)(nil).redactText(benchText, valueRules, fieldRules()); got != Text(benchText) || strings.Contains(got, "hunter2") {
		t.Errorf("redactText = %q; Text = %q", got, Text(benchText))
	}
}
