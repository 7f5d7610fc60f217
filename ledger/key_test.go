package ledger_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
)

func TestValidateKey(t *testing.T) {
	cases := []struct {
		name    string
		key     string
		wantErr bool
		// mention is a fragment the error must contain (the offending byte
		// or the reason), so a user can see what to fix.
		mention string
	}{
		{name: "empty", key: "", wantErr: true, mention: "empty key"},
		{name: "one byte", key: "a"},
		{name: "255 bytes", key: strings.Repeat("k", 255)},
		{name: "256 bytes", key: strings.Repeat("k", 256), wantErr: true, mention: "256 bytes"},
		{name: "letters and digits", key: "AZaz09"},
		{name: "dot", key: "order.42"},
		{name: "underscore", key: "order_42"},
		{name: "colon", key: "order:42"},
		{name: "tilde", key: "order~42"},
		{name: "hyphen", key: "order-42"},
		{name: "only punctuation", key: "._:~-"},
		{name: "derived shape", key: "k1.0123456789abcdef0123456789abcdef"},
		{name: "space", key: "order 42", wantErr: true, mention: "byte 0x20 at offset 5"},
		{name: "slash", key: "a/b", wantErr: true, mention: "byte 0x2f at offset 1"},
		{name: "nul", key: "a\x00", wantErr: true, mention: "byte 0x00 at offset 1"},
		{name: "newline", key: "\nabc", wantErr: true, mention: "byte 0x0a at offset 0"},
		{name: "plus", key: "a+b", wantErr: true, mention: "byte 0x2b"},
		{name: "equals", key: "a=b", wantErr: true, mention: "byte 0x3d"},
		{name: "percent", key: "a%20", wantErr: true, mention: "byte 0x25"},
		{name: "at sign", key: "me@host", wantErr: true, mention: "byte 0x40"},
		{name: "DEL", key: "a\x7f", wantErr: true, mention: "byte 0x7f"},
		{name: "UTF-8 e acute", key: "caf\u00e9", wantErr: true, mention: "byte 0xc3 at offset 3"},
		{name: "UTF-8 emoji", key: "\U0001F600", wantErr: true, mention: "byte 0xf0 at offset 0"},
		{name: "invalid UTF-8", key: "a\xff", wantErr: true, mention: "byte 0xff at offset 1"},
		{name: "bad byte past limit wins length", key: strings.Repeat("k", 256) + " ", wantErr: true, mention: "257 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ledger.ValidateKey(tc.key)
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("ValidateKey(%q) = %v; want nil", tc.key, err)
				}
				return
			}
			if !errors.Is(err, ledger.ErrInvalidKey) {
				t.Fatalf("ValidateKey(%q) = %v; want an error wrapping ErrInvalidKey", tc.key, err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("ValidateKey(%q) = %q; want it to mention %q", tc.key, err, tc.mention)
			}
			if !strings.HasPrefix(err.Error(), "ledger: ") {
				t.Errorf("ValidateKey(%q) = %q; want the package prefix", tc.key, err)
			}
		})
	}
}

func TestValidateTenant(t *testing.T) {
	cases := []struct {
		name    string
		tenant  string
		wantErr bool
		mention string
	}{
		{name: "empty", tenant: "", wantErr: true, mention: "empty tenant"},
		{name: "plain", tenant: "acme"},
		{name: "punctuation", tenant: "acme.eu-west_1:prod~a"},
		{name: "255 bytes", tenant: strings.Repeat("t", 255)},
		{name: "256 bytes", tenant: strings.Repeat("t", 256), wantErr: true, mention: "256 bytes"},
		{name: "slash", tenant: "acme/eu", wantErr: true, mention: "byte 0x2f at offset 4 of the tenant"},
		{name: "space", tenant: " acme", wantErr: true, mention: "byte 0x20 at offset 0"},
		{name: "UTF-8", tenant: "\u00e4cme", wantErr: true, mention: "byte 0xc3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ledger.ValidateTenant(tc.tenant)
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("ValidateTenant(%q) = %v; want nil", tc.tenant, err)
				}
				return
			}
			if !errors.Is(err, ledger.ErrInvalidTenant) {
				t.Fatalf("ValidateTenant(%q) = %v; want an error wrapping ErrInvalidTenant", tc.tenant, err)
			}
			if errors.Is(err, ledger.ErrInvalidKey) {
				t.Errorf("ValidateTenant(%q) = %v; must not wrap ErrInvalidKey", tc.tenant, err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("ValidateTenant(%q) = %q; want it to mention %q", tc.tenant, err, tc.mention)
			}
		})
	}
}

func TestIDValidate(t *testing.T) {
	cases := []struct {
		name string
		id   ledger.ID
		want error // nil, or the sentinel the error wraps
	}{
		{name: "valid", id: ledger.ID{Tenant: "acme", Tool: "create_order", Key: "o-1"}},
		{name: "bad tenant", id: ledger.ID{Tenant: "a b", Tool: "t", Key: "k"}, want: ledger.ErrInvalidTenant},
		{name: "bad key", id: ledger.ID{Tenant: "acme", Tool: "t", Key: "k/1"}, want: ledger.ErrInvalidKey},
		{name: "empty key", id: ledger.ID{Tenant: "acme", Tool: "t"}, want: ledger.ErrInvalidKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.id.Validate()
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("%+v.Validate() = %v; want %v", tc.id, err, tc.want)
			}
		})
	}
	t.Run("empty tool", func(t *testing.T) {
		id := ledger.ID{Tenant: "acme", Key: "k"}
		err := id.Validate()
		if err == nil || !strings.Contains(err.Error(), "tool") {
			t.Fatalf("%+v.Validate() = %v; want an error naming the tool", id, err)
		}
	})
}

// keyPattern restates the key rule independently of the validator.
var keyPattern = regexp.MustCompile(`^[A-Za-z0-9._:~-]{1,255}$`)

func FuzzKey(f *testing.F) {
	for _, seed := range []string{
		"", "a", "order-42", "k1.abc", "a b", "a/b", "\x00", "caf\u00e9", "\xff",
		strings.Repeat("x", 255), strings.Repeat("x", 256), "._:~-", "a\nb",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := ledger.ValidateKey(key)
		want := keyPattern.MatchString(key)
		if (err == nil) != want {
			t.Fatalf("ValidateKey(%q) = %v; pattern match is %v", key, err, want)
		}
		if err != nil && !errors.Is(err, ledger.ErrInvalidKey) {
			t.Fatalf("ValidateKey(%q) = %v; want an error wrapping ErrInvalidKey", key, err)
		}
		// The tenant rule is the same rule.
		if terr := ledger.ValidateTenant(key); (terr == nil) != want {
			t.Fatalf("ValidateTenant(%q) = %v; pattern match is %v", key, terr, want)
		}
		if err == nil || len(key) == 0 || len(key) > ledger.MaxKeyLen {
			return
		}
		// The message names the first offending byte.
		i := 0
		for ; i < len(key); i++ {
			if !keyPattern.MatchString(key[i : i+1]) {
				break
			}
		}
		if want := fmt.Sprintf("byte 0x%02x at offset %d", key[i], i); !strings.Contains(err.Error(), want) {
			t.Fatalf("ValidateKey(%q) = %q; want it to name %q", key, err, want)
		}
	})
}

func TestDeriveKey(t *testing.T) {
	base := ledger.DeriveKey("chain-1", "create_order", "fp")
	if again := ledger.DeriveKey("chain-1", "create_order", "fp"); again != base {
		t.Fatalf("DeriveKey twice = %q, %q; want equal", base, again)
	}
	if err := ledger.ValidateKey(base); err != nil {
		t.Fatalf("ValidateKey(DeriveKey(...)) = %v; want nil", err)
	}
	cases := []struct {
		name                string
		chain, tool, finger string
	}{
		{name: "other chain", chain: "chain-2", tool: "create_order", finger: "fp"},
		{name: "other tool", chain: "chain-1", tool: "create_orders", finger: "fp"},
		{name: "other fingerprint", chain: "chain-1", tool: "create_order", finger: "fq"},
		{name: "shifted boundary chain/tool", chain: "chain-1c", tool: "reate_order", finger: "fp"},
		{name: "shifted boundary tool/fingerprint", chain: "chain-1", tool: "create_orderf", finger: "p"},
		{name: "empty chain", chain: "", tool: "create_order", finger: "fp"},
		{name: "unicode chain", chain: "chain-\u00e9", tool: "create_order", finger: "fp"},
		{name: "secret-looking chain", chain: "user@example.com password=hunter2", tool: "create_order", finger: "fp"},
	}
	seen := map[string]string{base: "base"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ledger.DeriveKey(tc.chain, tc.tool, tc.finger)
			if err := ledger.ValidateKey(got); err != nil {
				t.Fatalf("ValidateKey(DeriveKey(%q, %q, %q)) = %v; want nil", tc.chain, tc.tool, tc.finger, err)
			}
			if prev, dup := seen[got]; dup {
				t.Fatalf("DeriveKey(%q, %q, %q) = %q; same as %s", tc.chain, tc.tool, tc.finger, got, prev)
			}
			seen[got] = tc.name
			for _, part := range []string{tc.chain, tc.tool, "hunter2"} {
				if len(part) > 3 && strings.Contains(got, part) {
					t.Errorf("DeriveKey(...) = %q; reveals input %q", got, part)
				}
			}
		})
	}
}

func TestShortHash(t *testing.T) {
	a, b := ledger.ShortHash("order-42"), ledger.ShortHash("order-43")
	if len(a) != 12 || a == b || strings.Contains(a, "order") {
		t.Fatalf("ShortHash(order-42), ShortHash(order-43) = %q, %q; want two distinct 12-digit hashes", a, b)
	}
	if again := ledger.ShortHash("order-42"); again != a {
		t.Fatalf("ShortHash(order-42) = %q then %q; want stable", a, again)
	}
}
