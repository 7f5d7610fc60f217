package redact

import (
	"encoding/json"
	"math/rand/v2"
	"regexp/syntax"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpledger/mcpledger/ledger/redact/internal/gitleaks"
)

// sample writes a string that re matches, choosing at random (from rng)
// among the characters a class allows, so that a secret has the entropy
// of a real one; alt picks which branch of each alternation to take.
func sample(re *syntax.Regexp, rng *rand.Rand, alt int) string {
	var b strings.Builder
	var walk func(re *syntax.Regexp)
	pick := func(class []rune) rune {
		// Prefer printable ASCII letters and digits: real tokens are
		// made of them, and they keep a sample readable.
		var total int
		for i := 0; i+1 < len(class); i += 2 {
			lo, hi := max(class[i], '0'), min(class[i+1], 'z')
			if lo <= hi {
				total += int(hi-lo) + 1
			}
		}
		if total == 0 {
			return class[0]
		}
		for try := 0; ; try++ {
			n := rng.IntN(total)
			for i := 0; i+1 < len(class); i += 2 {
				lo, hi := max(class[i], '0'), min(class[i+1], 'z')
				if lo > hi {
					continue
				}
				if n <= int(hi-lo) {
					if r := lo + rune(n); unicode.IsLetter(r) || unicode.IsDigit(r) || try > 20 {
						return r
					}
					break
				}
				n -= int(hi-lo) + 1
			}
		}
	}
	walk = func(re *syntax.Regexp) {
		switch re.Op {
		case syntax.OpLiteral:
			b.WriteString(string(re.Rune))
		case syntax.OpCharClass:
			b.WriteRune(pick(re.Rune))
		case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			b.WriteRune(pick([]rune{'0', '9', 'A', 'Z', 'a', 'z'}))
		case syntax.OpCapture:
			walk(re.Sub[0])
		case syntax.OpConcat:
			for _, s := range re.Sub {
				walk(s)
			}
		case syntax.OpAlternate:
			walk(re.Sub[alt%len(re.Sub)])
		case syntax.OpQuest, syntax.OpStar:
			// none
		case syntax.OpPlus:
			walk(re.Sub[0])
		case syntax.OpRepeat:
			for range re.Min {
				walk(re.Sub[0])
			}
		}
	}
	walk(re)
	return b.String()
}

// ruleSample is a text holding a secret that rule finds, and the secret:
// a generated one when a branch of the rule's expression gives one that the
// rule itself reports (its keywords, entropy and allowlists included).
func ruleSample(t *testing.T, table *gitleaks.Table, r *gitleaks.Rule) (text, secret string, ok bool) {
	t.Helper()
	parsed, err := syntax.Parse(r.Re.String(), syntax.Perl)
	if err != nil {
		t.Fatalf("rule %s: %v", r.ID, err)
	}
	parsed = parsed.Simplify()
	for attempt := range 40 {
		rng := rand.New(rand.NewPCG(uint64(attempt), 42))
		s := sample(parsed, rng, attempt%4)
		for _, wrap := range []string{"value " + s + " end", s, "x = \"" + s + "\"\n"} {
			for _, sp := range table.Find(wrap, strings.ToLower(wrap)) {
				if sp.Rule == r.ID {
					return wrap, wrap[sp.Start:sp.End], true
				}
			}
		}
	}
	return "", "", false
}

// Every rule of the table finds a sample of its own shape, and redaction
// removes the secret from it, in text and in stored arguments. A rule no
// generated sample satisfies is named (its expression needs a context the
// generator does not write), and there may be only a few.
func TestEveryRuleRedactsItsSample(t *testing.T) {
	table := fieldRules()
	if n := len(table.Rules); n < 200 {
		t.Fatalf("the table has %d rules; want gitleaks' (over 200)", n)
	}
	var missed []string
	for i := range table.Rules {
		r := &table.Rules[i]
		text, secret, ok := ruleSample(t, table, r)
		if !ok {
			hand, found := handSamples[r.ID]
			if !found {
				missed = append(missed, r.ID)
				continue
			}
			text, secret = hand[0], hand[1]
			if !findsIn(table, r.ID, text, secret) {
				t.Errorf("rule %s does not find %q in its hand-made sample %q", r.ID, secret, text)
			}
		}
		t.Run(r.ID, func(t *testing.T) {
			if got := Text(text); strings.Contains(got, secret) || !strings.Contains(got, Placeholder) {
				t.Errorf("Text(%q) = %q; want the secret %q replaced", text, got, secret)
			}
			args, err := json.Marshal(map[string]string{"note": text})
			if err != nil {
				t.Fatal(err)
			}
			stored, err := JSON(args)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(stored), secret) {
				t.Errorf("JSON(%s) = %s; want the secret %q replaced", args, stored, secret)
			}
		})
	}
	if len(missed) > 0 {
		t.Errorf("%d rules have no sample (write one into handSamples): %v", len(missed), missed)
	}
}

// handSamples are samples, made by hand, of the rules whose expression
// needs a context the generator does not write (a keyword outside the
// match, a literal '.' that the generator fills with any character, a
// document shape): rule id -> text, secret.
var handSamples = map[string][2]string{
	"airtable-personnal-access-token": {"airtable token patQ7wK2mX9vB4nR1." + hex64, "patQ7wK2mX9vB4nR1." + hex64},
	"facebook-access-token":           {"facebook 123456789012345|Qw8eR5tY2uI9oP3aS6dF1gH4jK7lZx", "123456789012345|Qw8eR5tY2uI9oP3aS6dF1gH4jK7lZx"},
	"kubernetes-secret-yaml":          {"kind: Secret\ndata:\n  password: c2VjcmV0LXZhbHVlLTEyMw==\n", "c2VjcmV0LXZhbHVlLTEyMw=="},
	"sidekiq-sensitive-url":           {"gem source https://1a2b3c4d:5e6f7a8b@gems.contribsys.com/ ok", "1a2b3c4d:5e6f7a8b"},
	"slack-config-access-token":       {"token xoxe.xoxb-1-" + strings.Repeat("Q7WK2MX9VB4NR1S", 11) + " end", "xoxe.xoxb-1-" + strings.Repeat("Q7WK2MX9VB4NR1S", 11)},
	"slack-webhook-url":               {"post to https://hooks.slack.com/workflows/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 now", "Q7wK2mX9vB4nR1sT6yU3iO8pA5dF0gH2jL4zX7cV9bN1m"},
}

const hex64 = "3f9a1c7e5b2d8f4a6c0e9b7d1f3a5c7e9b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a"

// findsIn reports whether rule id finds a secret in text that covers want.
func findsIn(table *gitleaks.Table, id, text, want string) bool {
	for _, sp := range table.Find(text, strings.ToLower(text)) {
		if sp.Rule == id && strings.Contains(text[sp.Start:sp.End], want) || sp.Rule == id && strings.Contains(want, text[sp.Start:sp.End]) {
			return true
		}
	}
	return false
}
