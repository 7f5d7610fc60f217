package redact_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger/redact"
)

// secretCase is one entry of the secret corpus: text that holds secrets,
// and the parts of it that must never survive redaction.
type secretCase struct {
	name    string
	text    string
	secrets []string
}

const (
	jwt       = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFubiJ9.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	pemBlock  = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE KEY-----"
	pemSecret = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"
)

// secretCorpus is what mcpledger must never keep or print in clear. The
// keys are made up; their shapes are the providers' own.
var secretCorpus = []secretCase{
	{"note with three secrets", "password=hunter2 api_key=sk-live-4eC39HqLyjWDarjtT1zdp7dc Authorization: Bearer " + jwt,
		[]string{"hunter2", "4eC39HqLyjWDarjtT1zdp7dc", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"}},
	{"dsn with a password", "postgres://u:hunter2dsn@h/db", []string{"hunter2dsn"}},
	{"https credentials", "clone https://ann:gl-s3cr3t-pw@git.example.com/repo.git now", []string{"gl-s3cr3t-pw"}},
	{"bearer header", `curl -H "Authorization: Bearer abc123def456ghi789" https://api`, []string{"abc123def456ghi789"}},
	{"bare bearer", "use bearer 9f8e7d6c5b4a39281706 for the call", []string{"9f8e7d6c5b4a39281706"}},
	{"basic header", "Authorization: Basic YW5uOmh1bnRlcjJiYXNpYw==", []string{"YW5uOmh1bnRlcjJiYXNpYw"}},
	{"bare basic", "sent basic YW5uOmh1bnRlcjJiYXNpYw== upstream", []string{"YW5uOmh1bnRlcjJiYXNpYw"}},
	{"jwt alone", "the token is " + jwt + ".", []string{"SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"}},
	{"openai", "key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", []string{"Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"}},
	{"anthropic", "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-AAAA", []string{"Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"}},
	{"stripe", "charge with sk_live_51H8xQ2Lk9Zp3Rt7Vb", []string{"51H8xQ2Lk9Zp3Rt7Vb"}},
	{"stripe webhook", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", []string{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}},
	{"github classic", "token ghp_16C7e42F292c6912E7710c838347Ae178B4a ok", []string{"16C7e42F292c6912E7710c838347Ae178B4a"}},
	{"github fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ", []string{"11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"}},
	{"gitlab", "glpat-xZ4vB7nM2kL9pQ1wE3rT", []string{"xZ4vB7nM2kL9pQ1wE3rT"}},
	{"slack bot", "xoxb-2048-1234567890-AbCdEfGhIjKlMnOp", []string{"AbCdEfGhIjKlMnOp"}},
	{"slack user", "xoxp-2048-1234567890-QrStUvWxYz", []string{"QrStUvWxYz"}},
	{"slack webhook", "post to https://hooks.slack.com/services/T0001/B0002/XyZ123abc456", []string{"XyZ123abc456"}},
	{"aws access key id", "AKIAIOSFODNN7EXAMPLE", []string{"IOSFODNN7EXAMPLE"}},
	{"aws secret by name", "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", []string{"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}},
	{"google", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", []string{"SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"}},
	{"npm", "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", []string{"a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}},
	{"hugging face", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", []string{"AbCdEfGhIjKlMnOpQrStUvWxYz01234567"}},
	{"sendgrid", "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", []string{"TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr"}},
	{"pem", "key:\n" + pemBlock + "\nend", []string{pemSecret, "BstIs+bMY2Zkp18gnTxK"}},
	{"pem cut off", pemBlock[:120], []string{"MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOE"}},
	{"pairs in free text", "host=db user=ann pwd=Tr0ub4dor db_pass='correct horse' client_secret=\"cs-99\"", []string{"Tr0ub4dor", "correct horse", "cs-99"}},
	{"query string", "https://api.example.com/v1?access_token=at-123456&page=2", []string{"at-123456"}},
	{"azure connection string", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=bXlrZXk9PQ==;EndpointSuffix=core", []string{"bXlrZXk9PQ=="}},
	{"json inside a string", `{"user":"ann","token":"tk-77-secret"}`, []string{"tk-77-secret"}},
	{"cookie header", "Cookie: sessionid=abc123xyz789", []string{"abc123xyz789"}},
	// Shapes the hand-written table let through, found by gitleaks' rules.
	{"digitalocean", "doctl auth init -t dop_v1_3f9a1c7e5b2d8f4a6c0e9b7d1f3a5c7e9b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a now", []string{"3f9a1c7e5b2d8f4a6c0e9b7d1f3a5c7e9b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a"}},
	{"doppler", "DOPPLER dp.pt.Q7wK2mX9vB4nR1sT6yU3iO8pA5dF0gH2jL4zX7cV9bN1m3 set", []string{"Q7wK2mX9vB4nR1sT6yU3iO8pA5dF0gH2jL4zX7cV9bN1m3"}},
	{"shopify", "X-Shopify-Access-Token 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", []string{"9b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a"}},
	{"linear", "linear key lin_api_Q7wK2mX9vB4nR1sT6yU3iO8pA5dF0gH2jL4zX7cV9 here", []string{"Q7wK2mX9vB4nR1sT6yU3iO8pA5dF0gH2jL4zX7cV9"}},
	{"1password", "secret key A3-Q7WK2M-X9VB4NR1STY-6U3IO-8PA5D-F0GH2 for the vault", []string{"Q7WK2M-X9VB4NR1STY-6U3IO-8PA5D-F0GH2"}},
	{"databricks", "DATABRICKS_HOST=x dapi3f9a1c7e5b2d8f4a6c0e9b7d1f3a5c7e ok", []string{"3f9a1c7e5b2d8f4a6c0e9b7d1f3a5c7e"}},
}

// clearText is text that looks close to a secret and must be kept.
var clearText = []string{
	"written by the author of the passage",
	"basic training for new staff",
	"bearer bonds are paper",
	"see https://example.com/path?page=2 and mailto:ann@example.com",
	"amount=5 currency=EUR monkey: banana",
	"task-1234567890abcdefghij is done",
	"the key is in the drawer",
	"Skip the sk- prefix",
}

func TestRedactTextCorpus(t *testing.T) {
	for _, tc := range secretCorpus {
		t.Run(tc.name, func(t *testing.T) {
			got := redact.Text(tc.text)
			for _, s := range tc.secrets {
				if strings.Contains(got, s) {
					t.Errorf("RedactText(%q) = %q; %q is still in it", tc.text, got, s)
				}
			}
			if !strings.Contains(got, redact.Placeholder) {
				t.Errorf("RedactText(%q) = %q; want %s in it", tc.text, got, redact.Placeholder)
			}
			if again := redact.Text(got); again != got {
				t.Errorf("RedactText(%q) = %q; a second pass changed it again", got, again)
			}
		})
	}
}

func TestRedactTextKeepsClearText(t *testing.T) {
	for _, s := range clearText {
		if got := redact.Text(s); got != s {
			t.Errorf("RedactText(%q) = %q; want it unchanged", s, got)
		}
	}
}

func TestRedactTextKeepsContext(t *testing.T) {
	cases := map[string]string{
		"password=hunter2 user=ann":      "password=[REDACTED] user=ann",
		"postgres://u:hunter2dsn@h/db":   "postgres://u:[REDACTED]@h/db",
		"Authorization: Bearer abc12345": "Authorization: [REDACTED]",
		`{"token":"tk-1"}`:               `{"token":"[REDACTED]"}`,
		"AKIAIOSFODNN7EXAMPLE, in us-1":  "[REDACTED], in us-1",
	}
	for in, want := range cases {
		if got := redact.Text(in); got != want {
			t.Errorf("RedactText(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestRedactFindsValues(t *testing.T) {
	for _, tc := range secretCorpus {
		t.Run(tc.name, func(t *testing.T) {
			args, err := json.Marshal(map[string]any{"note": tc.text, "list": []any{tc.text, 1}, "deep": map[string]any{"x": tc.text}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := redact.JSON(args)
			if err != nil {
				t.Fatalf("Redact(%s) = %v", args, err)
			}
			for _, s := range tc.secrets {
				// Redact writes JSON: compare with the secret as JSON spells it.
				js, _ := json.Marshal(s)
				if strings.Contains(string(got), strings.Trim(string(js), `"`)) {
					t.Errorf("Redact(%s) = %s; %q is still in it", args, got, s)
				}
			}
		})
	}
}

func TestIsSecretNameMoreNames(t *testing.T) {
	for name, want := range map[string]bool{
		"pass": true, "db_pass": true, "dbPass": true, "DBPass": true, "PASS": true, "pwd": true,
		"userPwd": true, "auth": true, "authKey": true, "x-auth": true, "bearer": true, "dsn": true,
		"database_dsn": true, "secretKey": true, "secret_name": true, "refreshToken": true,
		"x_token_value": true, "credentials": true, "AWS_CREDENTIAL_FILE": true, "Cookie": true,
		"jwt": true, "passphrase": true, "AccountKey": true, "aws_secret_access_key": true,
		"author": false, "authority": false, "passage": false, "compass": false, "bypass_cache": false,
		"dsnx": false, "keyboard": false, "monkey": false, "to": false,
	} {
		if got := redact.IsSecretName(name); got != want {
			t.Errorf("IsSecretName(%q) = %v; want %v", name, got, want)
		}
	}
}

func TestRedactorExtra(t *testing.T) {
	r := &redact.Redactor{
		Names:    []string{"card_number", "*ssn*"},
		Patterns: []*regexp.Regexp{regexp.MustCompile(`\bacct-(\d{6})\b`), regexp.MustCompile(`\bINTERNAL-[A-Z]{4}\b`)},
	}
	in := json.RawMessage(`{"CardNumber":"4242","customer_ssn_last4":"1234","memo":"acct-123456 INTERNAL-ABCD","to":"bob"}`)
	got, err := r.JSON(in)
	if err != nil {
		t.Fatalf("Redact(%s) = %v", in, err)
	}
	want := `{"CardNumber":"[REDACTED]","customer_ssn_last4":"[REDACTED]","memo":"acct-[REDACTED] [REDACTED]","to":"bob"}`
	if !jsonEqual(t, got, want) {
		t.Fatalf("Redact(%s) = %s; want %s", in, got, want)
	}
	// The package functions know nothing of these names.
	if redact.IsSecretName("card_number") {
		t.Errorf("IsSecretName(card_number) = true; want false without the Redactor")
	}
	if got := r.Text("ref acct-654321"); got != "ref acct-[REDACTED]" {
		t.Errorf("RedactText(ref acct-654321) = %q; want the group replaced", got)
	}
	var nilR *redact.Redactor
	if got, err := nilR.JSON(json.RawMessage(`{"pwd":"x"}`)); err != nil || string(got) != `{"pwd":"[REDACTED]"}` {
		t.Errorf("nil Redactor Redact = %s, %v; want the built-in rules", got, err)
	}
}

func jsonEqual(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("not JSON: %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return string(gb) == string(wb)
}

func BenchmarkRedactText(b *testing.B) {
	text := "order 42 for ann, ship by friday; " + secretCorpus[0].text
	b.ReportAllocs()
	for b.Loop() {
		redact.Text(text)
	}
}

// BenchmarkRedactClean is the common case: arguments with nothing secret.
func BenchmarkRedactClean(b *testing.B) {
	args := json.RawMessage(`{"customer":"cus_123","amount":4200,"currency":"EUR","lines":[{"sku":"A-1","qty":2}],"note":"München order"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := redact.JSON(args); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzRedactText plants each corpus entry in arbitrary text: whatever
// surrounds it, none of its secrets may survive, in text or in arguments.
func FuzzRedactText(f *testing.F) {
	f.Add("", "", uint8(0))
	f.Add("monkey=", "", uint8(0))
	f.Add("Authorization:", "&x=1", uint8(3))
	f.Add(`{"token":"`, `"}`, uint8(7))
	f.Add("https://u:", "@host", uint8(1))
	f.Add("bearer", "basic", uint8(5))
	f.Add("-----BEGIN", "-----END", uint8(24))
	f.Fuzz(func(t *testing.T, prefix, suffix string, i uint8) {
		tc := secretCorpus[int(i)%len(secretCorpus)]
		text := prefix + " " + tc.text + " " + suffix
		got := redact.Text(text)
		for _, s := range tc.secrets {
			if strings.Contains(got, s) && !strings.Contains(prefix+suffix, s) {
				t.Fatalf("RedactText(%q) = %q; %q survived", text, got, s)
			}
		}
		args, err := json.Marshal(map[string]string{"note": text})
		if err != nil {
			return // invalid UTF-8 is replaced by json.Marshal; nothing to check
		}
		red, err := redact.JSON(args)
		if err != nil {
			t.Fatalf("Redact(%s) = %v", args, err)
		}
		var back map[string]string
		if err := json.Unmarshal(red, &back); err != nil {
			t.Fatalf("Redact(%s) = %s, not JSON: %v", args, red, err)
		}
		if back["note"] != redact.Text(text) && strings.ToValidUTF8(text, "\uFFFD") == text {
			t.Fatalf("Redact(%s) note = %q; RedactText gives %q", args, back["note"], got)
		}
	})
}

// BenchmarkRedactTextLinear: text built to make a pattern search start
// over at every position (a pair whose name is not secret, an unclosed
// quote, a scheme with no credentials) still takes time in proportion to
// its length. Each unit runs at 16 KiB and at 64 KiB; linear means the two
// show about the same MB/s, where a quadratic search shows a quarter at
// 64 KiB (one took over a minute on 100 KB of "key="):
//
//	go test -run '^$' -bench RedactTextLinear ./ledger/
//
// It is a benchmark, not a test, because only a time tells it, and a time
// taken on a shared machine says as much about the machine.
func BenchmarkRedactTextLinear(b *testing.B) {
	redact.Text("key=") // the rule tables are built on first use, not in a sub-benchmark
	for _, u := range []struct{ name, unit string }{
		{"pair", "key="}, {"unclosed-quote", "pwd='"}, {"bearer", "bearer "}, {"basic", "basic QUJD "},
		{"pem", "-----BEGIN PRIVATE KEY-----"}, {"scheme", "a://"}, {"colon", "a:"},
		{"plain-pair", "monkey: banana "}, {"sk-prefix", "sk-"},
	} {
		for _, size := range []int{16 << 10, 64 << 10} {
			text := strings.Repeat(u.unit, size/len(u.unit))
			b.Run(fmt.Sprintf("%s/%dKiB", u.name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					redact.Text(text)
				}
			})
		}
	}
}
