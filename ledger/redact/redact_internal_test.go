package redact

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzRedactShortcut checks that skipping the decode when no secret word
// can be spelled never changes what JSON returns: for every valid
// document, JSON and the full decode agree.
func FuzzRedactShortcut(f *testing.F) {
	for _, seed := range []string{
		`{"amount":1,"id":"1234"}`,
		`{"api_key":"k"}`, `{"API-Key":"k"}`, `{"apiKey":"k"}`, `{"a p i k e y":"k"}`,
		`{"nested":{"Pass_Word":"p"}}`, `[{"session-key":1}]`,
		`{"\u0074oken":"t"}`, `{"x":"my token"}`, `{"to":"ken"}`,
		`{"cookie":null,"other":[1,2,{"credentials":"c"}]}`,
		`"password"`, `12`, `{"privateKey":{"k":1}}`, `{"authorization":"Bearer x"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		trimmed := bytes.TrimSpace(doc)
		if len(trimmed) == 0 || !json.Valid(trimmed) {
			return
		}
		got, err := JSON(doc)
		if err != nil {
			t.Fatalf("JSON(%q) = %v", doc, err)
		}
		want, err := (*Redactor)(nil).redactDecoded(trimmed)
		if err != nil {
			t.Fatalf("redactDecoded(%q) = %v", doc, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("JSON(%q) = %s; the full decode gives %s", doc, got, want)
		}
	})
}

func TestMaySpellSecret(t *testing.T) {
	for doc, want := range map[string]bool{
		`{"amount":1,"id":"1234"}`: false,
		`{"API-Key":"k"}`:          true,
		`{"x":"Pass_Word"}`:        true, // a value: the shortcut only errs towards the full check
		`{"to":"ken"}`:             false,
		`{"a\"":1}`:                true, // any escape takes the full check
	} {
		if got := maySpellSecret([]byte(doc)); got != want {
			t.Errorf("maySpellSecret(%s) = %v; want %v", doc, got, want)
		}
	}
}
