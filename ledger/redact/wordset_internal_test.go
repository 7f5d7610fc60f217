package redact

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// A wordSet finds a word exactly when a search for each word would: at
// the start, the end, overlapping a near miss, and in random texts made
// of the words' own bytes, where near misses are the rule.
func TestWordSetIsPerWordSearch(t *testing.T) {
	lists := [][]string{secretWords, secretNameWords, ruleTriggers()}
	var all []string
	for _, l := range lists {
		all = append(all, l...)
	}
	s := newWordSet(lists...)
	naive := func(text []byte) bool {
		for _, w := range all {
			if bytes.Contains(text, []byte(w)) {
				return true
			}
		}
		return false
	}
	texts := [][]byte{nil, []byte("x"), []byte("tokenx"), []byte("xtoken"), []byte("toke"), []byte("passwor"),
		[]byte("sk"), []byte("a sk-"), []byte("hooks.slack.co"), []byte("ppassword"), []byte("eyeyj")}
	alphabet := []byte("pastwordkenyjhx-_:/.")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		texts = append(texts, b)
	}
	found := 0
	for _, text := range texts {
		got, want := s.in(text), naive(text)
		if got != want {
			t.Fatalf("wordSet.in(%q) = %v; a search for each word says %v", text, got, want)
		}
		if got {
			found++
		}
	}
	if found == 0 || found == len(texts) {
		t.Fatalf("%d of %d texts hold a word: the texts do not tell a wordSet from a constant", found, len(texts))
	}
}
