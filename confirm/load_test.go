package confirm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const samplePolicy = `{
  "version": 1,
  "trusted": ["payments"],
  "rules": [
    {"tool": "create_payment", "server": "payments", "action": "ask",
     "note": "money leaves the account"},
    {"tool": "get_*", "action": "allow"},
    {"tool": "*", "server": "prod", "when": {"destructive": true}, "action": "deny"}
  ]
}`

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(path, []byte(samplePolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%q) = %v; want a policy", path, err)
	}
	if want := 3 + len(Default().Rules); len(p.Rules) != want {
		t.Errorf("Load(%q) has %d rules; want the file's 3 and the %d defaults", path, len(p.Rules), len(Default().Rules))
	}
	tests := []struct {
		name string
		tool Tool
		want Verdict
	}{
		{"file rule", Tool{Name: "create_payment", Server: "payments"}, Ask},
		{"file allow", Tool{Name: "get_secret"}, Allow},
		{"file deny", Tool{Name: "reset", Server: "prod", Hints: &Hints{}}, Deny},
		{"defaults still apply after the file's rules", Tool{Name: "refund_order", Server: "shop"}, Ask},
		{"trusted list honoured", Tool{Name: "delete_preview", Server: "payments", Hints: &Hints{ReadOnly: ptr(true)}}, Allow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Decide(tc.tool); got != tc.want {
				t.Errorf("Decide(%+v) = %v; want %v", tc.tool, got, tc.want)
			}
		})
	}
	_, why := p.Explain(Tool{Name: "create_payment", Server: "payments"})
	if !strings.Contains(why, path+" rule 1") || !strings.Contains(why, "money leaves the account") {
		t.Errorf("Explain(create_payment) = %q; want it to name %s rule 1 and its note", why, path)
	}
}

func TestParseNoDefaults(t *testing.T) {
	p, err := Parse([]byte(`{"defaults": false, "rules": [{"tool": "get_*", "action": "allow"}]}`))
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	if got := p.Decide(Tool{Name: "list_things"}); got != Ask {
		t.Errorf("Decide(list_things) = %v; want ask (no defaults, no rule matched)", got)
	}
	if got := p.Decide(Tool{Name: "get_thing"}); got != Allow {
		t.Errorf("Decide(get_thing) = %v; want allow", got)
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.json")
	_, err := Load(path)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("Load(%q) = %v; want a not-exist error naming the file", path, err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		// want is the error text after "confirm: FILE:".
		want string
	}{
		{"empty", ``, `1:1: empty file`},
		{"not an object", `[]`, `1:1: want an object, got an array`},
		{"syntax", "{\n  \"rules\": [\n    {\"tool\": \"x\", \"action\": allow}\n  ]\n}", `3:29: invalid JSON: invalid character 'a'`},
		{"truncated", `{"rules": [`, `1:12: unexpected end of file`},
		{"trailing data", `{} {}`, `1:4: unexpected data after the policy object`},
		{"unknown top field", `{"rule": []}`, `1:2: rule: unknown field "rule" (want one of version, trusted, rules, defaults, whenNoOneCanBeAsked, distinctApprover, approvalExpiry, reconcile)`},
		{"unknown rule field", "{\"rules\": [\n {\"tool\": \"x\", \"action\": \"ask\", \"severity\": 1}]}", `2:33: rules[0].severity: unknown field "severity"`},
		{"unknown condition", `{"rules": [{"tool": "x", "action": "ask", "when": {"readonly": true}}]}`, `rules[0].when.readonly: unknown field "readonly"`},
		{"duplicate action", `{"rules": [{"tool": "x", "action": "deny", "action": "allow"}]}`, `1:44: rules[0].action: duplicate field`},
		{"bad action", `{"rules": [{"tool": "x", "action": "alow"}]}`, `1:36: rules[0].action: "alow" is not allow, ask, queue or deny`},
		{"missing action", `{"rules": [{"tool": "x"}]}`, `1:12: rules[0]: missing "action"`},
		{"missing tool", `{"rules": [{"action": "ask"}]}`, `rules[0]: missing "tool"`},
		{"empty tool", `{"rules": [{"tool": " ", "action": "ask"}]}`, `rules[0].tool: empty glob`},
		{"tool not a string", `{"rules": [{"tool": 3, "action": "ask"}]}`, `rules[0].tool: want a string, got a number`},
		{"condition not a bool", `{"rules": [{"tool": "x", "action": "ask", "when": {"destructive": "yes"}}]}`, `rules[0].when.destructive: want true or false, got a string`},
		{"empty when", `{"rules": [{"tool": "x", "action": "allow", "when": {}}]}`, `rules[0].when: empty`},
		{"rules not a list", `{"rules": {}}`, `rules: want an array, got an object`},
		{"trusted entry", `{"trusted": ["ok", null]}`, `trusted[1]: want a string, got null`},
		{"version", `{"version": 2}`, `version: unsupported version`},
		{"defaults type", `{"defaults": "no"}`, `defaults: want true or false`},
		{"deep", strings.Repeat("[", 40) + strings.Repeat("]", 40), `nested too deeply`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse([]byte(tc.in))
			if err == nil {
				t.Fatalf("Parse(%q) = %d rules, nil; want an error containing %q", tc.in, len(p.Rules), tc.want)
			}
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Errorf("Parse(%q) = %v; want errors.Is ErrInvalidPolicy", tc.in, err)
			}
			if !strings.HasPrefix(err.Error(), "confirm: policy:") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse(%q) = %q; want it to contain %q", tc.in, err, tc.want)
			}
		})
	}
}

func TestLoadErrorNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(path, []byte("{\n  \"rules\": [{\"tool\": \"*\", \"action\": \"allow\", \"when\": {\"readOnly\": 1}}]\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	want := "confirm: " + path + ":2:67: rules[0].when.readOnly: want true or false, got a number"
	if err == nil || err.Error() != want {
		t.Errorf("Load(bad.json) = %v; want %q", err, want)
	}
	var pe *PolicyError
	if !errors.As(err, &pe) || pe.Line != 2 || pe.Field != "rules[0].when.readOnly" {
		t.Errorf("Load(bad.json) = %#v; want a *PolicyError at line 2 for rules[0].when.readOnly", err)
	}
}

// FuzzParse: no input panics; every failure is ErrInvalidPolicy; every
// policy that loads can decide.
func FuzzParse(f *testing.F) {
	f.Add([]byte(samplePolicy))
	f.Add([]byte(`{"defaults": false, "rules": [{"tool": "*", "action": "deny", "when": {"annotated": false}}]}`))
	f.Add([]byte(`{"rules": [{"tool": "x", "action": "deny", "action": "allow"}]}`))
	f.Add([]byte(`{"trusted": ["a|b"], "version": 1.0}`))
	f.Add([]byte(`{"reconcile": [{"tool": "t", "probe": "p", "arguments": {"k": "{{.Key}}", "a": ["{{.Arguments.x}}", 1]}, "found": "structured?.ok == true", "quiet": "1s"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("Parse(%q) = %v; want ErrInvalidPolicy", data, err)
			}
			return
		}
		for _, r := range p.Rules {
			if !r.Action.Valid() || r.Tool == "" {
				t.Fatalf("Parse(%q) kept rule %+v", data, r)
			}
		}
		p.Decide(Tool{Name: "create_payment", Server: "payments", Hints: &Hints{ReadOnly: ptr(true)}})
	})
}
