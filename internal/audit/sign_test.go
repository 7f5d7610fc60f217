package audit_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/internal/audit"
)

// rechain is the forger's short script: it edits a line's JSON with edit,
// then computes every line's prev hash again, and points the signature
// line (if kept) at the new end line's hash, as an editor without the
// signing key can.
func rechain(t *testing.T, file []byte, edit func(n int, l map[string]any)) []byte {
	t.Helper()
	var out bytes.Buffer
	prev := ""
	for n, raw := range strings.Split(strings.TrimSuffix(string(file), "\n"), "\n") {
		var l map[string]any
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatal(err)
		}
		edit(n, l)
		l["prev"] = prev
		if sig, ok := l["signature"].(map[string]any); ok {
			sig["head"] = prev
		}
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		prev = hex.EncodeToString(sum[:])
		out.Write(b)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

func TestSignedExport(t *testing.T) {
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "audit.key")
	pub, err := audit.NewKeyPair(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(keyPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("private key mode = %v, %v; want 0600", fi, err)
	}
	if _, err := audit.NewKeyPair(keyPath); err == nil {
		t.Error("NewKeyPair over an existing key = nil; want it refused")
	}
	priv, err := audit.LoadSigningKey(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := audit.LoadPublicKey(keyPath + ".pub")
	if err != nil || !loaded.Equal(pub) {
		t.Fatalf("LoadPublicKey = %v, %v; want the key pair's public key", loaded, err)
	}
	signed := export(t, &pages{records: records(4), size: 2}, audit.Options{Tenant: "acme", Sign: priv})
	unsigned := export(t, &pages{records: records(4), size: 2}, audit.Options{Tenant: "acme"})

	rep, err := audit.VerifySigned(bytes.NewReader(signed), pub)
	if err != nil || !rep.Verified || rep.Signature.KeyID != audit.KeyID(pub) || rep.Records != 4 || rep.Lines != 7 {
		t.Fatalf("VerifySigned(signed) = %+v, %v; want verified by %s, 4 records in 7 lines", rep, err, audit.KeyID(pub))
	}
	if rep, err := audit.Verify(bytes.NewReader(signed)); err != nil || rep.Verified || rep.Signature == nil {
		t.Errorf("Verify(signed) without a key = %+v, %v; want a consistent chain, signed, not verified", rep, err)
	}
	if rep, err := audit.Verify(bytes.NewReader(unsigned)); err != nil || rep.Signature != nil {
		t.Errorf("Verify(unsigned) = %+v, %v; want a consistent chain without signature", rep, err)
	}
	if _, err := audit.VerifySigned(bytes.NewReader(unsigned), pub); !errors.Is(err, audit.ErrUnsigned) {
		t.Errorf("VerifySigned(unsigned) = %v; want ErrUnsigned", err)
	}

	other := filepath.Join(dir, "other.key")
	otherPub, err := audit.NewKeyPair(other)
	if err != nil {
		t.Fatal(err)
	}
	forged := rechain(t, signed, func(n int, l map[string]any) {
		if n == 1 {
			l["record"].(map[string]any)["arguments"] = map[string]any{"amount": 1}
		}
	})
	if _, err := audit.Verify(bytes.NewReader(forged)); err != nil {
		t.Fatalf("Verify(re-chained) = %v; the chain alone cannot tell", err)
	}
	stripped := rechain(t, signed, func(int, map[string]any) {})
	stripped = stripped[:bytes.LastIndexByte(stripped[:len(stripped)-1], '\n')+1]
	for _, tc := range []struct {
		name string
		file []byte
		pub  []byte
		want string
	}{
		{"an edited, re-chained line", forged, pub, "does not hold"},
		{"the signature line removed", stripped, pub, "not signed"},
		{"another key", signed, otherPub, "not with the given key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := audit.VerifySigned(bytes.NewReader(tc.file), tc.pub)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("VerifySigned = %v; want an error saying %q", err, tc.want)
			}
		})
	}
	if err := os.Chmod(keyPath, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.LoadSigningKey(keyPath); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("LoadSigningKey(0644) = %v; want it refused with chmod 600", err)
	}
}
