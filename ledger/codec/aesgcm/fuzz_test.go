package aesgcm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger/codec"
	"github.com/mcpledger/mcpledger/ledger/codec/aesgcm"
)

// FuzzParseKeyFile: any file either gives a keyring whose keys seal and
// open, or a one-line error.
func FuzzParseKeyFile(f *testing.F) {
	f.Add("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n")
	f.Add("# c\n\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8= note\n\tAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHhA=\told")
	f.Add("not a key")
	f.Add("AAECAwQFBgcICQoLDA0ODw==")
	f.Fuzz(func(t *testing.T, file string) {
		k, err := aesgcm.ParseKeyFile([]byte(file))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("ParseKeyFile error %q is more than one line", err)
			}
			return
		}
		s, err := k.Encode(context.Background(), rec, codec.FieldArguments, []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := k.Decode(context.Background(), rec, codec.FieldArguments, s); err != nil || string(got) != `{}` {
			t.Fatalf("Decode(Encode({})) = %s, %v", got, err)
		}
	})
}

// FuzzSealedOf: stored bytes of any shape never panic the reader, and a
// payload not in the envelope's exact prefix is plain.
func FuzzSealedOf(f *testing.F) {
	f.Add([]byte(`{"mcpledger/encrypted":1,"alg":"A256GCM","kid":"ab","data":"AAAA"}`))
	f.Add([]byte(`{"to":"bob"}`))
	f.Add([]byte(`{"mcpledger/encrypted":`))
	f.Fuzz(func(t *testing.T, stored []byte) {
		_, ok, err := codec.SealedOf(stored)
		if ok != codec.IsEncrypted(stored) {
			t.Fatalf("SealedOf(%q) sealed %v; IsEncrypted says %v", stored, ok, !ok)
		}
		if !ok && err != nil {
			t.Fatalf("SealedOf(%q) = plain with error %v", stored, err)
		}
	})
}
