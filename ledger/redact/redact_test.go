package redact_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/redact"
)

func TestIsSecretName(t *testing.T) {
	cases := []struct {
		name string
		want bool
	}{
		{"password", true}, {"Password", true}, {"PASSWORD", true}, {"db_password", true},
		{"passwd", true}, {"client_secret", true}, {"API_KEY", true}, {"apiKey", true},
		{"api-key", true}, {"Api Key", true}, {"Authorization", true}, {"cookie", true},
		{"Set-Cookie", true}, {"x-auth-token", true}, {"refresh_token", true},
		{"credentials", true}, {"private_key", true}, {"session-key", true},
		{"name", false}, {"author", false}, {"amount", false}, {"keyboard", false},
		{"passage", false}, {"to", false}, {"key", false}, {"", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := redact.IsSecretName(tc.name); got != tc.want {
				t.Fatalf("IsSecretName(%q) = %v; want %v", tc.name, got, tc.want)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want string // compared as decoded JSON, except where numbers matter
	}{
		{
			name: "top level",
			in:   `{"user":"ann","Password":"hunter2"}`,
			want: `{"user":"ann","Password":"[REDACTED]"}`,
		},
		{
			name: "each spelling",
			in:   `{"API_KEY":"a","apiKey":"b","Authorization":"Bearer c","cookie":"d","x-auth-token":"e","to":"bob"}`,
			want: `{"API_KEY":"[REDACTED]","apiKey":"[REDACTED]","Authorization":"[REDACTED]","cookie":"[REDACTED]","x-auth-token":"[REDACTED]","to":"bob"}`,
		},
		{
			name: "nested object",
			in:   `{"conn":{"host":"db","login":{"password":"p","user":"u"}}}`,
			want: `{"conn":{"host":"db","login":{"password":"[REDACTED]","user":"u"}}}`,
		},
		{
			name: "objects inside arrays",
			in:   `{"headers":[{"name":"Accept","value":"*/*"},{"Authorization":"Bearer x"}],"list":[[{"token":1}]]}`,
			want: `{"headers":[{"name":"Accept","value":"*/*"},{"Authorization":"[REDACTED]"}],"list":[[{"token":"[REDACTED]"}]]}`,
		},
		{
			name: "secret holding an object",
			in:   `{"credentials":{"user":"u","pass":"p"},"n":1}`,
			want: `{"credentials":"[REDACTED]","n":1}`,
		},
		{
			name: "top-level array",
			in:   `[{"secret":"s"},"secret",{"keep":"secret"}]`,
			want: `[{"secret":"[REDACTED]"},"secret",{"keep":"secret"}]`,
		},
		{
			name: "nothing secret",
			in:   `{"to":"bob","amount":100,"items":[{"sku":"A-1"}]}`,
			want: `{"to":"bob","amount":100,"items":[{"sku":"A-1"}]}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := redact.JSON(json.RawMessage(tc.in))
			if err != nil {
				t.Fatalf("Redact(%s) = %v", tc.in, err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("Redact(%s) = %s, not JSON: %v", tc.in, got, err)
			}
			if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("Redact(%s) = %s; want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestRedactKeepsNumberSpelling(t *testing.T) {
	in := `{"token":"t","amount":1.50,"big":123456789012345678901234567890,"exp":1e+30,"neg":-0.0}`
	got, err := redact.JSON(json.RawMessage(in))
	if err != nil {
		t.Fatalf("Redact(%s) = %v", in, err)
	}
	for _, spelling := range []string{`1.50`, `123456789012345678901234567890`, `1e+30`, `-0.0`} {
		if !strings.Contains(string(got), spelling) {
			t.Errorf("Redact(%s) = %s; want number %s spelled as given", in, got, spelling)
		}
	}
}

func TestRedactUnchangedIsIdentical(t *testing.T) {
	in := ` {"b":1.0, "a":[2]} `
	got, err := redact.JSON(json.RawMessage(in))
	if err != nil {
		t.Fatalf("Redact(%q) = %v", in, err)
	}
	if want := strings.TrimSpace(in); string(got) != want {
		t.Fatalf("Redact(%q) = %q; want the input as given, %q", in, got, want)
	}
}

func TestRedactRejects(t *testing.T) {
	for _, in := range []string{`{"a":`, `{} {}`, `nope`} {
		if got, err := redact.JSON(json.RawMessage(in)); err == nil {
			t.Errorf("Redact(%q) = %s, nil; want an error", in, got)
		}
	}
	if got, err := redact.JSON(nil); err != nil || got != nil {
		t.Errorf("Redact(nil) = %s, %v; want nil, nil", got, err)
	}
}

func TestFingerprintOfRedactedDiffers(t *testing.T) {
	// Stores keep redacted arguments but fingerprint the real ones, so two
	// calls that differ only in a secret are still different operations.
	real1 := json.RawMessage(`{"url":"https://api","api_key":"k-1"}`)
	real2 := json.RawMessage(`{"url":"https://api","api_key":"k-2"}`)
	red, err := redact.JSON(real1)
	if err != nil {
		t.Fatal(err)
	}
	f1, _ := args.Fingerprint(real1)
	f2, _ := args.Fingerprint(real2)
	fr, _ := args.Fingerprint(red)
	if f1 == fr {
		t.Errorf("Fingerprint(%s) = Fingerprint(%s) = %s; want them to differ", real1, red, f1)
	}
	if f1 == f2 {
		t.Errorf("Fingerprint(%s) = Fingerprint(%s); want them to differ", real1, real2)
	}
	if strings.Contains(string(red), "k-1") {
		t.Errorf("Redact(%s) = %s; the key leaked", real1, red)
	}
}

func TestRedactMap(t *testing.T) {
	in := map[string]any{"to": "bob", "login": map[string]any{"Password": "p"}, "n": 2.5}
	got := redact.Map(in)
	want := map[string]any{"to": "bob", "login": map[string]any{"Password": redact.Placeholder}, "n": 2.5}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("RedactMap(%v) = %v; want %v", in, got, want)
	}
	if in["login"].(map[string]any)["Password"] != "p" {
		t.Fatalf("RedactMap changed its input: %v", in)
	}
}

// A path whose last element is a secret-looking name ("/etc/passwd") is
// not a name=value pair: the error text after it stays, in text and in
// stored arguments; a real pair is still redacted.
func TestRedactLeavesPathsWhole(t *testing.T) {
	for _, s := range []string{
		"cannot open the ledger /etc/passwd: sqlite: /etc/passwd is not a SQLite database",
		`open C:\run\secrets\api_key: access denied`,
		"read /run/secrets/db_password: permission denied",
	} {
		if got := redact.Text(s); got != s {
			t.Errorf("RedactText(%q) = %q; want it unchanged", s, got)
		}
		args, err := json.Marshal(map[string]string{"path": s})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := redact.JSON(args); err != nil || string(got) != string(args) {
			t.Errorf("Redact(%s) = %s, %v; want it unchanged", args, got, err)
		}
	}
	for _, s := range []string{
		"password: hunter2-secret", "db.password=hunter2-secret", "--password=hunter2-secret",
		"GET /login?password=hunter2-secret", `config {"passwd": "hunter2-secret"}`, "x api_key: hunter2-secret",
	} {
		if got := redact.Text(s); strings.Contains(got, "hunter2") {
			t.Errorf("RedactText(%q) = %q; want the secret redacted", s, got)
		}
	}
}
