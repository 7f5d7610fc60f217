package aesgcm_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/codec"
	"github.com/mcpledger/mcpledger/ledger/codec/aesgcm"
)

func newKey(t testing.TB) []byte {
	t.Helper()
	k := make([]byte, aesgcm.KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func keyring(t testing.TB, keys ...[]byte) *aesgcm.Keyring {
	t.Helper()
	k, err := aesgcm.New(keys...)
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	return k
}

var rec = ledger.ID{Tenant: "acme", Tool: "pay", Key: "order-1"}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	k := keyring(t, newKey(t))
	for _, plain := range [][]byte{[]byte(`{"amount":1.50,"to":"bob"}`), []byte(`{}`), bytes.Repeat([]byte("x"), 1<<20)} {
		s, err := k.Encode(ctx, rec, codec.FieldResult, plain)
		if err != nil {
			t.Fatalf("Encode = %v", err)
		}
		if s.Alg != aesgcm.Alg || s.KeyID != k.CurrentKeyID() {
			t.Errorf("Encode = alg %q kid %q; want %q %q", s.Alg, s.KeyID, aesgcm.Alg, k.CurrentKeyID())
		}
		if bytes.Contains(s.Data, plain[:min(len(plain), 16)]) {
			t.Errorf("Encode(%.20s) holds the plain bytes", plain)
		}
		got, err := k.Decode(ctx, rec, codec.FieldResult, s)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("Decode(Encode(%.20s)) = %.20s, %v; want the same bytes", plain, got, err)
		}
		again, err := k.Encode(ctx, rec, codec.FieldResult, plain)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(again.Data, s.Data) {
			t.Errorf("Encode twice gave the same bytes; want a fresh nonce each time")
		}
	}
}

func TestBoundToRecordAndField(t *testing.T) {
	ctx := context.Background()
	k := keyring(t, newKey(t))
	s, err := k.Encode(ctx, rec, codec.FieldResult, []byte(`{"ok":true}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		id    ledger.ID
		field string
	}{
		"other field":  {rec, codec.FieldArguments},
		"other key":    {ledger.ID{Tenant: "acme", Tool: "pay", Key: "order-2"}, codec.FieldResult},
		"other tenant": {ledger.ID{Tenant: "evil", Tool: "pay", Key: "order-1"}, codec.FieldResult},
		"other tool":   {ledger.ID{Tenant: "acme", Tool: "refund", Key: "order-1"}, codec.FieldResult},
	} {
		if got, err := k.Decode(ctx, tc.id, tc.field, s); !errors.Is(err, aesgcm.ErrWrongKey) {
			t.Errorf("%s: Decode = %s, %v; want ErrWrongKey", name, got, err)
		}
	}
	tampered := s
	tampered.Data = append([]byte(nil), s.Data...)
	tampered.Data[len(tampered.Data)-1] ^= 1
	if _, err := k.Decode(ctx, rec, codec.FieldResult, tampered); !errors.Is(err, aesgcm.ErrWrongKey) {
		t.Errorf("Decode(tampered) = %v; want ErrWrongKey", err)
	}
	short := s
	short.Data = s.Data[:5]
	if _, err := k.Decode(ctx, rec, codec.FieldResult, short); !errors.Is(err, aesgcm.ErrWrongKey) {
		t.Errorf("Decode(short) = %v; want ErrWrongKey", err)
	}
}

func TestKeyringRotation(t *testing.T) {
	ctx := context.Background()
	oldKey, newK := newKey(t), newKey(t)
	old := keyring(t, oldKey)
	s, err := old.Encode(ctx, rec, codec.FieldArguments, []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	both := keyring(t, newK, oldKey)
	if both.CurrentKeyID() != aesgcm.KeyID(newK) || both.CurrentKeyID() == old.CurrentKeyID() {
		t.Fatalf("CurrentKeyID = %s; want the first key's id %s", both.CurrentKeyID(), aesgcm.KeyID(newK))
	}
	if got, err := both.Decode(ctx, rec, codec.FieldArguments, s); err != nil || string(got) != `{"a":1}` {
		t.Fatalf("Decode with [new, old] = %s, %v; want the old key to open it", got, err)
	}
	onlyNew := keyring(t, newK)
	_, err = onlyNew.Decode(ctx, rec, codec.FieldArguments, s)
	if !errors.Is(err, codec.ErrNoKey) || !strings.Contains(err.Error(), s.KeyID) {
		t.Fatalf("Decode without the old key = %v; want ErrNoKey naming key id %s", err, s.KeyID)
	}
}

func TestNewRejects(t *testing.T) {
	k := newKey(t)
	for name, keys := range map[string][][]byte{
		"none":      nil,
		"short":     {k[:16]},
		"long":      {append(append([]byte(nil), k...), 1)},
		"duplicate": {k, k},
	} {
		if _, err := aesgcm.New(keys...); err == nil {
			t.Errorf("New(%s) = nil error; want one", name)
		}
	}
}

func TestParseKeyFile(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	b1, b2 := base64.StdEncoding.EncodeToString(k1), base64.StdEncoding.EncodeToString(k2)
	file := "# ledger keys\n\n" + b1 + "  2026-12\n\t" + b2 + "\told, until rekeyed\n"
	k, err := aesgcm.ParseKeyFile([]byte(file))
	if err != nil {
		t.Fatalf("ParseKeyFile = %v", err)
	}
	if ids := k.KeyIDs(); len(ids) != 2 || ids[0] != aesgcm.KeyID(k1) || ids[1] != aesgcm.KeyID(k2) {
		t.Fatalf("KeyIDs = %v; want [%s %s]", ids, aesgcm.KeyID(k1), aesgcm.KeyID(k2))
	}
	for name, tc := range map[string]struct{ file, want string }{
		"empty":      {"# nothing\n\n", "holds no key"},
		"not base64": {b1 + "\nnot-a-key!\n", "line 2 is not a base64 key"},
		"short key":  {base64.StdEncoding.EncodeToString(k1[:16]) + "\n", "line 1 holds 16 bytes"},
		"duplicate":  {b1 + "\n" + b1 + "\n", "given twice"},
	} {
		_, err := aesgcm.ParseKeyFile([]byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ParseKeyFile = %v; want an error saying %q", name, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), b1) || strings.Contains(err.Error(), b1[:12]) {
			t.Errorf("%s: ParseKeyFile error %q shows the key", name, err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: ParseKeyFile error %q is more than one line", name, err)
		}
	}
	if _, err := aesgcm.LoadKeyFile(t.TempDir() + "/missing.keys"); err == nil || !strings.Contains(err.Error(), "cannot read the key file") {
		t.Errorf("LoadKeyFile(missing) = %v; want a clear error", err)
	}
}
