package args

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/gowebpki/jcs"
)

// FuzzCanonicalSorted checks the one-pass canonical form against jcs:
// whenever it answers, jcs accepts the document and gives the same bytes.
func FuzzCanonicalSorted(f *testing.F) {
	for _, seed := range []string{
		`{"amount":1,"id":"1234"}`, `{"amount":12.5,"id":"a"}`, ` { "a" : [ 1 , 2.0 , -0 , 1e3 ] } `,
		`{"a":{"b":{"c":[true,false,null]}}}`, `{"b":1,"a":2}`, `{"a":1,"a":2}`,
		`{"s":"caf\u00e9"}`, `{"s":"café"}`, `{"é":1}`, `{"n":123456789012345678}`,
		`{"n":0.1}`, `{"n":1E-7}`, `{"n":-12}`, `{"n":01}`, `{"n":1.}`, `{"x":tru}`,
		`[]`, `{}`, `"x"`, `12`, `{"a":"\t"}`, `{"a":"<&>"}`, `{"a":1e400}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, ok := canonicalSorted(doc)
		if !ok {
			return
		}
		want, err := jcs.Transform(doc)
		if err != nil {
			t.Fatalf("canonicalSorted(%q) = %s; jcs rejects the document: %v", doc, got, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("canonicalSorted(%q) = %s; jcs gives %s", doc, got, want)
		}
	})
}

// Marshalled Go maps, the usual arguments, take the one-pass form.
func TestCanonicalSortedTakesMarshalledMaps(t *testing.T) {
	for _, v := range []map[string]any{
		{"id": "1234", "amount": 1},
		{"to": "ann@example.com", "subject": "Hello", "cc": []any{"bo", "cy"}, "n": 12.5},
		{"nested": map[string]any{"z": true, "a": nil, "m": -3}},
	} {
		doc, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := canonicalSorted(doc)
		if !ok {
			t.Fatalf("canonicalSorted(%s) fell back to jcs", doc)
		}
		want, err := jcs.Transform(doc)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("canonicalSorted(%s) = %s; jcs gives %s, %v", doc, got, want, err)
		}
	}
}

func BenchmarkCanonicalSorted(b *testing.B) {
	doc := []byte(`{"amount":12.5,"currency":"EUR","id":"1234","to":"ann@example.com"}`)
	b.Run("one-pass", func(b *testing.B) {
		for range b.N {
			if _, err := Fingerprint(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jcs", func(b *testing.B) {
		for range b.N {
			if _, err := jcs.Transform(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
